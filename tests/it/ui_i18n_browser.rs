//! Every page in every language, in headless Chromium at desktop (1280x800) and phone
//! (390x844) width: `<html lang>` is the chosen language, nothing scrolls sideways, no element
//! sticks out of the screen (unless a scrolling box of its own holds it), and the main blocks
//! stay inside their containers. The language is chosen as a user does, through the switcher's
//! `/lang/{code}` link, which sets the cookie. Screenshots go to `target/ui-artifacts/`.

use serde_json::{Value, json};

use crate::browser::{Browser, Page};
use crate::util::Server;

const DESKTOP: (u32, u32) = (1280, 800);
const PHONE: (u32, u32) = (390, 844);

/// Sends exact bytes as one capture; returns the request id.
fn send(server: &Server, head: &str, body: &[u8]) -> String {
    let mut raw = head.replace('\n', "\r\n").into_bytes();
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    raw.extend_from_slice(body);
    let res = server.raw(&raw);
    assert_eq!(res.status, 200, "capture failed: {}", res.text());
    res.header("x-request-id").expect("x-request-id").to_owned()
}

/// What sticks out: elements past the viewport's edges that no scrolling or clipping ancestor
/// holds, and main blocks wider than their container. Visually hidden helpers (the skip link,
/// screen-reader text) are left alone.
const OVERFLOW_JS: &str = r#"(() => {
  const vw = document.documentElement.clientWidth;
  const bad = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  const held = (el) => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    }
    return false;
  };
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('.skip, .sr-only, .offscreen, template, script')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (getComputedStyle(el).visibility === 'hidden') continue;
    if ((r.right > vw + 1 || r.left < -1) && !held(el)) {
      bad.push(`${name(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} of ${vw}: ${(el.textContent || '').trim().slice(0, 60)}`);
    }
  }
  const blocks = ['header.site', 'main', '.bar', '.langs', '.url-field', '.bin-facts', '.panes',
    '.list-pane', '.list-head', '.search', '.detail-pane', '.detail', '.detail-head', '.facts',
    '.detail-actions', '.block', '.bin-settings', '.danger-zone', '.home', '.create',
    '.error-page', '.empty-state', '.inline-form', '.tabs'];
  for (const sel of blocks) {
    for (const el of document.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || !el.parentElement) continue;
      const p = el.parentElement.getBoundingClientRect();
      if (r.right > p.right + 1 || r.left < p.left - 1) {
        bad.push(`block ${sel} (${Math.round(r.left)}..${Math.round(r.right)}) outside its container ${name(el.parentElement)} (${Math.round(p.left)}..${Math.round(p.right)})`);
      }
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible') {
        bad.push(`block ${sel} holds content ${el.scrollWidth} px wide in ${el.clientWidth} px`);
      }
    }
  }
  return {
    lang: document.documentElement.lang,
    scroll: document.documentElement.scrollWidth,
    inner: window.innerWidth,
    bad: bad.slice(0, 15),
  };
})()"#;

fn check(page: &Page<'_>, lang: &str, what: &str) {
    let report: Value = page.eval(OVERFLOW_JS);
    assert_eq!(report["lang"], json!(lang), "{what}: <html lang>");
    assert!(
        report["scroll"].as_u64() <= report["inner"].as_u64(),
        "{what}: the page is wider than the screen ({} > {}), so it scrolls sideways",
        report["scroll"],
        report["inner"]
    );
    let bad = report["bad"].as_array().unwrap();
    assert!(
        bad.is_empty(),
        "{what}: {}",
        bad.iter()
            .map(|v| v.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    // The error pages are loaded on purpose: their status is not a problem of the page.
    let problems: Vec<String> = page
        .problems()
        .into_iter()
        .filter(|p| !p.contains("the server responded with a status of"))
        .collect();
    assert!(problems.is_empty(), "{what}: {}", problems.join("\n"));
}

#[test]
fn ui_every_page_in_every_language_fits_desktop_and_phone() {
    // Dozens of bin pages in a row, each with its event stream: the per-client caps (which the
    // server applies to streams it has not yet seen closed) are not what this test is about.
    let server = Server::start(&[
        "--max-connections-per-client",
        "0",
        "--max-streams-per-client",
        "0",
        "--max-in-flight-per-client",
        "0",
    ]);
    let Some(browser) = Browser::launch() else {
        return;
    };
    let bin = server.create_bin();
    let empty = server.create_bin();
    let long = "x".repeat(400);
    let json_id = send(
        &server,
        &format!(
            "POST /r/{bin}/hooks/stripe/a-rather-long-path/segment?event=invoice.paid&customer=cus_0123456789abcdef&note=%D0%BF%D1%80%D0%B8%D0%B2%D0%B5%D1%82 HTTP/1.1\n\
             Host: {}\nContent-Type: application/json\nStripe-Signature: t=1,v1={long}\nX-Very-Long-Header-Name-For-Layout-Testing: {long}\n",
            server.addr
        ),
        br#"{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount_due":123456,"customer":"cus_0123456789abcdef","lines":[1,2,3]}}}"#,
    );
    send(
        &server,
        &format!(
            "PUT /r/{bin}/form HTTP/1.1\nHost: {}\nContent-Type: application/x-www-form-urlencoded\n",
            server.addr
        ),
        b"name=%D0%86%D0%B2%D0%B0%D0%BD&amount=10&comment=a+b+c",
    );
    let binary_id = send(
        &server,
        &format!(
            "PATCH /r/{bin}/blob HTTP/1.1\nHost: {}\nContent-Type: application/octet-stream\n",
            server.addr
        ),
        &(0u8..=255).cycle().take(5000).collect::<Vec<_>>(),
    );
    // A custom response, so the settings show their summary.
    let res = server.request(
        "PUT",
        &format!("/api/bins/{bin}/response"),
        &[("Content-Type", "application/json")],
        br#"{"status": 429, "headers": [["Retry-After", "30"], ["X-A", "b"]], "body": "slow down", "delay_ms": 1500}"#,
    );
    assert_eq!(res.status, 200, "{}", res.text());

    let pages = [
        ("home", "/".to_owned()),
        ("bin", format!("/bins/{bin}")),
        ("bin-picked", format!("/bins/{bin}?req={json_id}")),
        ("bin-binary", format!("/bins/{bin}?req={binary_id}")),
        ("bin-filtered", format!("/bins/{bin}?q=method%3Apost")),
        (
            "bin-no-match",
            format!("/bins/{bin}?q=body%3Anothing-like-this"),
        ),
        ("bin-bad-query", format!("/bins/{bin}?q=header%3A")),
        ("bin-missing-request", format!("/bins/{bin}?req=999999")),
        ("bin-empty", format!("/bins/{empty}")),
        ("request", format!("/bins/{bin}/requests/{json_id}")),
        (
            "request-binary",
            format!("/bins/{bin}/requests/{binary_id}"),
        ),
        ("error-404", "/no/such/page".to_owned()),
        ("error-unknown-bin", "/bins/0123456789abcdefghij".to_owned()),
        ("error-405", "/bins".to_owned()),
    ];
    for lang in ["en", "ru", "uk"] {
        // Chosen as a user does: the switcher's link sets the cookie and comes back.
        let page = browser.new_page(DESKTOP.0, DESKTOP.1);
        page.goto(&server.url(&format!("/lang/{lang}?back=%2F")));
        assert_eq!(page.eval("location.pathname"), json!("/"));
        close(&browser, page);
        for (width, height) in [DESKTOP, PHONE] {
            for (name, path) in &pages {
                // A tab per page: a bin page keeps its event stream open, and Chromium allows
                // six connections to a host, so old pages must really go.
                let page = browser.new_page(width, height);
                page.goto(&server.url(path));
                let what = format!("{name} ({path}) in {lang} at {width}x{height}");
                check(&page, lang, &what);
                if matches!(*name, "home" | "bin-picked" | "request") {
                    page.screenshot(&format!("i18n-{name}-{lang}-{width}"));
                }
                close(&browser, page);
            }
        }
    }
}

/// Closes the tab, and with it its connections.
fn close(browser: &Browser, page: Page<'_>) {
    let info = page.call("Target.getTargetInfo", json!({}));
    let id = info["targetInfo"]["targetId"].as_str().unwrap().to_owned();
    browser.call(None, "Target.closeTarget", json!({"targetId": id}));
}
