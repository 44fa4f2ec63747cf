//! The HTML pages over plain HTTP (no browser): routes, redirects, error pages, security and
//! caching headers, escaping of captured bytes, the no-JavaScript forms, pagination.

use crate::util::{Response, Server};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

fn post_form(server: &Server, path: &str, body: &str) -> Response {
    server.request(
        "POST",
        path,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
}

/// An HTML page with every header a page must carry, and no inline code anywhere.
fn assert_page(res: &Response, status: u16) -> String {
    let html = res.text();
    assert_eq!(res.status, status, "{html}");
    assert_eq!(
        res.header("content-type"),
        Some("text/html; charset=utf-8"),
        "{html}"
    );
    assert_eq!(res.header("content-security-policy"), Some(CSP));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(res.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(res.header("cache-control"), Some("no-store"));
    assert_no_inline_code(&html);
    html
}

/// No `<script>` without `src`, no `style` attribute or element, no `on...=` handler attribute.
fn assert_no_inline_code(html: &str) {
    let lower = html.to_ascii_lowercase();
    for (i, _) in lower.match_indices("<script") {
        let tag = &lower[i..i + lower[i..].find('>').unwrap()];
        assert!(
            tag.contains(" src=\"/static/app.js?v="),
            "inline script: {tag}"
        );
        assert!(lower[i..].starts_with(&format!("{tag}></script>")), "{tag}");
    }
    assert!(!lower.contains("<style"), "inline <style>");
    let mut in_tag = false;
    let bytes = lower.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => in_tag = true,
            b'>' => in_tag = false,
            b' ' | b'\n' | b'\t' if in_tag => {
                let rest = &lower[i + 1..];
                assert!(
                    !rest.starts_with("style="),
                    "style attribute near {rest:.60}"
                );
                if rest.starts_with("on") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphabetic())
                        .collect();
                    assert!(
                        !rest[name.len()..].starts_with('='),
                        "event handler attribute near {rest:.60}"
                    );
                }
            }
            _ => {}
        }
    }
}

fn create_bin_by_form(server: &Server) -> String {
    let res = post_form(server, "/bins", "");
    assert_eq!(res.status, 303, "{}", res.text());
    let location = res.header("location").unwrap().to_owned();
    location.strip_prefix("/bins/").unwrap().to_owned()
}

#[test]
fn home_page_explains_and_carries_the_security_headers() {
    let server = Server::start(&[]);
    let html = assert_page(&server.get("/"), 200);
    assert!(html.contains("Create new URL"));
    assert!(html.contains("<form method=\"post\" action=\"/bins\""));
    assert!(html.contains("curl -X POST"));
    // HEAD works too (read by hand: the harness would wait for the body a HEAD never has).
    use std::io::{Read, Write};
    let mut conn = server.connect();
    write!(
        conn,
        "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = String::new();
    conn.read_to_string(&mut head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("cache-control: no-store"), "{head}");
    assert!(head.ends_with("\r\n\r\n"), "no body after a HEAD: {head}");
}

#[test]
fn create_form_redirects_to_a_new_bin_page_that_waits_for_requests() {
    let server = Server::start(&[]);
    let bin = create_bin_by_form(&server);
    assert_eq!(server.get(&format!("/api/bins/{bin}")).status, 200);
    let html = assert_page(&server.get(&format!("/bins/{bin}")), 200);
    assert!(html.contains(&format!("value=\"http://{}/r/{bin}\"", server.addr)));
    assert!(html.contains("Waiting for the first request…"));
    assert!(html.contains("0</span> / 1,000 requests"));
    // The stream starts from the beginning, so nothing between render and connect is lost.
    assert!(html.contains(&format!(
        "data-stream=\"/api/bins/{bin}/stream?last_event_id=0\""
    )));
    assert!(html.contains("expires") || html.contains("Expires"));
}

#[test]
fn create_form_is_rate_limited_per_address_with_an_html_page() {
    let server = Server::start(&["--max-bins-per-minute", "1"]);
    create_bin_by_form(&server);
    let res = post_form(&server, "/bins", "");
    let html = assert_page(&res, 429);
    assert!(res.header("retry-after").is_some());
    assert!(html.contains("bins a minute"), "{html}");
}

#[test]
fn cross_site_form_posts_are_refused() {
    let server = Server::start(&[]);
    let res = server.request(
        "POST",
        "/bins",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        b"",
    );
    assert_page(&res, 403);
    let bin = server.create_bin();
    let res = server.request(
        "POST",
        &format!("/bins/{bin}/delete"),
        &[("Sec-Fetch-Site", "cross-site")],
        b"",
    );
    assert_page(&res, 403);
    assert_eq!(server.get(&format!("/api/bins/{bin}")).status, 200);
}

#[test]
fn unknown_bins_requests_and_pages_answer_the_404_page() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let id = server.capture(&bin, b"x");
    for path in [
        "/nope".to_owned(),
        "/bins/0123456789abcdefghij".to_owned(),
        "/bins/NOT-A-BIN".to_owned(),
        format!("/bins/{bin}/requests/999999"),
        format!("/bins/{bin}/requests/abc"),
        format!("/bins/0123456789abcdefghij/requests/{id}"),
        "/static/nope.css".to_owned(),
        "/static/../Cargo.toml".to_owned(),
    ] {
        let html = assert_page(&server.get(&path), 404);
        assert!(html.contains("Not found"), "{path}: {html}");
    }
    let html = assert_page(&server.get("/bins/0123456789abcdefghij"), 404);
    assert!(html.contains("deleted, or it has expired"), "{html}");
    // A link to a request that has gone since still shows the bin.
    let html = assert_page(&server.get(&format!("/bins/{bin}?req=999999")), 200);
    assert!(html.contains("That request is gone"));
    // A damaged page link.
    assert_page(&server.get(&format!("/bins/{bin}?cursor=forged")), 400);
    // Wrong methods.
    let res = server.request("DELETE", &format!("/bins/{bin}"), &[], b"");
    assert_page(&res, 405);
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
    let res = server.get(&format!("/bins/{bin}/clear"));
    assert_page(&res, 405);
    assert_eq!(res.header("allow"), Some("POST"));
}

#[test]
fn captured_markup_is_escaped_on_every_page() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let body = br#"{"<script>alert('json')</script>":"<img src=x onerror=alert(1)>"}"#;
    let res = server.request(
        "POST",
        &format!(
            "/r/{bin}/%3Cscript%3E'x?q=%3Cscript%3Ealert(2)%3C/script%3E&j=javascript:alert(3)"
        ),
        &[
            ("Content-Type", "application/json"),
            ("X-Evil", "<script>alert(1)</script>"),
            ("X-Attr", "\"><img src=x onerror=alert(4)>"),
        ],
        body,
    );
    assert_eq!(res.status, 200);
    let id = res.header("x-request-id").unwrap().to_owned();
    for path in [
        format!("/bins/{bin}"),
        format!("/bins/{bin}?req={id}"),
        format!("/bins/{bin}/requests/{id}"),
    ] {
        let html = assert_page(&server.get(&path), 200);
        assert!(!html.contains("<script>alert"), "{path}: {html}");
        assert!(!html.contains("<img"), "{path}: {html}");
        assert!(
            html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{path}: the header value is shown, escaped"
        );
        assert!(html.contains("&#60;script&#62;alert(2)&#60;/script&#62;"));
        assert!(html.contains("&#34;&#62;&#60;img src=x onerror=alert(4)&#62;"));
        // The JSON view keeps the key as text inside its span.
        assert!(
            html.contains(
                "<span class=\"j-key\">&#34;&#60;script&#62;alert(&#39;json&#39;)&#60;/script&#62;&#34;</span>"
            ),
            "{path}"
        );
    }
}

#[test]
fn static_assets_are_embedded_versioned_and_cached_forever() {
    let server = Server::start(&[]);
    let html = server.get("/").text();
    for (name, content_type) in [
        ("app.css", "text/css; charset=utf-8"),
        ("app.js", "text/javascript; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ] {
        let start = html
            .find(&format!("/static/{name}?v="))
            .unwrap_or_else(|| panic!("{name} not linked"));
        let url = &html[start..start + html[start..].find('"').unwrap()];
        let res = server.get(url);
        assert_eq!(res.status, 200, "{url}");
        assert_eq!(res.header("content-type"), Some(content_type));
        assert_eq!(
            res.header("cache-control"),
            Some("public, max-age=31536000, immutable"),
            "{url}"
        );
        assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
        assert!(!res.body.is_empty());
        // Another version (an old page after a deploy) gets the file, but not cached forever.
        let res = server.get(&format!("/static/{name}?v=old"));
        assert_eq!(res.status, 200);
        assert_eq!(res.header("cache-control"), Some("no-cache"));
    }
}

#[test]
fn forms_delete_a_request_clear_the_bin_and_delete_the_bin() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let a = server.capture(&bin, b"a");
    let b = server.capture(&bin, b"b");
    server.capture(&bin, b"c");

    let res = post_form(&server, &format!("/bins/{bin}/requests/{a}/delete"), "");
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some(format!("/bins/{bin}").as_str())
    );
    assert_eq!(
        server.get(&format!("/api/bins/{bin}/requests/{a}")).status,
        404
    );
    assert_eq!(
        server.get(&format!("/api/bins/{bin}/requests/{b}")).status,
        200
    );

    let res = post_form(&server, &format!("/bins/{bin}/clear"), "");
    assert_eq!(res.status, 303);
    assert!(server.list_all(&bin, 50).is_empty());

    let res = post_form(&server, &format!("/bins/{bin}/delete"), "");
    assert_eq!(res.status, 303);
    assert_eq!(res.header("location"), Some("/?deleted=1"));
    assert_eq!(server.get(&format!("/api/bins/{bin}")).status, 404);
    let html = assert_page(&server.get("/?deleted=1"), 200);
    assert!(html.contains("were deleted"));
    // The bin is gone: its forms answer the 404 page.
    assert_page(&post_form(&server, &format!("/bins/{bin}/clear"), ""), 404);
}

#[test]
fn response_form_validates_like_the_api_and_sets_and_resets() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let path = format!("/bins/{bin}/response");

    // Refused: the page again with 422, the message beside the form, and what was typed.
    let res = post_form(
        &server,
        &path,
        "status=99&headers=X-Ok%3A+1&body=slow&delay_ms=0",
    );
    let html = assert_page(&res, 422);
    assert!(
        html.contains("Not saved: status: must be an integer from 100 to 599"),
        "{html}"
    );
    assert!(html.contains("value=\"99\""));
    assert!(html.contains("<details id=\"response\" open>"));
    let res = post_form(&server, &path, "status=200&headers=Content-Length%3A+5");
    let html = assert_page(&res, 422);
    assert!(
        html.contains("headers[0][0]: Content-Length is set by the server"),
        "{html}"
    );
    let res = post_form(&server, &path, "status=200&headers=no+colon+here");
    assert!(assert_page(&res, 422).contains("line 1: expected"));
    let res = post_form(&server, &path, "status=200&delay_ms=soon");
    assert!(assert_page(&res, 422).contains("delay_ms: must be an integer"));
    assert_eq!(
        server.get(&format!("/api/bins/{bin}")).json()["response"],
        serde_json::Value::Null
    );

    // Accepted: stored exactly as PUT /api/bins/{bin}/response would, and used by captures.
    let res = post_form(
        &server,
        &path,
        "status=429&headers=Retry-After%3A+5%0D%0AX-Note%3A+a%3Ab&body=slow+down&delay_ms=0",
    );
    assert_eq!(res.status, 303, "{}", res.text());
    assert_eq!(
        res.header("location"),
        Some(format!("/bins/{bin}#response").as_str())
    );
    let spec = &server.get(&format!("/api/bins/{bin}")).json()["response"];
    assert_eq!(
        spec,
        &serde_json::json!({"status": 429, "headers": [["Retry-After", "5"], ["X-Note", "a:b"]], "body": "slow down", "delay_ms": 0})
    );
    let capture = server.request("POST", &format!("/r/{bin}"), &[], b"x");
    assert_eq!(capture.status, 429);
    assert_eq!(capture.text(), "slow down");
    let html = assert_page(&server.get(&format!("/bins/{bin}")), 200);
    assert!(
        html.contains("Answers 429, 2 headers, a 9 B body."),
        "{html}"
    );
    assert!(html.contains("Retry-After: 5\nX-Note: a:b\n</textarea>"));

    let res = post_form(&server, &format!("/bins/{bin}/response/clear"), "");
    assert_eq!(res.status, 303);
    assert_eq!(
        server.get(&format!("/api/bins/{bin}")).json()["response"],
        serde_json::Value::Null
    );
    assert_eq!(
        server
            .request("POST", &format!("/r/{bin}"), &[], b"x")
            .text(),
        "ok"
    );
}

#[test]
fn bin_page_lists_50_newest_first_and_pages_to_older() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let ids: Vec<String> = (0..60)
        .map(|i| server.capture(&bin, format!("n={i}").as_bytes()))
        .collect();
    let html = assert_page(&server.get(&format!("/bins/{bin}")), 200);
    let rows: Vec<&str> = html
        .match_indices("<li class=\"row\" data-id=\"")
        .map(|(i, m)| {
            let rest = &html[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .filter(|id| !id.is_empty())
        .collect();
    assert_eq!(rows.len(), 50);
    assert_eq!(rows[0], ids[59], "newest first");
    assert_eq!(rows[49], ids[10]);
    // The newest is selected by default, and the stream resumes after it.
    assert!(html.contains(&format!("data-req=\"{}\"", ids[59])));
    assert!(html.contains(&format!("stream?last_event_id={}", ids[59])));
    let start = html
        .find(&format!("/bins/{bin}?cursor="))
        .expect("older link");
    let older = &html[start..start + html[start..].find('"').unwrap()];
    let html = assert_page(&server.get(older), 200);
    let count = html.matches("<li class=\"row\" data-id=\"").count() - 1; // minus the template
    assert_eq!(count, 10);
    assert!(html.contains("← Newest requests"));
    assert!(!html.contains("Older requests"));
    assert!(html.contains(&format!("data-req=\"{}\"", ids[9])));
}

#[test]
fn request_detail_shows_body_by_type_with_raw_bytes_and_hex() {
    let server = Server::start(&["--max-body-bytes", "1000"]);
    let bin = server.create_bin();
    let send = |ct: &str, body: &[u8]| {
        let res = server.request(
            "POST",
            &format!("/r/{bin}/t"),
            &[("Content-Type", ct)],
            body,
        );
        res.header("x-request-id").unwrap().to_owned()
    };
    let page = |id: &str| assert_page(&server.get(&format!("/bins/{bin}/requests/{id}")), 200);

    let html = page(&send("application/json", br#"{"b":1.50,"a":[true,null]}"#));
    assert!(
        html.contains("<span class=\"j-num\">1.50</span>"),
        "numbers kept as written"
    );
    assert!(html.contains("data-view=\"Raw\""));
    assert!(
        html.contains("{&#34;b&#34;:1.50,&#34;a&#34;:[true,null]}"),
        "raw bytes"
    );

    let html = page(&send("application/x-www-form-urlencoded", b"x=1+2&x=%26"));
    assert!(html.contains("<td class=\"name\">x</td><td class=\"value\">1 2</td>"));
    assert!(html.contains("<td class=\"name\">x</td><td class=\"value\">&#38;</td>"));

    let html = page(&send("application/octet-stream", b"\x00\x01\xffABC"));
    assert!(html.contains("00000000  00 01 ff 41 42 43"), "{html}");
    assert!(html.contains("|...ABC|"));
    assert!(html.contains("Not valid UTF-8"));

    let html = page(&send("text/plain", &[b'z'; 1500]));
    assert!(html.contains("Truncated."), "{html}");
    assert!(html.contains("1,500 bytes"));

    // A header value of a few hundred characters folds behind a toggle, whole inside it.
    let long = "v".repeat(400);
    let res = server.request("GET", &format!("/r/{bin}"), &[("X-Long", &long)], b"");
    let html = page(res.header("x-request-id").unwrap());
    assert!(html.contains(&format!("<details><summary>{}…", "v".repeat(160))));
    assert!(html.contains(&format!("</summary>{long}</details>")));
    assert!(html.contains("Empty."));
}

#[test]
fn stream_replays_everything_for_a_page_rendered_while_the_bin_was_empty() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let id = server.capture(&bin, b"first");
    let mut conn = server.connect();
    use std::io::{BufRead, BufReader, Write};
    write!(
        conn,
        "GET /api/bins/{bin}/stream?last_event_id=0 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(conn);
    let deadline = std::time::Instant::now() + crate::util::PATIENCE;
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.starts_with("id: ") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no event replayed");
    }
    assert_eq!(line.trim_end(), format!("id: {id}"));
}

/// Every way a page or a log could carry `secret`: as typed, HTML-escaped, form-encoded.
fn secret_forms(secret: &str) -> Vec<String> {
    let escaped = secret
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    vec![
        secret.to_owned(),
        escaped.replace('\'', "&#39;"),
        escaped.replace('\'', "&#x27;"),
        form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
    ]
}

#[test]
fn verify_form_shows_the_verdict_and_never_keeps_the_secret() {
    let mut s = Server::start(&[]);
    let bin = s.create_bin();
    // GitHub's published example: secret "It's a Secret to Everybody", body "Hello, World!".
    let signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    let res = s.request(
        "POST",
        &format!("/r/{bin}"),
        &[("X-Hub-Signature-256", signature)],
        b"Hello, World!",
    );
    let id = res.header("x-request-id").unwrap().to_owned();
    let action = format!("/bins/{bin}/requests/{id}/verify");
    let post = |secret: &str, scheme: &str| {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("secret", secret)
            .append_pair("scheme", scheme)
            .finish();
        assert_page(&post_form(&s, &action, &body), 200)
    };
    let assert_absent = |secret: &str, html: &str| {
        for form in secret_forms(secret) {
            assert!(
                !html.contains(&form),
                "the page carries the secret as {form:?}"
            );
        }
    };

    // Each verdict shows that the secret reached the verifier, and the page does not carry it.
    let right = "It's a Secret to Everybody";
    let html = post(right, "");
    assert!(html.contains("Valid signature"), "{html}");
    assert!(html.contains("(github)"));
    assert_absent(right, &html);

    let wrong = "not-the-secret-8c1f";
    let html = post(wrong, "github");
    assert!(html.contains("Not a valid signature"), "{html}");
    assert_absent(wrong, &html);

    // Nothing to check with: the secret came with the form all the same.
    let unused = "secret-for-no-scheme-5d2e";
    let html = post(unused, "carrier-pigeon");
    assert!(html.contains("Cannot check"), "{html}");
    assert_absent(unused, &html);

    // The whole log, once the server has stopped.
    let log = s.stop();
    for secret in [right, wrong, unused] {
        for form in secret_forms(secret) {
            assert!(!log.contains(&form), "the log carries {form:?}:\n{log}");
        }
    }
}

#[test]
fn captured_part_names_filenames_and_xml_are_escaped_on_every_page() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let multipart = "--XX\r\nContent-Disposition: form-data; \
         name=\"<script>alert('pname')</script>\"; filename=\"<img src=x onerror=alert('fname')>.png\"\r\n\
         Content-Type: text/html\"><script>alert('ptype')</script>\r\n\r\n\
         <script>alert('part')</script>\r\n--XX--\r\n";
    let xml = "<?xml version=\"1.0\"?><x onload=\"alert('xml')\"><script>alert('xml2')</script>\
               <![CDATA[<img src=x onerror=alert('cdata')>]]></x>";
    let mut ids = Vec::new();
    for (ct, body) in [
        ("multipart/form-data; boundary=XX", multipart),
        ("application/xml", xml),
    ] {
        let res = server.request(
            "POST",
            &format!("/r/{bin}"),
            &[("Content-Type", ct)],
            body.as_bytes(),
        );
        assert_eq!(res.status, 200);
        ids.push(res.header("x-request-id").unwrap().to_owned());
    }
    for id in &ids {
        for path in [
            format!("/bins/{bin}?req={id}"),
            format!("/bins/{bin}/requests/{id}"),
        ] {
            let html = assert_page(&server.get(&path), 200);
            assert!(!html.contains("<script>alert"), "{path}: {html}");
            assert!(!html.contains("<img"), "{path}: {html}");
            assert!(!html.contains("<x "), "{path}: {html}");
        }
    }
    let html = server
        .get(&format!("/bins/{bin}/requests/{}", ids[0]))
        .text();
    assert!(html.contains(
        "<span class=\"part-name mono\" title=\"Field name\">&#60;script&#62;alert(&#39;pname&#39;)&#60;/script&#62;</span>"
    ), "{html}");
    assert!(html.contains("&#60;img src=x onerror=alert(&#39;fname&#39;)&#62;.png"));
    assert!(html.contains("text/html&#34;&#62;&#60;script&#62;alert(&#39;ptype&#39;)"));
    assert!(html.contains(
        "<pre class=\"code\">&#60;script&#62;alert(&#39;part&#39;)&#60;/script&#62;</pre>"
    ));
    let html = server
        .get(&format!("/bins/{bin}/requests/{}", ids[1]))
        .text();
    assert!(
        html.contains("&#60;x onload=&#34;alert(&#39;xml&#39;)&#34;&#62;\n  &#60;script&#62;"),
        "the XML is re-indented, and text: {html}"
    );
}

#[test]
fn request_page_shows_decoded_pretty_and_parts_views() {
    use crate::bodies::made_with;
    let server = Server::start(&["--max-decoded-bytes", "65536"]);
    let bin = server.create_bin();
    let send = |headers: &[(&str, &str)], body: &[u8]| {
        let res = server.request("POST", &format!("/r/{bin}/v"), headers, body);
        assert_eq!(res.status, 200);
        res.header("x-request-id").unwrap().to_owned()
    };
    let page = |id: &str| assert_page(&server.get(&format!("/bins/{bin}/requests/{id}")), 200);

    // gzip JSON, decoded, with its \u escapes shown as characters in Pretty only.
    let json = br#"{"name":"J\u00fcrgen","n":1}"#;
    let Some(gz) = made_with("gzip", "gzip -c", json) else {
        return;
    };
    let id = send(
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        &gz,
    );
    let html = page(&id);
    assert!(
        html.contains(&format!(
            "Decoded from gzip: {} → {} bytes.",
            gz.len(),
            json.len()
        )),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"j-str\">&#34;Jürgen&#34;</span>"),
        "{html}"
    );
    assert!(html.contains("J\\u00fcrgen"), "Raw keeps the escape");
    assert!(html.contains("data-view=\"As sent (hex)\""));
    assert!(html.contains("00000000  1f 8b"));

    // A bomb: 10 MB of zeros through zstd, cut at the 64 KiB limit, and the page stays small.
    let Some(bomb) = made_with("zstd", "head -c 10000000 /dev/zero | zstd -c -q", b"") else {
        return;
    };
    let id = send(&[("Content-Encoding", "zstd")], &bomb);
    let html = page(&id);
    assert!(
        html.contains("Decoded from zstd, cut at 65,536 bytes"),
        "{html}"
    );
    assert!(html.contains("decompression bomb"));
    assert!(html.len() < 300 * 1024, "{} bytes of HTML", html.len());

    // Bytes that are not what the header says: shown as sent, with the reason.
    let id = send(&[("Content-Encoding", "br")], b"\x00not brotli");
    let html = page(&id);
    assert!(html.contains("Content-Encoding not undone (br: "), "{html}");

    // Multipart: parts listed with their downloads, text previewed, binary as hex.
    let mut body = b"--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHello\r\n\
                     --b\r\nContent-Disposition: form-data; name=\"pic\"; filename=\"p.png\"\r\n\
                     Content-Type: image/png\r\n\r\n"
        .to_vec();
    body.extend(b"\x89PNG\r\n\x1a\n\x00\x01");
    body.extend(b"\r\n--b--\r\n");
    let id = send(
        &[("Content-Type", "multipart/form-data; boundary=b")],
        &body,
    );
    let html = page(&id);
    assert!(
        html.contains("<span class=\"count\">multipart</span>"),
        "{html}"
    );
    assert!(html.contains("data-view=\"Parts\""));
    assert!(html.contains("<span class=\"part-name mono\" title=\"Field name\">title</span>"));
    assert!(html.contains("<pre class=\"code\">Hello</pre>"));
    assert!(html.contains("<span class=\"part-file mono\" title=\"File name\">p.png</span>"));
    assert!(
        html.contains("<span class=\"part-type mono\" title=\"Content-Type\">image/png</span>")
    );
    assert!(html.contains("<pre class=\"code hex\">00000000  89 50 4e 47 0d 0a 1a 0a  00 01"));
    for n in 0..2 {
        let href = format!("/api/bins/{bin}/requests/{id}/body/parts/{n}");
        assert!(
            html.contains(&format!("href=\"{href}\" download>Download</a>")),
            "{html}"
        );
        assert_eq!(server.get(&href).status, 200);
    }
    // The pane beside the list shows the parts too.
    let pane = assert_page(&server.get(&format!("/bins/{bin}?req={id}")), 200);
    assert!(pane.contains("data-view=\"Parts\""));

    // XML, re-indented.
    let id = send(
        &[("Content-Type", "application/xml")],
        b"<?xml version=\"1.0\"?><order id=\"7\"><item>tea</item></order>",
    );
    let html = page(&id);
    assert!(
        html.contains(
            "&#60;?xml version=&#34;1.0&#34;?&#62;\n&#60;order id=&#34;7&#34;&#62;\n  \
             &#60;item&#62;tea&#60;/item&#62;\n&#60;/order&#62;"
        ),
        "{html}"
    );
    assert!(html.contains("<span class=\"count\">XML</span>"));
}
