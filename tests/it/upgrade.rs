//! A database written by hookbin 0.1 (schema version 1, one request-id sequence for the whole
//! server) opened by this hookbin: every request URL, cursor and event id issued before still
//! means the same request, and each bin numbers new requests above its old ids.
//!
//! The old file is built with the `sqlite3` shell from the version-1 `schema.sql`, kept verbatim
//! in `tests/data/schema-v1.sql` (skipped without `sqlite3` outside CI, like backup.rs).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;

use crate::util::Server;

const A: &str = "aaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbb";

fn build_v1_database(path: &Path) {
    let schema = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema-v1.sql"),
    )
    .unwrap();
    // Version 1 gave ids from one sequence: bin A got 5 and 9, bin B 7 and 12 (deleted since).
    let rows = format!(
        "PRAGMA user_version = 1;
         INSERT INTO bins VALUES ('{A}', 1, 32503680000000, NULL, 2, 9);
         INSERT INTO bins VALUES ('{B}', 1, 32503680000000, NULL, 1, 12);
         INSERT INTO bin_requests VALUES
           (5, '{A}', 1750000000000, 'POST', '/r/{A}', '', '', 'text/plain', 5, 0, '192.0.2.1', 'HTTP/1.1', x'', CAST('five!' AS BLOB)),
           (7, '{B}', 1750000000001, 'GET', '/r/{B}/x', '/x', 'q=1', NULL, 0, 0, '192.0.2.1', 'HTTP/1.1', x'', x''),
           (9, '{A}', 1750000000002, 'PUT', '/r/{A}', '', '', NULL, 4, 0, '192.0.2.1', 'HTTP/1.1', x'', CAST('nine' AS BLOB));"
    );
    let mut child = Command::new("sqlite3")
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("run sqlite3");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(schema.as_bytes()).unwrap();
    stdin.write_all(rows.as_bytes()).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success(), "sqlite3 failed");
}

fn ids(s: &Server, bin: &str, query: &str) -> Vec<String> {
    let res = s.get(&format!("/api/bins/{bin}/requests?{query}"));
    assert_eq!(res.status, 200, "{}", res.text());
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_version_1_database_keeps_its_request_ids_and_continues_per_bin() {
    if !crate::backup::sqlite3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    build_v1_database(&db);
    let s = Server::start_on(&db, &[]);
    assert!(s.log().contains("database schema upgraded"), "{}", s.log());

    // Old request URLs answer with the same request.
    assert_eq!(s.stored(A, "5")["body_text"], "five!");
    assert_eq!(s.stored(A, "9")["body_text"], "nine");
    assert_eq!(s.stored(B, "7")["subpath"], "/x");
    assert_eq!(s.get(&format!("/api/bins/{A}/requests/7")).status, 404);
    assert_eq!(ids(&s, A, ""), ["9", "5"]);
    // A cursor the old server issued ("before 9") still pages the same way.
    let cursor = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("before:9");
    assert_eq!(ids(&s, A, &format!("cursor={cursor}")), ["5"]);

    // New captures continue above each bin's highest id, deleted ones included.
    assert_eq!(s.capture(A, b"ten"), "10");
    assert_eq!(s.capture(B, b"thirteen"), "13");
    assert_eq!(s.capture(A, b"eleven"), "11");
    assert_eq!(ids(&s, A, ""), ["11", "10", "9", "5"]);
    // What was answered before the upgrade is not known; after it, it is recorded.
    assert!(s.stored(A, "5")["response"].is_null());
    assert_eq!(s.stored(A, "11")["response"]["status"], 200);
    // A new bin starts at 1.
    let fresh = s.create_bin();
    assert_eq!(s.capture(&fresh, b"x"), "1");
}
