//! Property tests: any request a server could have captured replays byte-exact through the
//! generated command, run with bash (and zsh when installed), first against a raw listener
//! (the renderer alone), then end to end through hookbin's `/curl` endpoint.
//!
//! Cases default to 64 (each runs real shells and curl); set `PROPTEST_CASES` to run more.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::replay_support::{
    self, Aim, exact_headers, framed, header_value, preview, raw_request, replayed_headers,
    roundtrip, run, shells, show_headers, stored,
};
use crate::util::{Server, b64};
use hookbin::model::{HeaderPair, StoredRequest};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Bytes valid in a request-target besides the percent-escapes generated separately.
const PATH_CHARS: &str = "abcXYZ019-._~!$&'()*+,;=:@[]{}|^\"<>\\`";

fn url_piece(extra: &'static str) -> impl Strategy<Value = String> {
    replay_support::url_piece(
        PATH_CHARS,
        extra,
        vec!["..", ".", "%zz", "#", "é", "%e2%9c%93"],
    )
}

fn subpath() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        4 => prop::collection::vec(url_piece(""), 1..4)
            .prop_map(|segs| segs.iter().map(|s| format!("/{s}")).collect()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 3 => url_piece("/?")]
}

fn header_name() -> impl Strategy<Value = String> {
    let known = vec![
        "User-Agent",
        "Accept",
        "Content-Type",
        "content-type",
        "X-Dup",
        "Cookie",
        "Authorization",
        "Host",
        "Connection",
        "Keep-Alive",
        "TE",
        "Upgrade",
        "Transfer-Encoding",
        "Content-Length",
    ];
    prop_oneof![
        2 => select(known).prop_map(String::from),
        3 => "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}",
    ]
}

fn request() -> impl Strategy<Value = StoredRequest> {
    (
        replay_support::method(),
        subpath(),
        query(),
        prop::collection::vec((header_name(), header_value()), 0..8),
        replay_support::body(200),
        any::<bool>(),
        any::<Index>(),
        prop_oneof![9 => Just("HTTP/1.1"), 1 => Just("HTTP/1.0")],
    )
        .prop_map(
            |(method, subpath, query, headers, body, framed, at, version)| {
                let mut headers: Vec<HeaderPair> = headers
                    .into_iter()
                    .map(|(n, v)| HeaderPair::new(n, v))
                    .collect();
                // A captured body always came with framing; an empty one sometimes did.
                if framed || !body.is_empty() {
                    let cl = HeaderPair::new("Content-Length", body.len().to_string());
                    headers.insert(at.index(headers.len() + 1), cl);
                }
                stored(&method, &subpath, &query, headers, body, version)
            },
        )
}

fn aim() -> impl Strategy<Value = Aim> {
    select(vec![
        Aim::Base,
        Aim::Target(""),
        Aim::Target("/hooks"),
        Aim::Target("/a/b/"),
    ])
}

#[test]
fn generated_requests_roundtrip_byte_exact() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let shells = shells();
    let ran = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(request(), aim()), |(req, aim)| {
        ran.fetch_add(1, Ordering::Relaxed);
        for shell in &shells {
            roundtrip(&req, aim, shell)
                .map_err(|e| TestCaseError::fail(format!("{shell:?} {aim:?}: {e}")))?;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!(
        "curl round-trip property: {cases} cases passed ({} runs incl. shrinking) with {shells:?}",
        ran.load(Ordering::Relaxed)
    );
}

/// Through the real server: a generated request is captured (A), its `/curl` command aimed at
/// a second bin on the same server is run with bash and zsh, and that capture (B) must equal A
/// byte for byte: method, subpath, query, version, every header line but the ones a replay
/// drops or curl sets (Host, Content-Length, hop-by-hop), and the body. Each command runs in an
/// empty directory that must stay empty: nothing but curl ran.
#[test]
fn captured_requests_replay_byte_exact_through_the_curl_endpoint() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    // A HEAD that carried a body is replayed with `-X HEAD`, and curl then reads the response
    // until the server closes the idle connection (see render::curl, "Method"): close it soon.
    let server = Server::start(&["--header-timeout", "1s"]);
    // Empty answers: curl reads no body it does not need.
    let empty = r#"{"response": {"status": 200, "headers": [], "body": ""}}"#;
    let bin_a = server.create_bin_with(empty)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bin_b = server.create_bin_with(empty)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let target = format!("http://{}/r/{bin_b}", server.addr);
    let shells = shells();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&raw_request(), |raw| {
        let id = raw.send(&server, &bin_a);
        let a = server.stored(&bin_a, &id);
        let res = server.get(&format!(
            "/api/bins/{bin_a}/requests/{id}/curl?target={}",
            percent(&target)
        ));
        prop_assert_eq!(res.status, 200, "{}", res.text());
        let mut command = res.text();
        prop_assert!(command.ends_with('\n'));
        command.pop();
        for shell in &shells {
            let before = newest(&server, &bin_b);
            let dir = tempfile::tempdir().unwrap();
            let out = run(shell, &command, dir.path());
            prop_assert!(
                out.status.success(),
                "{shell:?}: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                preview(&command)
            );
            let created: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            prop_assert!(created.is_empty(), "{shell:?} created files: {created:?}");
            let b_id = newest(&server, &bin_b);
            prop_assert_ne!(&b_id, &before, "{:?}: nothing arrived", shell);
            let b = server.stored(&bin_b, b_id.as_deref().unwrap());
            same_request(&a, &b).map_err(|e| {
                TestCaseError::fail(format!("{shell:?}: {e}\n{}", preview(&command)))
            })?;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("curl endpoint property: {cases} cases passed with {shells:?}");
}

/// The newest request id of the bin, if any.
fn newest(server: &Server, bin: &str) -> Option<String> {
    let res = server.get(&format!("/api/bins/{bin}/requests?limit=1"));
    res.json()["data"][0]["id"].as_str().map(str::to_owned)
}

/// Percent-encodes everything but unreserved characters (for a query value).
pub fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A (the original capture) and B (its replay, captured by the same server) are the same request.
fn same_request(a: &Value, b: &Value) -> Result<(), String> {
    for key in ["method", "subpath", "query", "http_version", "body_base64"] {
        if a[key] != b[key] {
            return Err(format!("{key} differs: {} vs {}", a[key], b[key]));
        }
    }
    let (ha, hb) = (exact_headers(a), exact_headers(b));
    if replayed_headers(&ha) != replayed_headers(&hb) {
        return Err(format!(
            "headers differ\noriginal: {}\nreplayed: {}",
            show_headers(&ha),
            show_headers(&hb)
        ));
    }
    let body = b64(a["body_base64"].as_str().unwrap());
    let b_length = hb
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.clone());
    if framed(&ha, &body) != b_length.is_some() {
        return Err(format!(
            "framing: original framed={}, replay Content-Length {b_length:?}",
            framed(&ha, &body)
        ));
    }
    Ok(())
}
