//! The inspector in a real browser (headless Chromium, see `browser.rs`): a bin created by
//! clicking, requests sent by a real HTTP client appearing live, their detail, the keyboard,
//! an XSS corpus, and screenshots at desktop and phone width kept under `target/ui-artifacts/`.
//!
//! Without Chromium these tests skip loudly, except under `CI=true`, where they fail.

use serde_json::{Value, json};

use crate::browser::{Browser, Page};
use crate::util::Server;

const DESKTOP: (u32, u32) = (1280, 800);
const PHONE: (u32, u32) = (390, 844);

/// Sends exact bytes as one request; asserts 200 and returns the request id.
fn send(server: &Server, head: &str, body: &[u8]) -> String {
    let mut raw = head.replace('\n', "\r\n").into_bytes();
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    raw.extend_from_slice(body);
    let res = server.raw(&raw);
    assert_eq!(res.status, 200, "capture failed: {}", res.text());
    res.header("x-request-id").expect("x-request-id").to_owned()
}

fn row_selector(id: &str) -> String {
    format!("document.querySelector('#requests li[data-id=\"{id}\"]')")
}

fn detail_shows(id: &str) -> String {
    format!("document.querySelector('#detail article.detail[data-req=\"{id}\"]')")
}

/// The page did not reload since `mark_document` (live updates, not navigation).
fn mark_document(page: &Page<'_>) {
    page.eval("window.__sameDocument = 'yes'");
}

fn assert_same_document(page: &Page<'_>) {
    assert_eq!(
        page.eval("window.__sameDocument || null"),
        json!("yes"),
        "the page reloaded"
    );
}

/// Problems the page reported (exceptions, CSP violations, console errors, failed loads).
fn assert_no_problems(page: &Page<'_>) {
    let problems = page.problems();
    assert!(
        problems.is_empty(),
        "the page reported:\n{}",
        problems.join("\n")
    );
}

fn assert_fits_width(page: &Page<'_>, what: &str) {
    let widths = page.eval("[document.documentElement.scrollWidth, window.innerWidth]");
    assert!(
        widths[0].as_u64() <= widths[1].as_u64(),
        "{what}: the page is wider than the screen ({widths}), so it scrolls sideways"
    );
}

#[test]
fn ui_create_bin_watch_requests_arrive_live_and_inspect_them() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    page.goto(&server.url("/"));
    page.screenshot("home-desktop");

    // Create a bin by clicking, as a user does.
    page.click_and_wait("form.create button[type=submit]");
    let path = page.eval("location.pathname");
    let bin = path
        .as_str()
        .unwrap()
        .strip_prefix("/bins/")
        .unwrap()
        .to_owned();
    let capture_url = page.eval("document.querySelector('#capture-url').value");
    assert_eq!(capture_url, json!(server.url(&format!("/r/{bin}"))));
    assert!(page.text("#requests-title").is_some());
    assert!(
        page.text("#waiting")
            .unwrap()
            .contains("Waiting for the first request")
    );
    page.wait_for(
        "document.querySelector('.live') && document.querySelector('.live').textContent === 'live'",
        "the event stream to open",
    );
    page.screenshot("bin-empty-desktop");
    mark_document(&page);

    // A JSON webhook with a query, a subpath and a duplicated header, from a raw socket.
    let body = br#"{"type":"invoice.paid","data":{"amount":1250,"paid":true,"note":null}}"#;
    let id1 = send(
        &server,
        &format!(
            "POST /r/{bin}/hooks/stripe?b=2&a=1&a=x+y HTTP/1.1\nHost: {}\nX-Dup: one\n\
             Content-Type: application/json\nx-dup: two\nConnection: close\n",
            server.addr
        ),
        body,
    );
    page.wait_for(
        &row_selector(&id1),
        "the first request to appear in the list",
    );
    // The first arrival replaces the empty state by its detail, still without a reload.
    page.wait_for(&detail_shows(&id1), "the first request's detail");
    assert_same_document(&page);
    assert!(page.eval("document.querySelector('#waiting') === null") == json!(true));
    assert_eq!(page.text("#count").unwrap(), "1");

    let title = page.text("#detail-title").unwrap();
    assert!(title.starts_with("POST"), "{title}");
    assert!(
        title.contains(&format!("/r/{bin}/hooks/stripe?b=2&a=1&a=x+y")),
        "{title}"
    );
    assert_eq!(
        page.table("#query-table"),
        vec![vec!["b", "2"], vec!["a", "1"], vec!["a", "x y"]]
    );
    assert_eq!(
        page.table("#headers-table"),
        vec![
            vec!["Host".to_owned(), server.addr.to_string()],
            vec!["X-Dup".into(), "one".into()],
            vec!["Content-Type".into(), "application/json".into()],
            vec!["x-dup".into(), "two".into()],
            vec!["Connection".into(), "close".into()],
            vec!["Content-Length".into(), body.len().to_string()],
        ],
        "headers in received order, duplicates kept"
    );
    let pretty = page
        .text("#detail .tab-panel[data-view=Pretty] pre")
        .unwrap();
    assert_eq!(
        pretty,
        "{\n  \"type\": \"invoice.paid\",\n  \"data\": {\n    \"amount\": 1250,\n    \"paid\": true,\n    \"note\": null\n  }\n}"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#detail .json .j-key').length"),
        json!(5)
    );
    // The Raw tab (no JavaScript involved: radio + CSS) shows the exact bytes.
    let raw_visible = "getComputedStyle(document.querySelector('#detail .tab-panel[data-view=Raw]')).display !== 'none'";
    assert_eq!(page.eval(raw_visible), json!(false));
    page.click("#detail label[for=body-tab-2]");
    page.wait_for(raw_visible, "the Raw tab to show");
    assert_eq!(
        page.text("#detail .tab-panel[data-view=Raw] pre").unwrap(),
        std::str::from_utf8(body).unwrap()
    );

    // A second request slides in on top; the detail stays on what the user is reading.
    let id2 = send(
        &server,
        &format!(
            "PUT /r/{bin}/form HTTP/1.1\nHost: {}\n\
             Content-Type: application/x-www-form-urlencoded\nConnection: close\n",
            server.addr
        ),
        b"name=Ada+Lovelace&lang=en&lang=fr",
    );
    page.wait_for(
        &format!("document.querySelector('#requests li').dataset.id === '{id2}'"),
        "the second request on top of the list",
    );
    assert_eq!(page.eval(&format!("!!{}", detail_shows(&id1))), json!(true));
    assert_eq!(page.text("#count").unwrap(), "2");
    assert_same_document(&page);

    // Keyboard: k moves up to the newer request, j back down.
    page.press("k");
    page.wait_for(&detail_shows(&id2), "k to select the newer request");
    assert_eq!(
        page.table("#detail .form-fields"),
        vec![
            vec!["name", "Ada Lovelace"],
            vec!["lang", "en"],
            vec!["lang", "fr"]
        ]
    );
    assert!(page.text("#detail-title").unwrap().starts_with("PUT"));
    page.press("j");
    page.wait_for(&detail_shows(&id1), "j to select the older request");
    assert_eq!(
        page.eval(&format!(
            "document.querySelector('#requests li[data-id=\"{id1}\"] a').getAttribute('aria-current')"
        )),
        json!("true")
    );
    assert_same_document(&page);

    // With the pointer resting on a row, a new arrival does not move that row: it waits behind
    // a "new requests" button until the pointer leaves the list.
    let row1 = format!("#requests li[data-id=\"{id1}\"]");
    page.settle();
    let before = page.rect(&row1);
    let (x, y) = (
        before["x"].as_f64().unwrap() + 40.0,
        before["y"].as_f64().unwrap() + 10.0,
    );
    page.mouse_move(x, y);
    let id3 = send(
        &server,
        &format!(
            "DELETE /r/{bin}/items/7 HTTP/1.1\nHost: {}\nConnection: close\n",
            server.addr
        ),
        b"",
    );
    page.wait_for(
        "document.querySelector('#jump-new') && !document.querySelector('#jump-new').hidden",
        "the new-requests button",
    );
    assert_eq!(page.text("#jump-new").unwrap(), "↑ 1 new request");
    let after = page.rect(&row1);
    assert!(
        (after["y"].as_f64().unwrap() - before["y"].as_f64().unwrap()).abs() < 0.5,
        "the row under the pointer moved: {before} -> {after} {}",
        page.eval("JSON.stringify({anims: document.getAnimations().map(a => [a.effect.target.className, a.currentTime, a.playState]), wrap: document.querySelector('.jump-wrap').getBoundingClientRect(), scroll: window.scrollY, pane: document.querySelector('.list-pane').scrollTop, list: document.querySelector('#requests').getBoundingClientRect()})")
    );
    page.screenshot("bin-desktop-held");
    assert_eq!(page.text("#count").unwrap(), "3");
    page.mouse_move(900.0, 400.0);
    page.wait_for(
        &format!("document.querySelector('#requests li').dataset.id === '{id3}'"),
        "the held request to be shown once the pointer left the list",
    );
    assert_eq!(
        page.eval("document.querySelector('#jump-new').hidden"),
        json!(true)
    );
    assert_same_document(&page);
    assert_no_problems(&page);
    page.settle();
    page.screenshot("bin-desktop");
    page.color_scheme("dark");
    page.screenshot("bin-desktop-dark");
    page.color_scheme("light");

    // The request on its own page.
    page.goto(&server.url(&format!("/bins/{bin}/requests/{id1}")));
    assert_eq!(
        page.table("#headers-table").len(),
        6,
        "the request page shows the same headers"
    );
    page.screenshot("request-desktop");

    // Phone width: the list; a tap opens the request alone, with a way back.
    page.viewport(PHONE.0, PHONE.1);
    page.goto(&server.url(&format!("/bins/{bin}")));
    assert_fits_width(&page, "bin page on a phone");
    let shown = |sel: &str| {
        page.eval(&format!(
            "getComputedStyle(document.querySelector('{sel}')).display !== 'none'"
        ))
    };
    assert_eq!(shown(".list-pane"), json!(true));
    assert_eq!(shown("#detail .detail"), json!(false));
    page.screenshot("bin-phone");
    page.click_and_wait(&format!("#requests li[data-id=\"{id2}\"] a"));
    assert_eq!(shown(".list-pane"), json!(false));
    assert_eq!(shown("#detail .detail"), json!(true));
    assert_eq!(shown(".back-to-list"), json!(true));
    assert_fits_width(&page, "picked request on a phone");
    page.screenshot("bin-phone-picked");
    page.goto(&server.url(&format!("/bins/{bin}/requests/{id1}")));
    assert_fits_width(&page, "request page on a phone");
    page.screenshot("request-phone");
    page.color_scheme("dark");
    page.screenshot("request-phone-dark");
    assert_no_problems(&page);
}

/// Payloads that try to set `window.__pwned`. If any of them ever ran, the page would have
/// treated captured bytes as markup.
struct Corpus {
    /// (request id, a text that must appear literally on its page)
    sent: Vec<(String, String)>,
}

fn send_corpus(server: &Server, bin: &str) -> Corpus {
    let host = server.addr.to_string();
    let mut sent = Vec::new();
    let mut add = |id: String, visible: &str| sent.push((id, visible.to_owned()));

    // Markup in headers (a duplicate too), in the query, and in the path. Raw `"`, `<` and `>`
    // cannot reach a request target (the server answers 400), so those are percent-encoded
    // there; a raw `'` tries to break out of attributes.
    let id = send(
        server,
        &format!(
            "GET /r/{bin}/%3Cscript%3Ewindow.__pwned='path'%3C/script%3E\
             ?q=%3Cscript%3Ewindow.__pwned%3D'query'%3C%2Fscript%3E&u=javascript:window.__pwned='q2'&x='onmouseover='window.__pwned=1 HTTP/1.1\n\
             Host: {host}\n\
             X-Evil: <script>window.__pwned='header'</script>\n\
             X-Img: <img src=x onerror=\"window.__pwned='img'\">\n\
             X-Img: \"><svg onload=window.__pwned='svg-attr'>\n\
             Referer: javascript:window.__pwned='js-url'\n\
             Connection: close\n"
        ),
        b"",
    );
    add(id.clone(), "<script>window.__pwned='header'</script>");
    add(id.clone(), "<img src=x onerror=\"window.__pwned='img'\">");
    add(id.clone(), "<script>window.__pwned='query'</script>");
    add(id, "javascript:window.__pwned='js-url'");

    // JSON with markup in keys and string values.
    let json_body = r#"{"html":"<script>window.__pwned='json'</script>","</span><img src=x onerror=window.__pwned='key'>":1,"link":"javascript:window.__pwned='link'"}"#;
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/json HTTP/1.1\nHost: {host}\nContent-Type: application/json\n\
             Connection: close\n"
        ),
        json_body.as_bytes(),
    );
    add(id.clone(), "\"<script>window.__pwned='json'</script>\"");
    add(id, "\"</span><img src=x onerror=window.__pwned='key'>\"");

    // Form fields with markup in names and values.
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/form HTTP/1.1\nHost: {host}\n\
             Content-Type: application/x-www-form-urlencoded\nConnection: close\n"
        ),
        b"a=%3Cscript%3Ewindow.__pwned%3D'form'%3C%2Fscript%3E&%3Cimg+src%3Dx+onerror%3Dwindow.__pwned%3D'fkey'%3E=1",
    );
    add(id.clone(), "<script>window.__pwned='form'</script>");
    add(id, "<img src=x onerror=window.__pwned='fkey'>");

    // An HTML page and an SVG as bodies, with a Content-Type that carries markup too.
    let html = br#"<html><body><script>window.__pwned='html'</script><img src=x onerror="window.__pwned='html-img'"><a href="javascript:window.__pwned='a'">x</a></body></html>"#;
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/html HTTP/1.1\nHost: {host}\n\
             Content-Type: text/html; x=\"<script>window.__pwned='ct'</script>\"\nConnection: close\n"
        ),
        html,
    );
    add(id.clone(), "<script>window.__pwned='html'</script>");
    add(id, "x=\"<script>window.__pwned='ct'</script>\"");
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned='svg'"><script>window.__pwned='svg2'</script></svg>"#;
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/svg HTTP/1.1\nHost: {host}\nContent-Type: image/svg+xml\nConnection: close\n"
        ),
        svg,
    );
    add(id, "onload=\"window.__pwned='svg'\"");

    // A multipart upload whose part name, file name, type and content carry markup, and an
    // XML body (shown re-indented) with markup in tags, attributes and CDATA.
    let multipart = "--XX\r\nContent-Disposition: form-data; \
         name=\"<img src=x onerror=window.__pwned='pname'>\"; \
         filename=\"<svg onload=window.__pwned='fname'>.png\"\r\n\
         Content-Type: text/html\"><script>window.__pwned='ptype'</script>\r\n\r\n\
         <script>window.__pwned='part'</script>\r\n--XX--\r\n";
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/multipart HTTP/1.1\nHost: {host}\n\
             Content-Type: multipart/form-data; boundary=XX\nConnection: close\n"
        ),
        multipart.as_bytes(),
    );
    add(id.clone(), "<img src=x onerror=window.__pwned='pname'>");
    add(id.clone(), "<svg onload=window.__pwned='fname'>.png");
    add(id, "<script>window.__pwned='part'</script>");
    let xml = "<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\" \
               onload=\"window.__pwned='xml'\"><script>window.__pwned='xml2'</script>\
               <![CDATA[<img src=x onerror=window.__pwned='cdata'>]]></svg>";
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/xml HTTP/1.1\nHost: {host}\nContent-Type: application/xml\n\
             Connection: close\n"
        ),
        xml.as_bytes(),
    );
    add(id.clone(), "onload=\"window.__pwned='xml'\">\n  <script>");
    add(id, "<![CDATA[<img src=x onerror=window.__pwned='cdata'>]]>");

    // Broken UTF-8 in the body and in a header value (obs-text).
    let mut head =
        format!("POST /r/{bin}/bytes HTTP/1.1\nHost: {host}\nContent-Type: text/plain\nX-Bytes: ")
            .replace('\n', "\r\n")
            .into_bytes();
    head.extend_from_slice(
        b"\xff\xfe<b onmouseover=window.__pwned='hdr-bytes'>x</b>\r\nConnection: close\r\n",
    );
    let body = b"\xff\xfe<script>window.__pwned='bin'</script>\xc3\x28";
    head.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    head.extend_from_slice(body);
    let res = server.raw(&head);
    assert_eq!(res.status, 200, "{}", res.text());
    let id = res.header("x-request-id").unwrap().to_owned();
    add(
        id.clone(),
        "<b onmouseover=window.__pwned='hdr-bytes'>x</b>",
    );
    add(id, "|..<script>window|");

    // One 10,000-character line, and a 1 MiB body.
    let long = format!("{}<svg onload=window.__pwned='long'>", "A".repeat(10_000));
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/long HTTP/1.1\nHost: {host}\nContent-Type: text/plain\nConnection: close\n"
        ),
        long.as_bytes(),
    );
    add(id, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    let big: String = "<script>window.__pwned='big'</script>\n"
        .repeat(1 << 20)
        .chars()
        .take(1 << 20)
        .collect();
    let id = send(
        server,
        &format!(
            "POST /r/{bin}/big HTTP/1.1\nHost: {host}\nContent-Type: text/html\nConnection: close\n"
        ),
        big.as_bytes(),
    );
    add(id, "KiB of 1.0 MiB. ");
    Corpus { sent }
}

/// Nothing captured became markup on the current page, and nothing ran.
fn assert_inert(page: &Page<'_>, what: &str) {
    let report = page.eval(
        r#"(() => ({
            pwned: window.__pwned === undefined ? null : String(window.__pwned),
            scripts: Array.from(document.scripts).map(s => s.getAttribute('src')),
            injected: document.querySelectorAll('img, svg, iframe, object, embed, b, style, link[rel=stylesheet]:not([href^="/static/"])').length,
            handlers: Array.from(document.querySelectorAll('*')).flatMap(el => Array.from(el.attributes).filter(a => a.name.startsWith('on')).map(a => el.tagName + ' ' + a.name)),
            jsLinks: document.querySelectorAll('a[href^="javascript:" i], [src^="javascript:" i]').length,
        }))()"#,
    );
    assert_eq!(
        report["pwned"],
        Value::Null,
        "{what}: injected script ran: {report}"
    );
    let scripts = report["scripts"].as_array().unwrap();
    assert!(
        scripts.len() == 1
            && scripts[0]
                .as_str()
                .unwrap()
                .starts_with("/static/app.js?v="),
        "{what}: unexpected scripts {report}"
    );
    assert_eq!(
        report["injected"],
        json!(0),
        "{what}: injected elements {report}"
    );
    assert_eq!(
        report["handlers"],
        json!([]),
        "{what}: event handler attributes {report}"
    );
    assert_eq!(
        report["jsLinks"],
        json!(0),
        "{what}: javascript: links {report}"
    );
    let csp: Vec<String> = page
        .problems()
        .into_iter()
        .filter(|p| p.contains("Content Security Policy") || p.contains("exception"))
        .collect();
    assert!(csp.is_empty(), "{what}: {}", csp.join("\n"));
}

#[test]
fn ui_xss_corpus_stays_text_live_and_server_rendered() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let bin = server.create_bin();
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    page.goto(&server.url(&format!("/bins/{bin}")));
    page.wait_for(
        "document.querySelector('.live') && document.querySelector('.live').textContent === 'live'",
        "the event stream to open",
    );
    mark_document(&page);

    // Sent while the page is open: the rows are built by the page's script from the stream.
    let corpus = send_corpus(&server, &bin);
    let ids: Vec<&String> = {
        let mut ids: Vec<&String> = corpus.sent.iter().map(|(id, _)| id).collect();
        ids.dedup();
        ids
    };
    page.wait_for(
        &format!(
            "document.querySelectorAll('#requests li').length === {}",
            ids.len()
        ),
        "every corpus request in the live list",
    );
    assert_same_document(&page);
    assert_inert(&page, "live list");
    let targets = page.eval(
        "Array.from(document.querySelectorAll('#requests .target')).map(t => t.textContent).join('\\n')",
    );
    assert!(
        targets
            .as_str()
            .unwrap()
            .contains("/%3Cscript%3Ewindow.__pwned='path'%3C/script%3E"),
        "{targets}"
    );

    // Every request, in the pane beside the list and on its own page.
    for (id, visible) in &corpus.sent {
        page.goto(&server.url(&format!("/bins/{bin}?req={id}")));
        assert_inert(&page, &format!("bin page with request {id}"));
        let everything = page.eval("document.body.textContent");
        assert!(
            everything.as_str().unwrap().contains(visible.as_str()),
            "request {id}: {visible:?} is not shown as text"
        );
        page.goto(&server.url(&format!("/bins/{bin}/requests/{id}")));
        assert_inert(&page, &format!("request page {id}"));
    }
    page.screenshot("xss-request-desktop");

    // On a phone, the 10,000-character line wraps instead of widening the page.
    page.viewport(PHONE.0, PHONE.1);
    let long = &corpus.sent[corpus.sent.len() - 2].0;
    page.goto(&server.url(&format!("/bins/{bin}/requests/{long}")));
    assert_fits_width(&page, "10k-character line on a phone");
    page.screenshot("xss-long-line-phone");
    let big = &corpus.sent[corpus.sent.len() - 1].0;
    page.goto(&server.url(&format!("/bins/{bin}/requests/{big}")));
    assert_fits_width(&page, "1 MiB body on a phone");
    assert_inert(&page, "1 MiB body");
}

#[test]
fn ui_pages_work_without_javascript() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    page.call(
        "Emulation.setScriptExecutionDisabled",
        json!({"value": true}),
    );
    page.goto(&server.url("/"));
    page.click_and_wait("form.create button[type=submit]");
    let bin = page
        .eval("location.pathname")
        .as_str()
        .unwrap()
        .strip_prefix("/bins/")
        .unwrap()
        .to_owned();
    // The script did not run: no live badge, copy buttons stay hidden.
    assert_eq!(
        page.eval("document.querySelector('.live') === null"),
        json!(true)
    );
    assert_eq!(
        page.eval("Array.from(document.querySelectorAll('button.copy')).every(b => b.hidden)"),
        json!(true)
    );
    let host = server.addr;
    let json_id = send(
        &server,
        &format!(
            "POST /r/{bin}/a HTTP/1.1\nHost: {host}\nContent-Type: application/json\nConnection: close\n"
        ),
        br#"{"a":[1,2]}"#,
    );
    let text_id = send(
        &server,
        &format!(
            "POST /r/{bin}/b?x=1 HTTP/1.1\nHost: {host}\nContent-Type: text/plain\nConnection: close\n"
        ),
        b"plain words",
    );
    // Without live updates, a reload shows them; the newest is selected.
    page.goto(&server.url(&format!("/bins/{bin}")));
    assert_eq!(
        page.eval("document.querySelectorAll('#requests li').length"),
        json!(2)
    );
    page.wait_for(&detail_shows(&text_id), "the newest request selected");
    // A plain link selects another request.
    page.click_and_wait(&format!("#requests li[data-id=\"{json_id}\"] a"));
    page.wait_for(&detail_shows(&json_id), "the clicked request");
    assert_eq!(
        page.eval("location.search"),
        json!(format!("?req={json_id}"))
    );
    // Tabs are radio buttons and CSS.
    let raw_visible = "getComputedStyle(document.querySelector('#detail .tab-panel[data-view=Raw]')).display !== 'none'";
    assert_eq!(page.eval(raw_visible), json!(false));
    page.click("#detail label[for=body-tab-2]");
    page.wait_for(raw_visible, "the Raw tab without JavaScript");
    assert_eq!(
        page.text("#detail .tab-panel[data-view=Raw] pre").unwrap(),
        r#"{"a":[1,2]}"#
    );
    // Forms post and come back: delete one request (no confirm dialog without JavaScript).
    page.click_and_wait("#detail .detail-actions form button");
    assert_eq!(
        page.eval("document.querySelectorAll('#requests li').length"),
        json!(1)
    );
    page.screenshot("bin-desktop-nojs");
    assert_no_problems(&page);
}

#[test]
fn ui_copy_as_curl_follows_the_target_field_and_remembers_it() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let bin = server.create_bin();
    let head = format!(
        "POST /r/{bin}/hooks/stripe?x=1 HTTP/1.1\nHost: h\nX-Sig: t=1,v1=abc\nConnection: close\n"
    );
    let id = send(&server, &head, b"{\"a\": \"it's\"}\n");
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    page.goto(&server.url(&format!("/bins/{bin}/requests/{id}")));
    let command = || page.text("#curl-command").unwrap_or_default();
    // Server-rendered: aimed at the bin itself, exactly what the API answers.
    let api = server
        .get(&format!("/api/bins/{bin}/requests/{id}/curl"))
        .text();
    assert_eq!(command().trim(), api.trim());

    // Typing a target and pressing Update rewrites it in place (fetch, no navigation).
    mark_document(&page);
    page.eval("document.querySelector('#curl-target').value = 'http://localhost:3000/webhooks'");
    page.eval("document.querySelector('#curl-target').form.requestSubmit()");
    page.wait_for(
        "document.querySelector('#curl-command').textContent.includes('http://localhost:3000/webhooks/hooks/stripe?x=1')",
        "the command aimed at the target",
    );
    assert_same_document(&page);
    let aimed = server
        .get(&format!(
            "/api/bins/{bin}/requests/{id}/curl?target=http%3A%2F%2Flocalhost%3A3000%2Fwebhooks"
        ))
        .text();
    assert_eq!(command().trim(), aimed.trim());

    // The target is remembered by this browser: the next page comes up aimed at it.
    page.goto(&server.url(&format!("/bins/{bin}/requests/{id}")));
    page.wait_for(
        "document.querySelector('#curl-command').textContent.includes('localhost:3000/webhooks')",
        "the remembered target",
    );
    assert_no_problems(&page);
}

/// Issue 11, each step of the attack in a real browser, on the worst setup: captures and the
/// inspector on one origin (no `--capture-url`).
#[test]
fn ui_a_custom_response_cannot_act_on_the_inspectors_origin() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let host = server.addr.to_string();
    let victim = server.create_bin();
    let victim_req = send(
        &server,
        &format!("POST /r/{victim}/hooks/pay HTTP/1.1\nHost: {host}\nConnection: close\n"),
        b"{\"secret\": \"card\"}",
    );

    // The attacker's service worker script, as a custom response: with the header that widened
    // its scope to the whole site, the spec is refused; without it, it is stored.
    let sw_code = "self.addEventListener('fetch', e => fetch('/r/ATTACKER/leak?u=' + encodeURIComponent(e.request.url)))";
    let refused = server.post_json(
        "/api/bins",
        &json!({"response": {"headers": [["Content-Type", "text/javascript"], ["Service-Worker-Allowed", "/"]], "body": sw_code}}).to_string(),
    );
    refused.assert_error(422, "invalid_response");
    assert!(
        refused.text().contains("Service-Worker-Allowed"),
        "{}",
        refused.text()
    );
    let sw_bin = server.create_bin_with(
        &json!({"response": {"headers": [["Content-Type", "text/javascript"]], "body": sw_code}})
            .to_string(),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Step 1: a custom text/html response with a script, opened in the browser. The script
    // would mark the page, plant a copy-as-curl target and register the worker.
    let html = format!(
        "<!doctype html><title>harmless</title><p id=p>page</p><script>\
         window.__pwned = 'script ran'; document.title = 'pwned';\
         try {{ localStorage.setItem('hookbin.curlTarget', 'https://evil.example/collect'); }} catch (e) {{}}\
         navigator.serviceWorker.register('/r/{sw_bin}/sw.js', {{scope: '/r/{sw_bin}/'}});\
         </script>"
    );
    let page_bin = server.create_bin_with(
        &json!({"response": {"headers": [["Content-Type", "text/html; charset=utf-8"]], "body": html}})
            .to_string(),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    page.goto(&server.url(&format!("/r/{page_bin}/landing")));
    assert_eq!(
        page.text("#p").as_deref(),
        Some("page"),
        "the page itself is shown"
    );
    assert_eq!(
        page.eval("window.__pwned === undefined"),
        json!(true),
        "the script ran"
    );
    assert_eq!(page.eval("document.title"), json!("harmless"));
    // It is in a sandbox: an opaque origin without the inspector's storage.
    assert_eq!(page.eval("self.origin"), json!("null"));
    assert_eq!(
        page.eval(
            "(() => { try { localStorage.length; return 'open'; } catch (e) { return e.name; } })()"
        ),
        json!("SecurityError")
    );
    let problems = page.problems().join("\n");
    assert!(
        problems.contains("allow-scripts"),
        "the browser did not report blocking the script:\n{problems}"
    );

    // Step 2: register the worker from a page of the inspector's origin (as any script there
    // would): the server refuses to serve the script, whatever the scope.
    page.goto(&server.url(&format!("/bins/{victim}")));
    for scope in [format!("/r/{sw_bin}/"), "/".to_owned()] {
        let outcome = page.eval(&format!(
            "navigator.serviceWorker.register('/r/{sw_bin}/sw.js', {{scope: '{scope}'}})\
             .then(() => 'registered', e => 'refused: ' + e.message)"
        ));
        assert!(
            outcome.as_str().unwrap().starts_with("refused"),
            "scope {scope}: {outcome}"
        );
    }
    assert_eq!(
        page.eval("navigator.serviceWorker.getRegistrations().then(r => r.length)"),
        json!(0)
    );
    assert_eq!(
        server.get(&format!("/api/bins/{sw_bin}")).json()["request_count"],
        0,
        "the worker fetches were not recorded either"
    );

    // Step 3: a poisoned copy-as-curl target. Whatever was planted in this origin's storage,
    // the request page only uses what it wrote itself, for this bin, and valid. (A new tab of
    // the same browser: same storage, and none of the errors reported above.)
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    page.goto(&server.url("/"));
    let key = format!("hookbin.curlTarget:{victim}");
    let poisons = [
        (
            "hookbin.curlTarget".to_owned(),
            "https://evil.example/collect".to_owned(),
        ),
        (key.clone(), "https://evil.example/collect".to_owned()),
        (
            key.clone(),
            json!({"bin": "aaaaaaaaaaaaaaaaaaaa", "target": "https://evil.example/"}).to_string(),
        ),
        (
            key.clone(),
            json!({"bin": victim, "target": "javascript:alert(1)"}).to_string(),
        ),
        (
            key.clone(),
            json!({"bin": victim, "target": "http://me:pw@evil.example/"}).to_string(),
        ),
    ];
    let request_page = server.url(&format!("/bins/{victim}/requests/{victim_req}"));
    let server_command = server
        .get(&format!("/api/bins/{victim}/requests/{victim_req}/curl"))
        .text();
    for (name, value) in &poisons {
        page.eval(&format!(
            "localStorage.setItem({}, {})",
            json!(name),
            json!(value)
        ));
        page.goto(&request_page);
        assert_eq!(
            page.eval("document.querySelector('#curl-target').value"),
            json!(""),
            "{name} = {value} was used"
        );
        assert_eq!(
            page.text("#curl-command").unwrap().trim(),
            server_command.trim()
        );
        assert_eq!(
            page.eval(&format!("localStorage.getItem({})", json!(name))),
            Value::Null,
            "{name} = {value} was kept"
        );
    }

    // What the user types is still remembered, for this bin only.
    page.eval("document.querySelector('#curl-target').value = 'http://localhost:3000/hooks'");
    page.eval("document.querySelector('#curl-target').form.requestSubmit()");
    page.wait_for(
        "document.querySelector('#curl-command').textContent.includes('http://localhost:3000/hooks/hooks/pay')",
        "the typed target",
    );
    page.goto(&request_page);
    page.wait_for(
        "document.querySelector('#curl-command').textContent.includes('http://localhost:3000/hooks/hooks/pay')",
        "the remembered target",
    );
    let other = server.create_bin();
    let other_req = send(
        &server,
        &format!("POST /r/{other} HTTP/1.1\nHost: {host}\nConnection: close\n"),
        b"x",
    );
    page.goto(&server.url(&format!("/bins/{other}/requests/{other_req}")));
    assert_eq!(
        page.eval("document.querySelector('#curl-target').value"),
        json!("")
    );
    assert_no_problems(&page);
}

/// Issue 11: a page of another site cannot create bins (or change anything) in the visitor's
/// name with a no-cors request, which the browser sends without asking.
#[test]
fn ui_another_sites_page_cannot_post_to_the_api() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let bin = server.create_bin();
    let page = browser.new_page(DESKTOP.0, DESKTOP.1);
    // A page of another site: http://localhost:PORT is not http://127.0.0.1:PORT. (Served by
    // this same server as a custom response, because Chromium keeps pages of public or unknown
    // origins from reaching loopback at all; its script is run through the DevTools protocol,
    // as its own would be sandboxed.)
    let elsewhere = server.create_bin_with(
        r#"{"response": {"headers": [["Content-Type", "text/html"]], "body": "<title>elsewhere</title>"}}"#,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    page.goto(&format!(
        "http://localhost:{}/r/{elsewhere}/page",
        server.addr.port()
    ));
    let target = server.url("");
    let sent = page.eval(&format!(
        "Promise.all([\
           fetch('{target}/api/bins', {{method: 'POST', mode: 'no-cors', body: '{{}}'}}),\
           fetch('{target}/bins', {{method: 'POST', mode: 'no-cors'}}),\
           fetch('{target}/bins/{bin}/delete', {{method: 'POST', mode: 'no-cors', \
             headers: {{'Content-Type': 'application/x-www-form-urlencoded'}}, body: 'x=1'}}),\
         ]).then(() => 'sent', e => 'failed: ' + e)"
    ));
    assert_eq!(sent, json!("sent"), "{}", page.problems().join("\n"));
    let metrics = server.get("/metrics").text();
    assert!(
        metrics.contains("hookbin_bins_created_total 2\n"),
        "a bin was created: {metrics}"
    );
    assert_eq!(server.get(&format!("/api/bins/{bin}")).status, 200);
    // The same requests from the server's own page do go through.
    page.goto(&server.url("/"));
    let created = page.eval("fetch('/api/bins', {method: 'POST'}).then(r => r.status)");
    assert_eq!(created, json!(201));
}
