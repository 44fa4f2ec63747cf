//! Property test: any request a server could have captured replays byte-exact through the
//! generated command, run with bash (and zsh when installed) against a raw listener.
//!
//! Cases default to 64 (each runs real shells and curl); set `PROPTEST_CASES` to run more.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::replay_support::{Aim, roundtrip, shells, stored};
use hookbin::model::{HeaderPair, StoredRequest};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const INJECTIONS: &[&str] = &[
    "'; touch pwned; '",
    "$(touch pwned)",
    "`touch pwned`",
    "\\",
    "%s%b%%\\0101",
    "!!",
    "'\"'\"",
];

/// Bytes valid in a request-target besides the percent-escapes generated separately.
const PATH_CHARS: &str = "abcXYZ019-._~!$&'()*+,;=:@[]{}|^\"<>\\`";

fn method() -> impl Strategy<Value = String> {
    let known = vec![
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "PURGE",
    ];
    prop_oneof![
        4 => select(known).prop_map(String::from),
        1 => "[a-z][a-z0-9!#$%&'*+.^_`|~-]{0,8}",
    ]
}

fn url_piece(extra: &'static str) -> impl Strategy<Value = String> {
    let chars: Vec<char> = PATH_CHARS.chars().chain(extra.chars()).collect();
    prop::collection::vec(
        prop_oneof![
            8 => select(chars).prop_map(String::from),
            2 => any::<u8>().prop_map(|b| format!("%{b:02X}")),
            1 => select(vec!["..", ".", "%zz", "#", "é", "%e2%9c%93"]).prop_map(String::from),
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
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

/// A field value as a parser hands it over: VCHAR, obs-text, inner SP/HTAB, no outer whitespace.
fn header_value() -> impl Strategy<Value = Vec<u8>> {
    let byte =
        prop_oneof![6 => 0x21u8..=0x7e, 2 => 0x80u8..=0xff, 1 => Just(b' '), 1 => Just(b'\t')];
    prop_oneof![
        4 => prop::collection::vec(byte, 0..24).prop_map(|v| {
            let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
            let start = v.iter().position(|b| !is_ws(b)).unwrap_or(v.len());
            let end = v.iter().rposition(|b| !is_ws(b)).map_or(start, |i| i + 1);
            v[start..end].to_vec()
        }),
        1 => select(INJECTIONS).prop_map(|s| s.as_bytes().to_vec()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let text_chars = vec![
        'a', 'Z', '0', ' ', '\n', '\t', '\'', '"', '$', '`', '\\', '!', '%', 'é', '✓', '@', '{',
        '#',
    ];
    prop_oneof![
        2 => Just(Vec::new()),
        3 => prop::collection::vec(any::<u8>(), 0..200),
        3 => prop::collection::vec(select(text_chars), 0..100)
            .prop_map(|cs| cs.into_iter().collect::<String>().into_bytes()),
        1 => select(INJECTIONS).prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(
            prop_oneof![Just(0u8), Just(b'\r'), Just(b'\n'), any::<u8>()],
            0..50,
        ),
    ]
}

fn request() -> impl Strategy<Value = StoredRequest> {
    (
        method(),
        subpath(),
        query(),
        prop::collection::vec((header_name(), header_value()), 0..8),
        body(),
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
