//! Prometheus's own tool judges what hookbin offers it: `promtool check metrics` (the text
//! format and the naming conventions: units in names, `_total` counters) on a live server's
//! `/metrics` after captures, errors and a custom-response bin, and `promtool` on the scrape
//! config and alert rules in `docs/prometheus/` (syntax, and unit tests of when each alert
//! fires). `promtool` comes with Debian's `prometheus` package (`.ci/run` installs it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::util::Server;

/// `promtool`, or `None` (skipped loudly) when it is not installed outside CI.
fn promtool() -> Option<&'static str> {
    if Command::new("promtool").arg("--version").output().is_ok() {
        return Some("promtool");
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and promtool is missing (apt-get install prometheus)");
    }
    eprintln!("\n*** SKIPPED: needs promtool (apt-get install prometheus).\n");
    None
}

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus")
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn promtool_accepts_the_metrics_of_a_busy_server() {
    let Some(promtool) = promtool() else { return };
    let server = Server::start(&["--max-body-bytes", "16", "--write-queue", "64"]);
    let bin = server.create_bin();
    server.capture(&bin, b"hello");
    // A truncated body (413) and an unknown bin (404) move their counters too.
    let res = server.request("POST", &format!("/r/{bin}"), &[], &[b'x'; 64]);
    assert_eq!(res.status, 413);
    let res = server.request("POST", "/r/0000000000000000nope", &[], b"x");
    assert_eq!(res.status, 404);
    let res = server.get("/metrics");
    assert_eq!(res.status, 200);
    let text = res.text();
    for expected in [
        "hookbin_requests_captured_total 2\n",
        "hookbin_requests_truncated_total 1\n",
        "hookbin_captures_unknown_bin_total 1\n",
        "hookbin_capture_failures_total 0\n",
        "hookbin_write_queue_capacity 64\n",
        "hookbin_capture_duration_seconds_count 2\n",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    // promtool prints its lint findings (a counter without `_total`, a unit missing...) and
    // exits 3 for them; any output at all is a finding.
    assert_ok(&out, "promtool check metrics");
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Every metric the alert rules use is one the server serves.
    let rules = std::fs::read_to_string(docs().join("hookbin-alerts.yml")).unwrap();
    for word in rules.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("hookbin_") {
            assert!(
                text.contains(&format!("\n{word} ")),
                "the alert rules use {word}, which /metrics does not serve"
            );
        }
    }
}

/// The writer's counters: a capture sent alone is a batch of its own, and on SQLite each writes
/// at least one WAL frame (a 4 KiB page and its 24-byte header).
#[test]
fn write_batches_and_wal_bytes_count_the_commits() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let batches = |s: &Server| s.metric("hookbin_write_batches_total").unwrap();
    let wal = |s: &Server| s.metric("hookbin_database_wal_written_bytes_total");
    let (batches_before, wal_before) = (batches(&server), wal(&server));
    for i in 0..10u8 {
        server.capture(&bin, &[b'a' + i; 100]);
    }
    let committed = batches(&server) - batches_before;
    assert!(
        committed >= 10,
        "10 captures one after another, {committed} batches"
    );
    if crate::pg::postgres() {
        assert_eq!(
            wal_before, None,
            "PostgreSQL's WAL is not hookbin's to count"
        );
        assert_eq!(
            committed, 10,
            "only capture batches are counted on PostgreSQL"
        );
    } else {
        let written = wal(&server).unwrap() - wal_before.unwrap();
        assert!(
            written >= 10 * (4096 + 24),
            "{written} WAL bytes for 10 commits"
        );
    }
}

#[test]
fn promtool_accepts_the_scrape_config_and_the_alert_rules() {
    let Some(promtool) = promtool() else { return };
    let run = |args: &[&str]| {
        Command::new(promtool)
            .current_dir(docs())
            .args(args)
            .output()
            .unwrap()
    };
    assert_ok(
        &run(&["check", "config", "prometheus.yml"]),
        "promtool check config",
    );
    assert_ok(
        &run(&["check", "rules", "hookbin-alerts.yml"]),
        "promtool check rules",
    );
    // When each alert fires, and that it stays quiet for the healthy instance.
    assert_ok(
        &run(&["test", "rules", "hookbin-alerts.test.yml"]),
        "promtool test rules",
    );
}
