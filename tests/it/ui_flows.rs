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
    let problems: Vec<String> = page
        .problems()
        .into_iter()
        .filter(|p| !p.contains("status of 400"))
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
