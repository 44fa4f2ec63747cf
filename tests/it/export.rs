//! `GET /api/bins/{bin}/export?format=har|json`.

use serde_json::Value;

use crate::replay_support::noise;
use crate::util::{Server, b64};

/// Captures a few varied requests; their ids, oldest first.
fn varied(s: &Server, bin: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let raw = |req: String, body: &[u8]| {
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        s.raw(&bytes).header("x-request-id").unwrap().to_owned()
    };
    ids.push(raw(
        format!(
            "POST /r/{bin}/json?a=1&b=x+y HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n\
             Cookie: s=1; t=2\r\nContent-Length: 8\r\nConnection: close\r\n\r\n"
        ),
        b"{\"k\":1}\n",
    ));
    ids.push(raw(
        format!(
            "PUT /r/{bin}/bin HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nConnection: close\r\n\r\n"
        ),
        b"\x00\xff\xfe\x01",
    ));
    // A header value that is not UTF-8.
    let mut obs = format!("GET /r/{bin} HTTP/1.1\r\nHost: h\r\nX-Latin1: caf").into_bytes();
    obs.extend_from_slice(b"\xe9\r\nConnection: close\r\n\r\n");
    ids.push(s.raw(&obs).header("x-request-id").unwrap().to_owned());
    ids
}

fn export(s: &Server, bin: &str, format: &str) -> (crate::util::Response, Value) {
    let res = s.get(&format!("/api/bins/{bin}/export?format={format}"));
    assert_eq!(res.status, 200, "{}", res.text());
    let json = res.json();
    (res, json)
}

#[test]
fn json_export_is_every_request_oldest_first() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let ids = varied(&s, &bin);
    let (res, json) = export(&s, &bin, "json");
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(
        res.header("content-disposition"),
        Some(format!("attachment; filename=\"hookbin-{bin}.json\"").as_str())
    );
    let entries = json.as_array().unwrap();
    assert_eq!(entries.len(), ids.len());
    for (entry, id) in entries.iter().zip(&ids) {
        assert_eq!(*entry, s.stored(&bin, id), "entry {id} is its Request JSON");
    }
    // Exact header bytes ride along in headers_base64.
    assert_eq!(
        b64(entries[2]["headers_base64"][1][1].as_str().unwrap()),
        b"caf\xe9"
    );
    assert_eq!(entries[2]["headers"][1][1], "caf\u{fffd}");
}

#[test]
fn har_export_is_a_har_1_2_log() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let ids = varied(&s, &bin);
    let (res, har) = export(&s, &bin, "har");
    assert_eq!(
        res.header("content-disposition"),
        Some(format!("attachment; filename=\"hookbin-{bin}.har\"").as_str())
    );
    let log = &har["log"];
    assert_eq!(log["version"], "1.2");
    assert_eq!(log["creator"]["name"], "hookbin");
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    let base = format!("http://{}/r/{bin}", s.addr);
    let e = &entries[0]["request"];
    assert_eq!(e["method"], "POST");
    assert_eq!(e["url"], format!("{base}/json?a=1&b=x+y"));
    assert_eq!(
        e["queryString"],
        serde_json::json!([{"name": "a", "value": "1"}, {"name": "b", "value": "x y"}])
    );
    assert_eq!(e["postData"]["text"], "{\"k\":1}\n");
    assert_eq!(e["cookies"][1]["name"], "t");
    let binary = &entries[1]["request"]["postData"];
    assert_eq!(binary["encoding"], "base64");
    assert_eq!(b64(binary["text"].as_str().unwrap()), b"\x00\xff\xfe\x01");
    assert_eq!(
        b64(entries[2]["request"]["headers"][1]["_valueBase64"]
            .as_str()
            .unwrap()),
        b"caf\xe9"
    );
    for (entry, id) in entries.iter().zip(&ids) {
        assert_eq!(entry["_hookbin"]["id"], id.as_str());
        assert!(entry["startedDateTime"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn empty_bins_and_bad_requests() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    assert_eq!(export(&s, &bin, "json").1, serde_json::json!([]));
    assert_eq!(
        export(&s, &bin, "har").1["log"]["entries"],
        serde_json::json!([])
    );
    for query in ["", "?format=", "?format=csv", "?format=HAR"] {
        s.get(&format!("/api/bins/{bin}/export{query}"))
            .assert_error(400, "invalid_format");
    }
    s.get("/api/bins/0000000000000000000a/export?format=json")
        .assert_error(404, "bin_not_found");
    s.request(
        "POST",
        &format!("/api/bins/{bin}/export?format=json"),
        &[],
        b"",
    )
    .assert_error(405, "method_not_allowed");
}

/// Peak resident memory of a process, from /proc (Linux), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A big bin crosses many pages (by rows and by body bytes), comes out complete and in order,
/// and the server's peak memory grows by far less than the document: it is streamed.
#[test]
fn large_bins_are_streamed_complete_and_in_order() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let mut expected = Vec::new();
    // 24 binary bodies of 1 MiB (24 MiB stored, ~32 MiB of base64 in the export)...
    for i in 0..24u64 {
        let body = noise(1 << 20, 0x9E37_79B9_7F4A_7C15 ^ i);
        s.capture(&bin, &body);
        expected.push(body);
    }
    // ...and enough small ones to cross the row limit of a page.
    for i in 0..230u32 {
        let body = i.to_string().into_bytes();
        s.capture(&bin, &body);
        expected.push(body);
    }
    let before = peak_rss_kib(s.pid());
    let (_, json) = export(&s, &bin, "json");
    let grown_mib = (peak_rss_kib(s.pid()) - before) / 1024;
    let entries = json.as_array().unwrap();
    assert_eq!(entries.len(), expected.len());
    let mut last_id = 0u64;
    for (entry, body) in entries.iter().zip(&expected) {
        let id: u64 = entry["id"].as_str().unwrap().parse().unwrap();
        assert!(id > last_id, "oldest first");
        last_id = id;
        assert!(
            b64(entry["body_base64"].as_str().unwrap()) == *body,
            "body of {id}"
        );
    }
    let (_, har) = export(&s, &bin, "har");
    assert_eq!(
        har["log"]["entries"].as_array().unwrap().len(),
        expected.len()
    );
    eprintln!("export of a 24 MiB bin grew the server's peak RSS by {grown_mib} MiB");
    // Built in memory, the document alone (~32 MiB) plus the rows (24 MiB) would be ~56 MiB;
    // streamed, it is a page of rows (4 MiB) and a few rendered entries (about 17 MiB measured).
    assert!(
        grown_mib < 32,
        "peak RSS grew by {grown_mib} MiB for a ~32 MiB document: not streamed?"
    );
}
