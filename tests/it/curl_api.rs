//! `GET /api/bins/{bin}/requests/{req}/curl`: the endpoint around the renderer, run for real.

use std::io::Write as _;

use crate::curl_props::percent;
use crate::replay_support::{BASH, Shell, exact_headers, replayed_headers, run, shells};
use crate::util::{Server, b64};

/// Runs `command` (without its trailing newline) with `shell` in an empty directory; asserts
/// success and that nothing was created there.
fn run_clean(shell: Shell, command: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = run(shell, command, dir.path());
    assert!(
        out.status.success(),
        "{shell:?}: {}\n{command}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(created.is_empty(), "{shell:?} created {created:?}");
}

#[test]
fn curl_endpoint_answers_one_line_that_replays_into_the_same_bin() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let body = br#"{"id":"evt_1","note":"it's $HOME `id` \\ 100%"}"#;
    let mut conn = s.connect();
    let mut raw = format!(
        "POST /r/{bin}/stripe/events?x=1&y=%2F HTTP/1.1\r\nHost: {}\r\nUser-Agent: Stripe/1.0\r\n\
         Content-Type: application/json\r\nStripe-Signature: t=1,v1=abc\r\nX-Dup: 1\r\nx-dup: 2\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        s.addr,
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    conn.write_all(&raw).unwrap();
    let res = crate::util::read_response(&mut std::io::BufReader::new(conn)).unwrap();
    let id = res.header("x-request-id").unwrap().to_owned();

    let res = s.get(&format!("/api/bins/{bin}/requests/{id}/curl"));
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(res.header("cache-control"), Some("no-store"));
    assert_eq!(res.header("x-hookbin-warning"), None);
    let text = res.text();
    assert!(text.ends_with('\n'));
    let command = text.trim_end_matches('\n');
    assert!(!command.contains('\n'), "one line: {command}");
    assert!(
        command.starts_with(&format!(
            "curl 'http://{}/r/{bin}/stripe/events?x=1&y=%2F' ",
            s.addr
        )),
        "{command}"
    );

    // Without a target it aims at the bin itself: each shell captures one more copy.
    let original = s.stored(&bin, &id);
    for shell in shells() {
        run_clean(shell, command);
    }
    let all = s.list_all(&bin, 50);
    assert_eq!(all.len(), 1 + shells().len());
    for summary in &all[..all.len() - 1] {
        let copy = s.stored(&bin, summary["id"].as_str().unwrap());
        for key in [
            "method",
            "path",
            "subpath",
            "query",
            "body_base64",
            "http_version",
        ] {
            assert_eq!(copy[key], original[key], "{key}");
        }
        assert_eq!(
            replayed_headers(&exact_headers(&copy)),
            replayed_headers(&exact_headers(&original))
        );
    }
}

#[test]
fn curl_target_rewrites_origin_and_prefix() {
    let s = Server::start(&[]);
    let (a, b) = (s.create_bin(), s.create_bin());
    let res = s.request(
        "PUT",
        &format!("/r/{a}/hooks/x?q=%20"),
        &[("X-Obs", "v")],
        b"\x00\xffbinary",
    );
    let id = res.header("x-request-id").unwrap().to_owned();
    let target = format!("http://{}/r/{b}", s.addr);
    let res = s.get(&format!(
        "/api/bins/{a}/requests/{id}/curl?target={}",
        percent(&target)
    ));
    assert_eq!(res.status, 200, "{}", res.text());
    run_clean(BASH, res.text().trim_end());
    let copies = s.list_all(&b, 10);
    assert_eq!(copies.len(), 1);
    let copy = s.stored(&b, copies[0]["id"].as_str().unwrap());
    assert_eq!(copy["path"], format!("/r/{b}/hooks/x"));
    assert_eq!(copy["query"], "q=%20");
    assert_eq!(copy["method"], "PUT");
    assert_eq!(
        b64(copy["body_base64"].as_str().unwrap()),
        b"\x00\xffbinary"
    );
    // An empty target is no target.
    let res = s.get(&format!("/api/bins/{a}/requests/{id}/curl?target="));
    assert!(res.text().contains(&format!("/r/{a}/hooks/x")));
}

#[test]
fn curl_endpoint_errors() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let id = s.capture(&bin, b"x");
    for bad in [
        "ftp://h/x",
        "localhost:3000",
        "http://h/x?y=1",
        "http://u:p@h/",
        "-o/etc/x",
    ] {
        s.get(&format!(
            "/api/bins/{bin}/requests/{id}/curl?target={}",
            percent(bad)
        ))
        .assert_error(400, "invalid_target");
    }
    s.get(&format!("/api/bins/{bin}/requests/999999/curl"))
        .assert_error(404, "request_not_found");
    s.get(&format!("/api/bins/{bin}/requests/abc/curl"))
        .assert_error(404, "request_not_found");
    s.get(&format!(
        "/api/bins/0000000000000000000a/requests/{id}/curl"
    ))
    .assert_error(404, "bin_not_found");
    s.request(
        "POST",
        &format!("/api/bins/{bin}/requests/{id}/curl"),
        &[],
        b"",
    )
    .assert_error(405, "method_not_allowed");
}

#[test]
fn truncated_body_is_replayed_as_its_prefix_with_a_warning_header() {
    let s = Server::start(&["--max-body-bytes", "16"]);
    let bin = s.create_bin();
    let body: Vec<u8> = (0..100u8).collect();
    let res = s.request("POST", &format!("/r/{bin}"), &[], &body);
    assert_eq!(res.status, 413);
    let id = res.header("x-request-id").unwrap().to_owned();
    let res = s.get(&format!("/api/bins/{bin}/requests/{id}/curl"));
    assert_eq!(res.status, 200);
    assert_eq!(
        res.header("x-hookbin-warning"),
        Some("body truncated; the command sends only the first 16 bytes")
    );
    let command = res.text();
    assert_eq!(command.lines().count(), 1, "still one line: {command}");
    run_clean(BASH, command.trim_end());
    let all = s.list_all(&bin, 10);
    let copy = s.stored(&bin, all[0]["id"].as_str().unwrap());
    assert_eq!(b64(copy["body_base64"].as_str().unwrap()), &body[..16]);
    assert_eq!(copy["body_truncated"], false);
}
