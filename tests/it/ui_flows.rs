//! The inspector's daily flows in a real browser (headless Chromium, see `browser.rs`), at
//! desktop (1280x800) and phone (390x844) width: searching the list (in the URL, across a
//! reload, over live arrivals, a bad query explained in place).
//!
//! Without Chromium these tests skip loudly, except under `CI=true`, where they fail.

use serde_json::json;

use crate::browser::{Browser, Page};
use crate::util::Server;

const DESKTOP: (u32, u32) = (1280, 800);
const PHONE: (u32, u32) = (390, 844);

/// POSTs `body` to `/r/{bin}{subpath}` with a Content-Type; the request id.
fn send(server: &Server, bin: &str, subpath: &str, content_type: &str, body: &[u8]) -> String {
    let res = server.request(
        "POST",
        &format!("/r/{bin}{subpath}"),
        &[("Content-Type", content_type)],
        body,
    );
    assert_eq!(res.status, 200, "capture: {}", res.text());
    res.header("x-request-id").unwrap().to_owned()
}

/// The ids of the rows in the list, top to bottom.
fn listed(page: &Page<'_>) -> Vec<String> {
    serde_json::from_value(
        page.eval(
            "Array.from(document.querySelectorAll('#requests li.row')).map(li => li.dataset.id)",
        ),
    )
    .unwrap()
}

/// Types `q` into the search box and submits it, as a user does (Enter in the field).
fn search_for(page: &Page<'_>, q: &str) {
    let q = serde_json::to_string(q).unwrap();
    page.eval(&format!("document.querySelector('#q').value = {q}"));
    page.click_and_wait("#search button[type=submit]");
}

/// Problems the page reported, except the 400 status of a page that explains a bad search.
fn assert_no_problems(page: &Page<'_>) {
    assert_no_problems_but(page, &[]);
}

/// The same, also allowing problems that contain one of `expected`.
fn assert_no_problems_but(page: &Page<'_>, expected: &[&str]) {
    let problems: Vec<String> = page
        .problems()
        .into_iter()
        .filter(|p| !p.contains("status of 400"))
        .filter(|p| !expected.iter().any(|e| p.contains(e)))
        .collect();
    assert!(
        problems.is_empty(),
        "the page reported:\n{}",
        problems.join("\n")
    );
}

fn wait_live(page: &Page<'_>) {
    page.wait_for(
        "document.querySelector('.live') && document.querySelector('.live').textContent === 'live'",
        "the event stream to open",
    );
}

#[test]
fn ui_search_filters_the_list_survives_reload_and_applies_to_live_arrivals() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    for (name, (w, h)) in [("desktop", DESKTOP), ("phone", PHONE)] {
        let bin = server.create_bin();
        let paid = send(
            &server,
            &bin,
            "/stripe",
            "application/json",
            br#"{"type":"invoice.paid"}"#,
        );
        let other = send(&server, &bin, "/github", "text/plain", b"push to main");
        let page = browser.new_page(w, h);
        page.goto(&server.url(&format!("/bins/{bin}")));
        assert_eq!(listed(&page), [other.clone(), paid.clone()], "{name}");

        search_for(&page, "body:paid -path:/github");
        let search = page.eval("location.search");
        assert_eq!(
            search,
            json!("?q=body%3Apaid+-path%3A%2Fgithub"),
            "{name}: the filter is in the page URL"
        );
        assert_eq!(listed(&page), vec![paid.clone()], "{name}");
        assert!(
            page.text("#filter-note").unwrap().contains("body:paid"),
            "{name}"
        );

        // A reload keeps it: the box and the list.
        page.goto(page.eval("location.href").as_str().unwrap());
        assert_eq!(
            page.eval("document.querySelector('#q').value"),
            json!("body:paid -path:/github"),
            "{name}"
        );
        assert_eq!(listed(&page), vec![paid.clone()], "{name}");
        // Every row link keeps the search.
        let hrefs = page.eval(
            "Array.from(document.querySelectorAll('#requests a.row-link')).map(a => a.search)",
        );
        assert!(
            hrefs
                .as_array()
                .unwrap()
                .iter()
                .all(|h| h.as_str().unwrap().contains("q=body%3Apaid")),
            "{name}: {hrefs}"
        );
        page.screenshot(&format!("search-{name}"));

        // Live arrivals go through the same filter, on the server.
        wait_live(&page);
        page.eval("window.__sameDocument = 'yes'");
        let count_before: u64 = page.text("#count").unwrap().parse().unwrap();
        let hidden = send(&server, &bin, "/github", "text/plain", b"paid, but github");
        let shown = send(
            &server,
            &bin,
            "/stripe",
            "application/json",
            br#"{"type":"invoice.paid","n":2}"#,
        );
        page.wait_for(
            &format!("document.querySelector('#requests li[data-id=\"{shown}\"]')"),
            "the matching arrival to appear",
        );
        assert_eq!(listed(&page), [shown.clone(), paid.clone()], "{name}");
        assert!(!listed(&page).contains(&hidden));
        page.wait_for(
            &format!(
                "document.querySelector('#count').textContent === '{}'",
                count_before + 2
            ),
            "both arrivals to be counted",
        );
        assert!(
            page.text("#hidden-count")
                .unwrap()
                .contains("1 new request did not match"),
            "{name}"
        );
        assert_eq!(page.eval("window.__sameDocument || null"), json!("yes"));

        // A bad query: said in place, naming the term; nothing listed; the box keeps it.
        search_for(&page, "method:post body:\"unclosed");
        let error = page.text("#q-error").expect("an error next to the box");
        assert!(error.contains("body:\"unclosed"), "{name}: {error}");
        assert_eq!(
            page.eval("document.querySelector('#q').getAttribute('aria-invalid')"),
            json!("true")
        );
        assert!(listed(&page).is_empty(), "{name}");
        assert_eq!(
            page.eval("document.querySelector('#q').value"),
            json!("method:post body:\"unclosed")
        );
        page.screenshot(&format!("search-error-{name}"));

        // Clear brings every request back.
        page.click_and_wait("#clear-q");
        assert_eq!(page.eval("location.search"), json!(""));
        assert_eq!(listed(&page).len(), 4, "{name}");
        assert_no_problems(&page);
    }
}

/// A Stripe-signed request sent to the bin by `hookbin send` (timestamp: now); its id and the
/// signed timestamp.
fn send_stripe(server: &Server, bin: &str, secret: &str) -> (String, i64) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let run = crate::send::hookbin(&[
        "send",
        &server.url(&format!("/r/{bin}/stripe")),
        "--scheme",
        "stripe",
        "--secret",
        secret,
        "--timestamp",
        &t.to_string(),
        "--data",
        r#"{"type":"invoice.paid","amount":4200}"#,
    ]);
    assert_eq!(run.code, 0, "hookbin send: {}", run.stderr);
    let page = server
        .get(&format!("/api/bins/{bin}/requests?limit=1"))
        .json();
    (page["data"][0]["id"].as_str().unwrap().to_owned(), t)
}

/// Fills the verify form and submits it; waits for a verdict in `#verify-result` that was not
/// there before (the previous one is marked).
fn verify_in_place(page: &Page<'_>, secret: &str, tolerance: &str, at_capture: bool) -> String {
    page.eval("(() => { const r = document.querySelector('#verify-result'); if (r) r.dataset.old = '1'; })()");
    let (secret, tolerance) = (
        serde_json::to_string(secret).unwrap(),
        serde_json::to_string(tolerance).unwrap(),
    );
    page.eval(&format!(
        "(() => {{ document.querySelector('#verify-secret').value = {secret}; \
         document.querySelector('#verify-tolerance').value = {tolerance}; \
         document.querySelector('#verify-at-capture').checked = {at_capture}; }})()"
    ));
    page.click("#verify-form button[type=submit]");
    page.wait_for(
        "document.querySelector('#verify-result') && !document.querySelector('#verify-result').dataset.old && document.querySelector('#verify-result').innerText.trim()",
        "a verdict next to the form",
    );
    page.eval("document.querySelector('#verify-result .verdict').className")
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn ui_verify_answers_in_place_and_an_old_correct_signature_is_amber() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let secret = "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ";
    for (name, (w, h)) in [("desktop", DESKTOP), ("phone", PHONE)] {
        let bin = server.create_bin();
        let (id, t) = send_stripe(&server, &bin, secret);
        let page = browser.new_page(w, h);
        page.goto(&server.url(&format!("/bins/{bin}/requests/{id}")));
        page.eval("document.querySelector('#verify').scrollIntoView()");
        page.eval("window.__sameDocument = 'yes'");
        let scrolled = page.eval("window.scrollY").as_f64().unwrap();
        assert!(scrolled > 0.0, "{name}: the verify form is below the fold");

        assert_eq!(
            verify_in_place(&page, secret, "", false),
            "verdict ok",
            "{name}"
        );
        assert!(
            page.text("#verify-result")
                .unwrap()
                .contains("Valid signature")
        );
        assert_eq!(
            verify_in_place(&page, "whsec_d3Jvbmc=", "", false),
            "verdict bad"
        );
        assert!(
            page.text("#verify-result")
                .unwrap()
                .contains("Not a valid signature")
        );
        // No reload, no jump to the top: the verdict is next to the form, on screen.
        assert_eq!(
            page.eval("window.__sameDocument || null"),
            json!("yes"),
            "{name}"
        );
        let verdict = page.rect("#verify-result");
        let top = verdict["y"].as_f64().unwrap();
        assert!(
            top >= 0.0 && top < f64::from(h),
            "{name}: the verdict is off screen at y={top}"
        );

        // Older than a 2 s tolerance: amber, and right as of capture time.
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
        };
        // The clock itself is what this checks: wait for it to pass the tolerance.
        while now() <= t + 4 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert_eq!(
            verify_in_place(&page, secret, "2", false),
            "verdict stale",
            "{name}"
        );
        let text = page.text("#verify-result").unwrap();
        assert!(
            text.contains("Valid signature, but older than the tolerance"),
            "{text}"
        );
        assert!(text.contains("Check as of capture time"), "{text}");
        assert_eq!(
            verify_in_place(&page, secret, "2", true),
            "verdict ok",
            "{name}"
        );
        page.screenshot(&format!("verify-{name}"));
        assert_no_problems(&page);
    }
}

#[test]
fn verify_without_javascript_opens_at_the_verdict_and_its_url_answers_get() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let secret = "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ";
    let (id, _) = send_stripe(&server, &bin, secret);
    let page = server.get(&format!("/bins/{bin}/requests/{id}")).text();
    // The form posts to a URL whose fragment is the verdict: the answer opens there.
    assert!(
        page.contains(&format!(
            "action=\"/bins/{bin}/requests/{id}/verify#verify-result\""
        )),
        "{page}"
    );
    let res = server.request(
        "POST",
        &format!("/bins/{bin}/requests/{id}/verify"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("secret={secret}&scheme=&tolerance=&at_capture=1").as_bytes(),
    );
    assert_eq!(res.status, 200);
    let html = res.text();
    assert!(html.contains("class=\"verdict ok\""), "{html}");
    assert!(html.contains("id=\"verify-result\""));
    assert!(!html.contains(secret), "the secret is never put back");
    // A bad tolerance is explained, not a failure.
    let res = server.request(
        "POST",
        &format!("/bins/{bin}/requests/{id}/verify"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("secret={secret}&tolerance=soon").as_bytes(),
    );
    assert!(
        res.text().contains("Cannot check: tolerance"),
        "{}",
        res.text()
    );
    // The verify URL opened again (reload, Back): the request page at its form.
    let res = server.get(&format!("/bins/{bin}/requests/{id}/verify"));
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some(format!("/bins/{bin}/requests/{id}#verify").as_str())
    );
    let res = server.request(
        "PUT",
        &format!("/bins/{bin}/requests/{id}/verify"),
        &[],
        b"",
    );
    assert_eq!(res.status, 405);
}

/// Replaces the clipboard with a recorder (`window.__copied`), and `confirm` with a yes.
fn record_clipboard(page: &Page<'_>) {
    page.eval(
        "Object.defineProperty(navigator, 'clipboard', {configurable: true, value: {writeText: async (t) => { window.__copied = t; }}}); window.confirm = () => true; true",
    );
}

#[test]
fn ui_header_bar_actions_recent_bins_copy_buttons_and_shortcuts() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    for (name, (w, h)) in [("desktop", DESKTOP), ("phone", PHONE)] {
        let bin = server.create_bin();
        let other = server.create_bin();
        let id = send(
            &server,
            &bin,
            "/hook",
            "application/json",
            br#"{"event":"a\"b<c>"}"#,
        );
        let page = browser.new_page(w, h);
        // Both bins are remembered by this browser, newest first.
        page.goto(&server.url(&format!("/bins/{other}")));
        page.goto(&server.url(&format!("/bins/{bin}?req={id}")));

        // The header bar, on screen without scrolling: response, exports, delete.
        for sel in [
            "#open-response",
            "#export-har",
            "#export-json",
            "#bar-delete button",
        ] {
            let r = page.rect(sel);
            let (y, x) = (r["y"].as_f64().unwrap(), r["x"].as_f64().unwrap());
            assert!(
                y >= 0.0 && y + r["height"].as_f64().unwrap() <= f64::from(h) && x >= 0.0,
                "{name}: {sel} is not on screen: {r}"
            );
        }
        for (sel, ext) in [("#export-har", "har"), ("#export-json", "json")] {
            let got = page.eval(&format!(
                "fetch(document.querySelector('{sel}').href).then(r => [r.status, r.headers.get('content-disposition')])"
            ));
            assert_eq!(got[0], json!(200), "{name}: {sel}");
            assert_eq!(
                got[1],
                json!(format!("attachment; filename=\"hookbin-{bin}.{ext}\"")),
                "{name}"
            );
        }
        page.click("#open-response");
        page.wait_for(
            "document.querySelector('#response').open",
            "the response editor to open",
        );
        page.wait_for(
            "(() => { const r = document.querySelector('#resp-status').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()",
            "the response editor to be on screen",
        );

        // Copy buttons: a header value, the body (exact, fetched).
        record_clipboard(&page);
        page.eval("Array.from(document.querySelectorAll('#headers-table tr')).find(tr => tr.cells[0].innerText === 'Content-Type').querySelector('button.copy-value').click()");
        page.wait_for(
            "window.__copied === 'application/json'",
            "the header value copied",
        );
        assert_eq!(
            page.table("#headers-table")[0].len(),
            2,
            "{name}: the copy buttons add no text to the table"
        );
        page.click("#copy-body");
        page.wait_for(
            "window.__copied === '{\"event\":\"a\\\\\"b<c>\"}'",
            "the body copied exactly",
        );

        // The shortcuts overlay.
        page.eval("document.activeElement && document.activeElement.blur()");
        page.press("?");
        page.wait_for(
            "document.querySelector('#shortcuts')",
            "the shortcuts overlay",
        );
        let text = page.text("#shortcuts").unwrap();
        for key in ["j / ↓", "k / ↑", "c", "/", "f", "Esc"] {
            assert!(text.contains(key), "{name}: {text}");
        }
        page.screenshot(&format!("shortcuts-{name}"));
        page.press("Escape");
        page.wait_for(
            "!document.querySelector('#shortcuts')",
            "the overlay to close",
        );

        // Home lists both bins; deleting one from the header bar forgets it.
        page.goto(&server.url("/"));
        page.wait_for(
            "!document.querySelector('#recent').hidden",
            "the recent bins",
        );
        let listed = page.eval(
            "Array.from(document.querySelectorAll('#recent-bins li')).map(li => li.dataset.bin)",
        );
        assert_eq!(listed, json!([bin, other]), "{name}");
        page.goto(&server.url(&format!("/bins/{other}")));
        record_clipboard(&page);
        page.click_and_wait("#bar-delete button");
        assert_eq!(
            page.eval("location.pathname + location.search"),
            json!("/?deleted=1")
        );
        page.wait_for(
            "!document.querySelector('#recent').hidden",
            "the recent bins",
        );
        let listed = page.eval(
            "Array.from(document.querySelectorAll('#recent-bins li')).map(li => li.dataset.bin)",
        );
        assert_eq!(listed, json!([bin]), "{name}: the deleted bin is forgotten");
        assert_eq!(server.get(&format!("/api/bins/{other}")).status, 404);

        // What the page reads back is checked: junk and markup never reach the page.
        page.eval(
            "localStorage.setItem('hookbin.recentBins', JSON.stringify([{id: '<img src=x onerror=alert(1)>', seen: 1}, {id: 'UPPER0123456789abcd', seen: 2}, {id: 'aaaaaaaaaaaaaaaaaaaa', seen: 'x'}, 'junk', {id: 'bbbbbbbbbbbbbbbbbbbb', seen: 3}])); true",
        );
        page.goto(&server.url("/"));
        page.wait_for(
            "document.querySelector('#recent').hidden",
            "an unknown bin to drop out",
        );
        assert_eq!(
            page.eval("document.querySelectorAll('#recent img').length"),
            json!(0)
        );
        assert_eq!(
            page.eval("localStorage.getItem('hookbin.recentBins')"),
            json!(null),
            "{name}: nothing valid and live was left"
        );
        // The home page asks whether each remembered bin still lives: gone ones answer 404.
        assert_no_problems_but(&page, &["status of 404"]);
    }
}

#[test]
fn ui_follow_newest_and_the_selected_row_in_view() {
    let server = Server::start(&[]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let bin = server.create_bin();
    let mut ids = Vec::new();
    for i in 0..45 {
        ids.push(send(
            &server,
            &bin,
            &format!("/n{i}"),
            "text/plain",
            format!("request {i}").as_bytes(),
        ));
    }
    for (name, (w, h)) in [("desktop", DESKTOP), ("phone", PHONE)] {
        let page = browser.new_page(w, h);
        // An old request picked by URL: its row is in view in the list pane.
        let old = &ids[2];
        page.goto(&server.url(&format!("/bins/{bin}?req={old}")));
        if w >= 900 {
            page.wait_for(
                &format!("(() => {{ const r = document.querySelector('#requests li[data-id=\"{old}\"]').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }})()"),
                &format!("the selected row to be scrolled into view: {}", page.eval(&format!("JSON.stringify([document.querySelector('#requests li[data-id=\"{old}\"]').getBoundingClientRect(), document.querySelector('.list-pane').scrollTop, scrollY, innerHeight])"))),
            );
        }

        page.goto(&server.url(&format!("/bins/{bin}")));
        wait_live(&page);
        page.wait_for(
            "!document.querySelector('#follow-newest').closest('label').hidden",
            "the follow toggle",
        );
        page.eval("window.__sameDocument = 'yes'");
        // Off: a new arrival does not take over the detail.
        let shown = page.eval("document.querySelector('#detail article.detail').dataset.req");
        let quiet = send(&server, &bin, "/quiet", "text/plain", b"quiet");
        page.wait_for(
            &format!("document.querySelector('#requests li[data-id=\"{quiet}\"]')"),
            "the arrival",
        );
        if w >= 900 {
            assert_eq!(
                page.eval("document.querySelector('#detail article.detail').dataset.req"),
                shown,
                "{name}: without follow the detail stays"
            );
        }
        // On (by its key): each arrival is shown as it comes, on a wide screen.
        page.eval("document.activeElement && document.activeElement.blur()");
        page.press("f");
        page.wait_for(
            "document.querySelector('#follow-newest').checked",
            "follow on",
        );
        let next = send(&server, &bin, "/next", "text/plain", b"next");
        page.wait_for(
            &format!("document.querySelector('#requests li[data-id=\"{next}\"]')"),
            "the arrival",
        );
        if w >= 900 {
            page.wait_for(
                &format!("document.querySelector('#detail article.detail[data-req=\"{next}\"]')"),
                "the newest request's detail",
            );
        }
        assert_eq!(page.eval("window.__sameDocument || null"), json!("yes"));
        // Remembered by the browser.
        page.goto(&server.url(&format!("/bins/{bin}")));
        page.wait_for(
            "document.querySelector('#follow-newest').checked",
            "follow remembered",
        );
        page.click("#follow-newest");
        page.screenshot(&format!("follow-{name}"));
        assert_no_problems(&page);
    }
}
