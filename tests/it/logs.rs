//! Logs: `--log-format json` writes JSON lines; nothing captured ever reaches the log.

use std::io::Write;

use serde_json::Value;

use crate::util::Server;

/// Every line of the log as JSON (panics on a line that is not).
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect()
}

#[test]
fn json_log_format_writes_one_object_per_line_with_an_access_line_per_request() {
    let mut s = Server::start(&["--log-format", "json"]);
    let bin = s.create_bin();
    let id = s.capture(&bin, b"twelve bytes");
    s.get("/healthz");
    // Stopped, the log is complete: what is not in it was not logged.
    let lines = json_lines(&s.stop());
    let message = |v: &Value| v["fields"]["message"].as_str().unwrap_or("").to_owned();
    assert!(
        lines
            .iter()
            .any(|l| message(l).starts_with("listening on http://") && l["level"] == "INFO")
    );
    let access = lines
        .iter()
        .find(|l| message(l) == "request" && l["fields"]["route"] == "capture")
        .expect("an access line for the capture");
    let f = &access["fields"];
    assert_eq!(access["level"], "DEBUG");
    assert_eq!(f["method"], "POST");
    assert_eq!(f["bin_id"], bin.as_str());
    assert_eq!(f["request_id"].to_string(), id);
    assert_eq!(f["size"], 12);
    assert_eq!(f["status"], 200);
    assert!(f["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{f}");
    // Health probes stay out of the access log at debug level.
    assert!(!lines.iter().any(|l| l["fields"]["route"] == "operations"));
}

#[test]
fn captured_paths_queries_headers_and_bodies_never_reach_the_log() {
    // The default level (no RUST_LOG), debug, and everything hookbin can log.
    for rust_log in ["", "hookbin=debug", "hookbin=trace"] {
        let dir = tempfile::tempdir().unwrap();
        let s = Server::try_start(
            &dir.path().join("logs.db"),
            &["--max-body-bytes", "64", "--body-timeout", "300ms"],
            &[("RUST_LOG", rust_log)],
        )
        .unwrap();
        let bin = s.create_bin();
        let secrets = [
            "PATHsecret41",
            "QUERYsecret42",
            "HEADERsecret43",
            "BODYsecret44",
            "NAMEsecret45",
        ];
        let path = format!("/r/{bin}/{}?token={}", secrets[0], secrets[1]);
        let headers = [
            ("X-Signature", secrets[2]),
            ("Authorization", secrets[2]),
            (secrets[4], "v"),
        ];
        let body = format!("{{\"api_key\": \"{}\"}}", secrets[3]);
        assert_eq!(
            s.request("POST", &path, &headers, body.as_bytes()).status,
            200
        );
        // Truncated, unknown bin, bad request and stalled body: the paths that log more.
        let big = body.repeat(10);
        assert_eq!(
            s.request("POST", &path, &headers, big.as_bytes()).status,
            413
        );
        let unknown = format!("/r/{}/x", secrets[0]);
        assert_eq!(
            s.request("POST", &unknown, &headers, body.as_bytes())
                .status,
            404
        );
        s.raw(
            format!(
                "POST {path} HTTP/1.1\r\nHost: h\r\nX-Bad\x01: {}\r\n\r\n",
                secrets[2]
            )
            .as_bytes(),
        );
        let mut slow = s.connect();
        slow.write_all(
            format!(
                "POST {path} HTTP/1.1\r\nHost: h\r\nContent-Length: 99\r\n\r\n{}",
                secrets[3]
            )
            .as_bytes(),
        )
        .unwrap();
        let _ = crate::util::read_response(&mut std::io::BufReader::new(slow));
        s.get(&format!("/api/bins/{bin}/requests"));
        // The whole log: stopped, every line is in.
        let mut s = s;
        let log = s.stop();
        assert!(log.contains("listening on"), "{log}");
        if !rust_log.is_empty() {
            assert!(
                log.contains("request"),
                "access lines at {rust_log}:\n{log}"
            );
        }
        for secret in secrets {
            assert!(
                !log.contains(secret),
                "RUST_LOG={rust_log:?}: the log contains {secret}:\n{log}"
            );
        }
    }
}
