//! The engine the suite runs on: SQLite by default, PostgreSQL with `HOOKBIN_TEST_DB=postgres`
//! (CI runs both). Under PostgreSQL each server gets a database of its own, made on the server
//! at `HOOKBIN_TEST_PG` (default `postgres://postgres@127.0.0.1:5432`) and dropped when the test
//! ends, even when it panics.

#![allow(dead_code)]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether this run tests the PostgreSQL engine.
pub fn postgres() -> bool {
    std::env::var("HOOKBIN_TEST_DB").is_ok_and(|v| v == "postgres")
}

/// For tests of what only SQLite has (its file, PRAGMAs, the sqlite3 CLI, schema v1 files):
/// `true` (and a note) under PostgreSQL, where the test returns at once.
pub fn sqlite_only() -> bool {
    if postgres() {
        eprintln!("skipped under HOOKBIN_TEST_DB=postgres: this test is about the SQLite file");
    }
    postgres()
}

/// The server the test databases are made on.
pub fn base_url() -> String {
    std::env::var("HOOKBIN_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

/// Runs one SQL command with psql on `database`; its output (unaligned, tuples only).
pub fn psql(database: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
        .arg(format!("{}/{database}", base_url()))
        .arg("-c")
        .arg(sql)
        .output()
        .map_err(|e| format!("cannot run psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A database of its own for one test, dropped with this value.
#[derive(Debug)]
pub struct TestDb {
    pub name: String,
    pub url: String,
}

impl TestDb {
    pub fn create() -> TestDb {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!(
            "hookbin_t_{}_{}_{nanos:x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        psql("postgres", &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("cannot create the test database {name}: {e}"));
        let url = format!("{}/{name}", base_url());
        TestDb { name, url }
    }

    /// One SQL command on this database.
    pub fn sql(&self, sql: &str) -> String {
        psql(&self.name, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // FORCE: a server still connected (killed, not yet reaped) does not keep it alive.
        if let Err(e) = psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        ) {
            eprintln!("could not drop the test database {}: {e}", self.name);
        }
    }
}
