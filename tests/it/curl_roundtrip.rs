//! Copy-as-curl, for real: generated commands are run with bash (and zsh when installed) against
//! a raw listener, and what arrives is compared byte for byte with the captured request.

use crate::replay_support::{
    Aim, BASH, OneShot, ZSH, noise, roundtrip, run, shells, stored, zsh_available,
};
use crate::util::Hangup;
use hookbin::model::HeaderPair;
use hookbin::render::{CurlError, curl_command};

fn h(name: &str, value: &[u8]) -> HeaderPair {
    HeaderPair::new(name, value.to_vec())
}

fn assert_roundtrips(req: &hookbin::model::StoredRequest) {
    for shell in shells() {
        for aim in [Aim::Base, Aim::Target(""), Aim::Target("/webhooks/in/")] {
            if let Err(e) = roundtrip(req, aim, shell) {
                panic!("{shell:?} {aim:?} {} {}: {e}", req.method, req.path);
            }
        }
    }
}

#[test]
fn signed_json_post() {
    let body = br#"{"id":"evt_1","data":{"note":"it's $HOME `id` \\ 100% !"}}"#.to_vec();
    assert_roundtrips(&stored(
        "POST",
        "/stripe",
        "",
        vec![
            h("Host", b"hooks.example"),
            h(
                "User-Agent",
                b"Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            ),
            h("Content-Type", b"application/json; charset=utf-8"),
            h("Content-Length", body.len().to_string().as_bytes()),
            h(
                "Stripe-Signature",
                b"t=1492774577,v1=5257a869e7,v0=6ffbb59b2300aa",
            ),
            h("Accept", b"*/*; q=0.5, application/xml"),
            h("Connection", b"close"),
        ],
        body,
        "HTTP/1.1",
    ));
}

#[test]
fn get_head_and_odd_methods() {
    for method in [
        "GET",
        "HEAD",
        "OPTIONS",
        "DELETE",
        "PROPFIND",
        "PURGE",
        "get",
        "M!#$%&'*+.^_`|~",
    ] {
        assert_roundtrips(&stored(
            method,
            "/a/b",
            "x=1",
            vec![h("X-M", method.as_bytes())],
            vec![],
            "HTTP/1.1",
        ));
    }
    // Methods with bodies, including ones curl would not guess.
    for method in ["GET", "HEAD", "PUT", "PATCH", "PROPFIND"] {
        assert_roundtrips(&stored(
            method,
            "",
            "",
            vec![h("Content-Length", b"3")],
            b"abc".to_vec(),
            "HTTP/1.1",
        ));
    }
    // POST with and without an (empty) announced body.
    assert_roundtrips(&stored("POST", "", "", vec![], vec![], "HTTP/1.1"));
    assert_roundtrips(&stored(
        "POST",
        "",
        "",
        vec![h("Content-Length", b"0")],
        vec![],
        "HTTP/1.1",
    ));
}

#[test]
fn empty_values_duplicates_and_exact_bytes() {
    assert_roundtrips(&stored(
        "POST",
        "/x",
        "",
        vec![
            h("X-Dup", b"1"),
            h("x-empty", b""),
            h("User-Agent", b""),
            h("X-Dup", b"2"),
            h("x-dup", b"1"),
            h("X-Obs", b"caf\xe9 \x80\xff\x83 end"),
            h("X-Tab", b"a\tb"),
            h("X-Utf8", "é ✓".as_bytes()),
            h("X-Quote", b"'; touch pwned; ' $(id) `id` \\ ! % %s \"q\""),
            h("Content-Type", b""),
        ],
        b"body".to_vec(),
        "HTTP/1.1",
    ));
}

#[test]
fn paths_and_queries_keep_their_bytes() {
    let cases = [
        ("/a%20b/%2F/%zz/..//./x", "q=%2B+&a=1&a=2&e=%E2%9C%93"),
        ("/[x]{y}|^\"<>\\`", "a[]=1&b={2}"),
        ("/a'b!c$d&e(f)*+,;=:@~", "?/:@!$'()*+,;="),
        ("/frag#ment/é", "q=#x"),
        ("", ""),
        ("/", "only=query"),
    ];
    for (subpath, query) in cases {
        assert_roundtrips(&stored("GET", subpath, query, vec![], vec![], "HTTP/1.1"));
    }
}

#[test]
fn http10_and_chunked_originals() {
    assert_roundtrips(&stored(
        "POST",
        "/old",
        "",
        vec![h("Content-Length", b"2"), h("X-A", b"1")],
        b"hi".to_vec(),
        "HTTP/1.0",
    ));
    // De-chunked body stored; replayed with Content-Length, same bytes.
    assert_roundtrips(&stored(
        "POST",
        "/chunked",
        "",
        vec![
            h("Transfer-Encoding", b"chunked"),
            h("Trailer", b"X-T"),
            h("TE", b"trailers"),
        ],
        b"0123456789\r\n0\r\n\r\n".to_vec(),
        "HTTP/1.1",
    ));
}

#[test]
fn binary_text_and_tricky_bodies() {
    let bodies: Vec<Vec<u8>> = vec![
        (0..=255u8).collect(),
        b"\0".to_vec(),
        b"line1\r\nline2\n\n".to_vec(),
        b"@/etc/passwd".to_vec(),
        b"'; touch pwned; '".to_vec(),
        b"%s%d%b\\0101\\c\\n %% \\".to_vec(),
        b"\xc3\x28 invalid utf8".to_vec(),
        "tab\there\nünïcödé ✓\n".as_bytes().to_vec(),
        b"\x1b[31mred\x1b[0m".to_vec(),
        b"trailing newlines\n\n\n".to_vec(),
    ];
    for body in bodies {
        let len = body.len().to_string();
        assert_roundtrips(&stored(
            "POST",
            "/b",
            "",
            vec![h("Content-Length", len.as_bytes())],
            body,
            "HTTP/1.1",
        ));
    }
}

#[test]
fn large_bodies() {
    let inline_max = hookbin::render::curl::INLINE_BODY_MAX;
    let bodies = [
        noise(1 << 20, 0x9E37_79B9_7F4A_7C15), // 1 MiB binary: printf pipeline
        "0123456789abcdef\n".repeat(12_000).into_bytes(), // ~200 KiB text: pipeline
        vec![b'x'; inline_max],                // largest inline body
    ];
    for body in bodies {
        let req = stored("PUT", "/big", "", vec![], body, "HTTP/1.1");
        for shell in shells() {
            roundtrip(&req, Aim::Target("/t"), shell).unwrap_or_else(|e| panic!("{shell:?}: {e}"));
        }
    }
}

/// Payloads that would run a command if anything were interpreted; each tries to create a file
/// in the working directory.
const INJECTIONS: &[&str] = &[
    "'; touch pwned1; '",
    "$(touch pwned2)",
    "`touch pwned3`",
    "\"; touch pwned4; \"",
    "'\"$(touch pwned5)\"'",
    "\\'; touch pwned6; #",
    "!!; touch pwned7",
    "${IFS}$(touch${IFS}pwned8)",
];

#[test]
fn generated_commands_run_nothing_but_curl() {
    let mut shells_to_try: Vec<&[&str]> = vec![BASH, &["bash", "--posix"]];
    if zsh_available() {
        shells_to_try.extend([ZSH, &["zsh", "-o", "rcquotes"] as &[&str]]);
    }
    let nowhere = Hangup::start();
    let origin = nowhere.url("");
    for inj in INJECTIONS {
        let b = inj.as_bytes();
        let mut non_utf8 = b.to_vec();
        non_utf8.push(0xff);
        let reqs = [
            // Header value (plain and through printf), inline body, piped body.
            stored(
                "POST",
                "/x",
                "",
                vec![h("X-Evil", b)],
                b.to_vec(),
                "HTTP/1.1",
            ),
            stored(
                "POST",
                "/x",
                "",
                vec![h("X-Evil", &non_utf8)],
                [b, b"\0"].concat(),
                "HTTP/1.1",
            ),
            // Path and query (only bytes a request line can hold: no spaces).
            stored(
                "GET",
                &format!("/{}", inj.replace(' ', "")),
                &inj.replace(' ', ""),
                vec![],
                vec![],
                "HTTP/1.1",
            ),
        ];
        for shell in &shells_to_try {
            let dir = tempfile::tempdir().unwrap();
            for req in &reqs {
                let server = OneShot::start();
                let cmd = curl_command(req, &server.url, None).unwrap();
                let out = run(shell, &cmd, dir.path());
                assert!(
                    out.status.success(),
                    "{shell:?} failed: {}\n{cmd}",
                    String::from_utf8_lossy(&out.stderr)
                );
                server.wait().unwrap();
            }
            // A hostile target and base: refused as URLs, or quoted like the rest (curl gets
            // no answer from `nowhere`; nothing else runs).
            let hostile_path = format!("{origin}/{}", inj.replace([' ', '#', '?'], ""));
            if let Ok(cmd) = curl_command(&reqs[0], &origin, Some(&hostile_path)) {
                run(shell, &format!("{cmd} --max-time 2"), dir.path());
            }
            for base in [hostile_path.clone(), format!("{origin}{inj}")] {
                match curl_command(&reqs[0], &base, None) {
                    Ok(cmd) => {
                        run(shell, &format!("{cmd} --max-time 2"), dir.path());
                    }
                    Err(e) => assert!(matches!(e, CurlError::InvalidBase(_)), "{base}: {e}"),
                }
            }

            let created: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(
                created.is_empty(),
                "{shell:?} with {inj:?} created {created:?}"
            );
        }
    }
}
