//! The README's backup commands, run as written against a live server's database.
//!
//! Needs the `sqlite3` command-line shell: skipped with a loud message without it, except under
//! `CI=true`, where it fails (CI installs the `sqlite3` package, see `.ci/run`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::util::Server;

/// The database path the README's commands use.
const README_DB: &str = "/var/lib/hookbin/hookbin.db";

pub fn sqlite3_installed() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join("sqlite3").is_file()));
    if !found {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("sqlite3 is not installed: CI must install the `sqlite3` package (.ci/run)");
        }
        eprintln!(
            "\n*** SKIPPED: the `sqlite3` shell is not installed; install the `sqlite3` package \
             to test the README's backup commands (tests/it/backup.rs) ***\n"
        );
    }
    found
}

#[test]
fn readme_backup_commands_copy_a_live_database() {
    if crate::pg::sqlite_only() || !sqlite3_installed() {
        return;
    }
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let commands: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with(&format!("sqlite3 {README_DB} ")))
        .collect();
    assert_eq!(
        commands.len(),
        2,
        "`.backup` and `VACUUM INTO`: {commands:?}"
    );
    assert!(commands[0].contains(".backup '/backups/"));
    assert!(commands[1].contains("VACUUM INTO '/backups/"));

    let s = Server::start(&[]);
    let bin = s.create_bin();
    for i in 0..50 {
        s.capture(&bin, format!("before {i}").as_bytes());
    }
    let backups = tempfile::tempdir().unwrap();
    // Captures keep arriving while the backups run.
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                s.capture(&bin, b"during");
            }
        });
        for command in &commands {
            let command = command
                .replace(README_DB, s.db.to_str().unwrap())
                .replace("'/backups/", &format!("'{}/", backups.path().display()));
            let out = Command::new("sh").arg("-c").arg(&command).output().unwrap();
            assert!(out.status.success(), "{command}: {out:?}");
        }
        stop.store(true, Ordering::Relaxed);
    });

    let files: Vec<PathBuf> = std::fs::read_dir(backups.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let db = rusqlite::Connection::open(&file).unwrap();
        let check: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "{}", file.display());
        let before: i64 = db
            .query_row(
                "SELECT count(*) FROM bin_requests WHERE bin_num = (SELECT num FROM bins WHERE id = ?1)
                   AND CAST(body AS TEXT) LIKE 'before%'",
                [&bin],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            before,
            50,
            "every acknowledged capture is in {}",
            file.display()
        );
        // A backup is a database hookbin can serve from.
        let restored = Server::start_on(&file, &[]);
        assert_eq!(
            restored.get(&format!("/api/bins/{bin}")).status,
            200,
            "{}",
            file.display()
        );
    }
    // The live server carried on.
    s.capture(&bin, b"after");
}
