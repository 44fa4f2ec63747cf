//! Capture: every method, path, query, header and body byte is stored exactly.

use std::io::{BufReader, Write};

use crate::util::{Server, b64, read_response};

fn send(s: &Server, raw: Vec<u8>) -> crate::util::Response {
    s.raw(&raw)
}

fn stored_from(s: &Server, bin: &str, res: &crate::util::Response) -> serde_json::Value {
    assert!(
        (200..300).contains(&res.status) || res.status == 413,
        "{} {}",
        res.status,
        res.text()
    );
    s.stored(bin, res.header("x-request-id").expect("x-request-id"))
}

#[test]
fn binary_body_round_trips_byte_exact() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    // Every byte value, twice, plus sequences that break naive text handling.
    let mut body: Vec<u8> = (0..=255u8).chain(0..=255u8).collect();
    body.extend_from_slice(b"\r\n\r\n\xff\xfe\x00\xc3\x28 trailing newline\n");
    let res = s.request(
        "POST",
        &format!("/r/{bin}"),
        &[("Content-Type", "application/octet-stream")],
        &body,
    );
    let stored = stored_from(&s, &bin, &res);
    assert_eq!(b64(stored["body_base64"].as_str().unwrap()), body);
    assert_eq!(stored["body_size"], body.len());
    assert_eq!(
        stored["body_text"],
        serde_json::Value::Null,
        "not UTF-8, so no text"
    );
    assert_eq!(stored["body_truncated"], false);
    // The raw download is the same bytes, as an attachment that is never sniffed.
    let dl = s.get(&format!(
        "/api/bins/{bin}/requests/{}/body",
        stored["id"].as_str().unwrap()
    ));
    assert_eq!(dl.status, 200);
    assert_eq!(dl.body, body);
    assert_eq!(dl.header("content-type"), Some("application/octet-stream"));
    assert!(
        dl.header("content-disposition")
            .unwrap()
            .starts_with("attachment")
    );
    assert_eq!(dl.header("x-content-type-options"), Some("nosniff"));
}

#[test]
fn json_body_is_kept_as_sent_not_reserialized() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let body = b"{\"b\":1,  \"a\":\"\\u00e9\\n\",\"n\":1.50}\n";
    let res = s.request(
        "POST",
        &format!("/r/{bin}"),
        &[("Content-Type", "application/json")],
        body,
    );
    let stored = stored_from(&s, &bin, &res);
    assert_eq!(b64(stored["body_base64"].as_str().unwrap()), body);
    assert_eq!(stored["body_text"].as_str().unwrap().as_bytes(), body);
    assert_eq!(stored["content_type"], "application/json");
}

#[test]
fn empty_body_and_bodyless_methods() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    for method in ["GET", "DELETE", "HEAD", "POST"] {
        let res = s.request(method, &format!("/r/{bin}/e"), &[], b"");
        let stored = stored_from(&s, &bin, &res);
        assert_eq!(stored["method"], method);
        assert_eq!(stored["body_base64"], "");
        assert_eq!(stored["body_size"], 0);
        assert_eq!(stored["body_text"], "");
    }
}

#[test]
fn chunked_body_is_stored_dechunked_with_exact_bytes() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let raw = format!(
        "POST /r/{bin}/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
         5\r\nhello\r\n1;ext=yes\r\n\n\r\n7\r\n\0world\0\r\n0\r\nX-Trailer: t\r\n\r\n"
    );
    let res = send(&s, raw.into_bytes());
    let stored = stored_from(&s, &bin, &res);
    assert_eq!(
        b64(stored["body_base64"].as_str().unwrap()),
        b"hello\n\0world\0"
    );
    assert_eq!(stored["body_size"], 13);
    let names: Vec<&str> = stored["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h[0].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Transfer-Encoding"), "{names:?}");
}

#[test]
fn one_mebibyte_body_round_trips() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    // Deterministic pseudo-random bytes.
    let mut x: u32 = 0x1234_5678;
    let body: Vec<u8> = (0..1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    let res = s.request("PUT", &format!("/r/{bin}/big"), &[], &body);
    let stored = stored_from(&s, &bin, &res);
    assert_eq!(stored["body_size"], body.len());
    assert!(
        b64(stored["body_base64"].as_str().unwrap()) == body,
        "1 MiB body differs"
    );
    let dl = s.get(&format!(
        "/api/bins/{bin}/requests/{}/body",
        stored["id"].as_str().unwrap()
    ));
    assert!(dl.body == body);
}

#[test]
fn headers_keep_order_case_duplicates_and_raw_bytes() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let mut raw = format!(
        "POST /r/{bin} HTTP/1.1\r\nHost: example.test\r\nX-Dup: first\r\ncontent-TYPE: text/plain\r\n\
         X-Other: a, b; c\r\nx-dup: second\r\nX-Empty:\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\
         X-Quote: \"q\" $HOME `id` \\\r\n"
    )
    .into_bytes();
    raw.extend_from_slice(b"X-Latin1: caf\xe9\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
    let res = send(&s, raw);
    let stored = stored_from(&s, &bin, &res);
    let headers: Vec<(String, String)> = stored["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h[0].as_str().unwrap().to_owned(),
                h[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("Host", "example.test"),
        ("X-Dup", "first"),
        ("content-TYPE", "text/plain"),
        ("X-Other", "a, b; c"),
        ("x-dup", "second"),
        ("X-Empty", ""),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("X-Quote", "\"q\" $HOME `id` \\"),
        ("X-Latin1", "caf\u{fffd}"),
        ("Content-Length", "2"),
        ("Connection", "close"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(headers, expected);
    assert_eq!(stored["content_type"], "text/plain");
}

#[test]
fn header_order_survives_keep_alive_and_pipelining() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let mut conn = s.connect();
    // An API call, a capture whose body looks like a request, a chunked capture: one write.
    let body = "GET /r/fake HTTP/1.1\r\nB: 1\r\n\r\n";
    let pipelined = format!(
        "GET /api/bins/{bin} HTTP/1.1\r\nHost: h\r\n\r\n\
         POST /r/{bin}/1 HTTP/1.1\r\nHost: h\r\nZ: 1\r\nA: 2\r\nZ: 3\r\nContent-Length: {}\r\n\r\n{body}\
         PATCH /r/{bin}/2 HTTP/1.1\r\nHost: h\r\nY: 1\r\nB: 2\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        body.len()
    );
    conn.write_all(pipelined.as_bytes()).unwrap();
    let mut reader = BufReader::new(conn);
    assert_eq!(read_response(&mut reader).unwrap().status, 200);
    let first = read_response(&mut reader).unwrap();
    let second = read_response(&mut reader).unwrap();
    let names = |res: &crate::util::Response| -> Vec<String> {
        stored_from(&s, &bin, res)["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| format!("{}={}", h[0].as_str().unwrap(), h[1].as_str().unwrap()))
            .collect()
    };
    assert_eq!(
        names(&first),
        [
            "Host=h",
            "Z=1",
            "A=2",
            "Z=3",
            &format!("Content-Length={}", body.len())
        ]
    );
    assert_eq!(
        names(&second),
        ["Host=h", "Y=1", "B=2", "Transfer-Encoding=chunked"]
    );
}

#[test]
fn any_method_subpath_and_query_are_recorded_as_received() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let cases = [
        ("PROPFIND", "", "", ""),
        ("PURGE", "/", "", ""),
        (
            "POST",
            "/hooks/a%20b/%2F/ü",
            "x=1&y=a+b&y=%26&empty=&flag",
            "/hooks/a%20b/%2F/ü",
        ),
        ("REPORT", "/deep/../path", "q=%E2%9C%93", "/deep/../path"),
        ("OPTIONS", "/pre", "", "/pre"),
    ];
    for (method, subpath, query, _) in cases {
        let target = if query.is_empty() {
            format!("/r/{bin}{subpath}")
        } else {
            format!("/r/{bin}{subpath}?{query}")
        };
        // Raw request line: no client-side normalisation of the path.
        let raw = format!("{method} {target} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        let res = send(&s, raw.into_bytes());
        assert_eq!(res.status, 200, "{method} {target}: {}", res.text());
        let stored = stored_from(&s, &bin, &res);
        assert_eq!(stored["method"], method);
        assert_eq!(stored["path"], format!("/r/{bin}{subpath}"));
        assert_eq!(stored["subpath"], subpath);
        assert_eq!(stored["query"], query);
    }
    let stored = stored_from(
        &s,
        &bin,
        &send(
            &s,
            format!(
                "GET /r/{bin}?a=1+2&b=%26&a=3&flag HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
            )
            .into_bytes(),
        ),
    );
    assert_eq!(
        stored["query_params"],
        serde_json::json!([["a", "1 2"], ["b", "&"], ["a", "3"], ["flag", ""]])
    );
}

#[test]
fn default_answer_and_request_metadata() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let res = s.request("POST", &format!("/r/{bin}"), &[], b"x");
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "ok");
    assert!(
        res.header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    let id = res.header("x-request-id").unwrap();
    let stored = s.stored(&bin, id);
    assert_eq!(stored["id"], id);
    assert_eq!(stored["remote_addr"], "127.0.0.1");
    assert_eq!(stored["http_version"], "HTTP/1.1");
    let received = stored["received_at"].as_str().unwrap();
    assert!(
        time::OffsetDateTime::parse(received, &time::format_description::well_known::Rfc3339)
            .is_ok()
    );
    assert!(
        received.ends_with('Z') && received.len() == "2026-01-01T00:00:00.000Z".len(),
        "{received}"
    );

    let res = send(
        &s,
        format!("POST /r/{bin}/old HTTP/1.0\r\nContent-Length: 1\r\n\r\nz").into_bytes(),
    );
    assert_eq!(stored_from(&s, &bin, &res)["http_version"], "HTTP/1.0");
}

#[test]
fn request_ids_increase_with_arrival() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let ids: Vec<u64> = (0..5)
        .map(|_| s.capture(&bin, b"x").parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}

#[test]
fn options_preflight_is_recorded_and_gets_permissive_cors() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let res = s.request(
        "OPTIONS",
        &format!("/r/{bin}/cors"),
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "PUT"),
            (
                "Access-Control-Request-Headers",
                "x-signature, content-type",
            ),
        ],
        b"",
    );
    assert_eq!(res.status, 200);
    assert_eq!(res.header("access-control-allow-origin"), Some("*"));
    assert_eq!(res.header("access-control-allow-methods"), Some("PUT"));
    assert_eq!(
        res.header("access-control-allow-headers"),
        Some("x-signature, content-type")
    );
    assert_eq!(stored_from(&s, &bin, &res)["method"], "OPTIONS");
}

#[test]
fn unknown_bins_answer_404_and_record_nothing() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    for path in [
        "/r/0000000000000000000a".to_owned(),
        "/r/short".to_owned(),
        "/r/".to_owned(),
        format!("/r/{}", bin.to_uppercase()),
        format!("/r/{bin}x/y"),
    ] {
        s.request("POST", &path, &[], b"x")
            .assert_error(404, "bin_not_found");
    }
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        0
    );
}

#[test]
fn browser_navigation_redirects_to_the_inspector_unrecorded() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let nav = [
        ("Sec-Fetch-Mode", "navigate"),
        ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"),
    ];
    let res = s.request("GET", &format!("/r/{bin}"), &nav, b"");
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some(format!("/bins/{bin}").as_str())
    );
    // With a subpath or query, or without the browser's signs, it is a capture like any other.
    assert_eq!(
        s.request("GET", &format!("/r/{bin}/x"), &nav, b"").status,
        200
    );
    assert_eq!(
        s.request("GET", &format!("/r/{bin}?a=1"), &nav, b"").status,
        200
    );
    assert_eq!(
        s.request("GET", &format!("/r/{bin}"), &[("Accept", "text/html")], b"")
            .status,
        200
    );
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        3
    );
}

#[test]
fn oversized_body_with_content_length_is_cut_recorded_and_answered_413() {
    let s = Server::start(&["--max-body-bytes", "1000"]);
    let bin = s.create_bin();
    let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let res = s.request("POST", &format!("/r/{bin}/big"), &[], &body);
    res.assert_error(413, "body_too_large");
    let stored = stored_from(&s, &bin, &res);
    assert_eq!(stored["body_truncated"], true);
    assert_eq!(
        stored["body_size"], 5000,
        "every byte received (all of them)"
    );
    assert_eq!(b64(stored["body_base64"].as_str().unwrap()), &body[..1000]);
    // Exactly the limit is not truncated.
    let res = s.request("POST", &format!("/r/{bin}"), &[], &body[..1000]);
    assert_eq!(res.status, 200);
    assert_eq!(stored_from(&s, &bin, &res)["body_truncated"], false);
}

#[test]
fn a_cut_body_records_the_bytes_received_not_the_length_it_claims() {
    // Issue 11: body_size was the declared Content-Length, which a sender can make up.
    let s = Server::start(&["--max-body-bytes", "1000"]);
    let bin = s.create_bin();
    let claimed: u64 = 1 << 40;
    let mut conn = s.connect();
    conn.write_all(
        format!("POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: {claimed}\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    // hookbin reads 16 MiB past its limit, then answers; send a little more than that.
    let sent = 1000 + 16 * 1024 * 1024 + 64 * 1024;
    let chunk = vec![b'z'; 64 * 1024];
    let mut written = 0;
    while written < sent && conn.write_all(&chunk).is_ok() {
        written += chunk.len();
    }
    let res = read_response(&mut BufReader::new(conn)).unwrap();
    res.assert_error(413, "body_too_large");
    assert_eq!(res.header("connection"), Some("close"));
    let stored = stored_from(&s, &bin, &res);
    let size = stored["body_size"].as_u64().unwrap();
    assert!(
        (1000 + 16 * 1024 * 1024..=written as u64).contains(&size),
        "body_size {size}, claimed {claimed}"
    );
    assert_eq!(stored["body_truncated"], true);
}

#[test]
fn oversized_chunked_body_records_bytes_received() {
    let s = Server::start(&["--max-body-bytes", "10"]);
    let bin = s.create_bin();
    let raw = format!(
        "POST /r/{bin} HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
         8\r\n01234567\r\n8\r\n89abcdef\r\n0\r\n\r\n"
    );
    let res = send(&s, raw.into_bytes());
    res.assert_error(413, "body_too_large");
    let stored = stored_from(&s, &bin, &res);
    assert_eq!(b64(stored["body_base64"].as_str().unwrap()), b"0123456789");
    assert_eq!(stored["body_size"], 16);
    assert_eq!(stored["body_truncated"], true);
}

#[test]
fn oversized_request_head_is_answered_431_and_not_recorded() {
    let s = Server::start(&["--max-header-bytes", "4096"]);
    let bin = s.create_bin();
    let big = "v".repeat(5000);
    let res = s.request("POST", &format!("/r/{bin}"), &[("X-Big", &big)], b"x");
    assert_eq!(res.status, 431);
    let ok = s.request(
        "POST",
        &format!("/r/{bin}"),
        &[("X-Small", &big[..1000])],
        b"x",
    );
    assert_eq!(ok.status, 200);
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn request_ids_count_per_bin_and_tell_nothing_about_other_bins() {
    let s = Server::start(&[]);
    let a = s.create_bin();
    let b = s.create_bin();
    // Interleaved traffic: each bin numbers its own requests 1, 2, 3.
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push((s.capture(&a, b"a"), s.capture(&b, b"b")));
    }
    assert_eq!(
        got,
        [("1", "1"), ("2", "2"), ("3", "3")]
            .map(|(x, y)| (x.to_owned(), y.to_owned()))
            .to_vec()
    );
    // A deleted request's id is not given again; clearing the bin does not restart the count.
    assert_eq!(s.delete(&format!("/api/bins/{a}/requests/3")).status, 204);
    assert_eq!(s.capture(&a, b"a"), "4");
    assert_eq!(s.delete(&format!("/api/bins/{a}/requests")).status, 204);
    assert_eq!(s.capture(&a, b"a"), "5");
    assert_eq!(s.stored(&b, "2")["body_text"], "b");
}
