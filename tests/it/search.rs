//! Search through the real server (API.md "Search"): every `q` form over the list endpoint, a
//! gzip body made by the real `gzip`, paging with a cursor that belongs to its query, and the
//! `400 invalid_query` errors naming the term.

use crate::bodies::made_with;
use crate::util::Server;

/// A bin with four requests; their ids in order of arrival.
fn fixture(server: &Server) -> (String, [String; 4]) {
    let bin = server.create_bin();
    let send = |method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]| {
        let res = server.request(method, &format!("/r/{bin}{target}"), headers, body);
        assert_eq!(res.status, 200, "{}", res.text());
        res.header("x-request-id").unwrap().to_owned()
    };
    let a = send(
        "POST",
        "/stripe/events?live=1",
        &[
            ("Content-Type", "application/json"),
            ("Stripe-Signature", "t=1,v1=abc"),
        ],
        br#"{"type":"invoice.paid","amount":4200}"#,
    );
    let b = send(
        "PUT",
        "/github",
        &[("X-GitHub-Event", "push"), ("Content-Type", "text/plain")],
        b"refs/heads/main pushed by Octocat",
    );
    let c = send("GET", "/health?probe=yes", &[], b"");
    let d = send(
        "POST",
        "/forms",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"note=paid+in+full&who=J%C3%BCrgen",
    );
    (bin, [a, b, c, d])
}

/// The ids `q` finds, newest first.
fn found(server: &Server, bin: &str, q: &str) -> Vec<String> {
    let res = server.get(&format!("/api/bins/{bin}/requests?q={}", urlencoding(q)));
    assert_eq!(res.status, 200, "q={q}: {}", res.text());
    let body = res.json();
    assert!(body["meta"]["next_cursor"].is_null(), "q={q}: {body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

fn urlencoding(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[test]
fn every_q_form_finds_what_the_contract_says() {
    let server = Server::start(&[]);
    let (bin, [a, b, c, d]) = fixture(&server);
    let cases: &[(&str, Vec<&String>)] = &[
        ("", vec![&d, &c, &b, &a]),
        ("method:post", vec![&d, &a]),
        ("method:PUT", vec![&b]),
        ("path:/stripe", vec![&a]),
        // Path and query as received, across the `?`.
        ("path:events?live", vec![&a]),
        ("path:probe=yes", vec![&c]),
        ("header:x-github-event", vec![&b]),
        ("header:X-GITHUB-EVENT=PUSH", vec![&b]),
        ("header:stripe-signature=v1=abc", vec![&a]),
        ("header:content-type=json", vec![&a]),
        ("header:x-missing", vec![]),
        ("body:invoice.paid", vec![&a]),
        ("body:OCTOCAT", vec![&b]),
        ("body:paid", vec![&d, &a]),
        // A bare word looks at the method, path, headers and body.
        ("github", vec![&b]),
        ("get", vec![&c]),
        ("paid", vec![&d, &a]),
        ("\"pushed by\"", vec![&b]),
        ("body:\"paid in\"", vec![]),
        ("body:\"paid+in\"", vec![&d]),
        ("-method:post", vec![&c, &b]),
        ("-paid -health", vec![&b]),
        ("method:post body:paid -path:forms", vec![&a]),
        ("method:post header:content-type=json body:4200", vec![&a]),
        // A quoted field prefix is text.
        ("\"path:x\"", vec![]),
    ];
    for (q, want) in cases {
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(found(&server, &bin, q), want, "q={q}");
    }
}

#[test]
fn body_search_undoes_content_encoding() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let body = br#"{"event":"order.created","customer":"Zebulon"}"#.repeat(50);
    let Some(gz) = made_with("gzip", "gzip -c", &body) else {
        return;
    };
    assert!(!gz.windows(7).any(|w| w == b"Zebulon"));
    let res = server.request(
        "POST",
        &format!("/r/{bin}"),
        &[
            ("Content-Encoding", "gzip"),
            ("Content-Type", "application/json"),
        ],
        &gz,
    );
    assert_eq!(res.status, 200);
    let id = res.header("x-request-id").unwrap().to_owned();
    server.capture(&bin, b"plain, no customer here");
    assert_eq!(found(&server, &bin, "body:zebulon"), vec![id.clone()]);
    assert_eq!(found(&server, &bin, "zebulon"), vec![id]);
    // The stored bytes are still the gzip bytes.
    let raw = server.get(&format!("/api/bins/{bin}/requests/1/body"));
    assert_eq!(raw.body, gz);
}

#[test]
fn a_search_pages_with_a_cursor_that_belongs_to_its_query() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let mut matching = Vec::new();
    for i in 0..12 {
        let body = if i % 3 == 0 {
            format!("other {i}")
        } else {
            format!("wanted {i}")
        };
        let id = server.capture(&bin, body.as_bytes());
        if i % 3 != 0 {
            matching.push(id);
        }
    }
    matching.reverse();
    let q = "body:wanted";
    let mut seen = Vec::new();
    let mut cursor = String::new();
    let mut pages = 0;
    loop {
        let res = server.get(&format!(
            "/api/bins/{bin}/requests?q={}&limit=3&cursor={cursor}",
            urlencoding(q)
        ));
        assert_eq!(res.status, 200, "{}", res.text());
        let page = res.json();
        let rows = page["data"].as_array().unwrap();
        assert!(rows.len() <= 3);
        seen.extend(rows.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
        pages += 1;
        match page["meta"]["next_cursor"].as_str() {
            Some(next) => {
                // Another query (or none) may not reuse it.
                for other in ["body:other", ""] {
                    server
                        .get(&format!(
                            "/api/bins/{bin}/requests?q={}&cursor={next}",
                            urlencoding(other)
                        ))
                        .assert_error(400, "invalid_cursor");
                }
                cursor = next.to_owned();
            }
            None => break,
        }
        assert!(pages < 10, "no end to the pages");
    }
    assert_eq!(seen, matching);
    assert_eq!(pages, 3);
    // A list cursor is not a search cursor either.
    let list = server
        .get(&format!("/api/bins/{bin}/requests?limit=2"))
        .json();
    let list_cursor = list["meta"]["next_cursor"].as_str().unwrap();
    server
        .get(&format!(
            "/api/bins/{bin}/requests?q=wanted&cursor={list_cursor}"
        ))
        .assert_error(400, "invalid_cursor");
}

#[test]
fn a_bad_q_is_400_invalid_query_naming_the_term() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    server.capture(&bin, b"x");
    for (q, term) in [
        ("method:post \"unclosed text", "\"unclosed text"),
        ("body:\"open", "body:\"open"),
        ("colour:red", "colour:red"),
        ("-Colour:\"red\"", "Colour:"),
        ("header:", "header:"),
    ] {
        let res = server.get(&format!("/api/bins/{bin}/requests?q={}", urlencoding(q)));
        res.assert_error(400, "invalid_query");
        let message = res.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains(term), "q={q}: {message}");
    }
    // An unknown bin is still a 404, whatever the query.
    server
        .get("/api/bins/aaaaaaaaaaaaaaaaaaaa/requests?q=x")
        .assert_error(404, "bin_not_found");
}

/// The next event of a raw SSE stream as (event, id, data), comments and chunk sizes skipped.
fn next_event(reader: &mut impl std::io::BufRead) -> (String, String, serde_json::Value) {
    let (mut id, mut event, mut data) = (None, None, None);
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "stream ended");
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("event: ") {
            event = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = Some(serde_json::from_str(v).unwrap());
        } else if line.is_empty()
            && let Some(data) = data.take()
        {
            return (event.unwrap(), id.unwrap(), data);
        }
    }
}

#[test]
fn the_event_stream_filters_by_q_and_counts_what_it_hides() {
    use std::io::{BufRead, BufReader, Write};
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let early_miss = server.capture(&bin, b"nothing here");
    let early_hit = server.capture(&bin, b"order paid");
    let mut conn = server.connect();
    write!(
        conn,
        "GET /api/bins/{bin}/stream?last_event_id=0&q=body%3Apaid HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(conn);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    // Replay, then live: a match is a `request` event with the summary, a miss a `filtered`
    // event with the id only.
    assert_eq!(
        next_event(&mut reader),
        (
            "filtered".into(),
            early_miss.clone(),
            serde_json::json!({"id": early_miss})
        )
    );
    let (event, id, data) = next_event(&mut reader);
    assert_eq!(
        (event.as_str(), id.as_str()),
        ("request", early_hit.as_str())
    );
    assert_eq!(data["body_size"], 10);
    let live_hit = server.capture(&bin, b"PAID twice");
    let live_miss = server.capture(&bin, b"refunded");
    assert_eq!(next_event(&mut reader).0.as_str(), "request");
    let (event, id, _) = next_event(&mut reader);
    assert_eq!(
        (event.as_str(), id.as_str()),
        ("filtered", live_miss.as_str())
    );
    assert_ne!(live_hit, live_miss);

    server
        .get(&format!("/api/bins/{bin}/stream?q=nope%3Ax"))
        .assert_error(400, "invalid_query");
}
