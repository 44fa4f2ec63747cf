//! `committed_size` against SQLite's own answer (`PRAGMA page_count`, `PRAGMA freelist_count`)
//! after every commit of a workload that grows the database, frees pages, reuses them, shrinks
//! the file, spills pages before a commit, rolls back (whole transactions and to savepoints)
//! and restarts the WAL.

mod common;

use std::path::Path;

use rusqlite::{Connection, params};

fn writer(path: &Path, cache_pages: i64) -> Connection {
    common::writer(path, "PRAGMA auto_vacuum = INCREMENTAL", cache_pages)
}

/// What SQLite says, read in a transaction of its own.
fn asked(conn: &Connection) -> walbuf::Size {
    conn.query_row(
        "SELECT c.page_count, f.freelist_count, s.page_size FROM pragma_page_count() AS c,
                pragma_freelist_count() AS f, pragma_page_size() AS s",
        [],
        |r| {
            Ok(walbuf::Size {
                pages: r.get(0)?,
                free_pages: r.get(1)?,
                page_size: r.get(2)?,
            })
        },
    )
    .unwrap()
}

/// Runs `sql` in one transaction, then checks the VFS's figure against SQLite's.
fn commit_and_check(conn: &Connection, sql: &str, what: &str) {
    conn.execute_batch(&format!("BEGIN IMMEDIATE; {sql}; COMMIT;"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(walbuf::committed_size(conn), Some(asked(conn)), "{what}");
}

const INSERT: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
     INSERT INTO t (k, v) SELECT (i * 7919) % 1000, randomblob(?1) FROM n";

fn insert(rows: u32, size: u32) -> String {
    INSERT
        .replace("?1", &size.to_string())
        .replace("?2", &rows.to_string())
}

#[test]
fn the_size_after_every_commit_is_what_sqlite_says() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer(&dir.path().join("db"), 2000);
    // Creating the tables wrote page 1, so the figure is known already; else it would be once
    // told.
    assert_eq!(walbuf::committed_size(&w), Some(asked(&w)));
    walbuf::note_size(&w, asked(&w));
    assert_eq!(walbuf::committed_size(&w), Some(asked(&w)));

    for round in 0..4 {
        commit_and_check(&w, &insert(300, 700), "growing");
        commit_and_check(
            &w,
            "DELETE FROM t WHERE id <= (SELECT min(id) + 150 FROM t)",
            "freeing pages",
        );
        assert!(
            asked(&w).free_pages > 0,
            "round {round}: nothing freed to follow"
        );
        commit_and_check(&w, &insert(50, 700), "reusing free pages");
        commit_and_check(
            &w,
            "UPDATE t SET v = randomblob(600) WHERE id % 5 = 1",
            "in place",
        );
        commit_and_check(&w, "PRAGMA incremental_vacuum(20)", "shrinking");
        if round == 1 {
            // The WAL starts over at the next commit: frames are written from its start again.
            w.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
        }
    }
    commit_and_check(&w, "DELETE FROM t", "emptied");
    commit_and_check(&w, "PRAGMA incremental_vacuum", "vacuumed");
}

#[test]
fn spilled_pages_of_what_rolled_back_are_never_counted() {
    let dir = tempfile::tempdir().unwrap();
    // A tiny cache: big transactions write pages, page 1 among them, to the WAL before their
    // commit (or their rollback).
    let mut w = writer(&dir.path().join("db"), 10);
    commit_and_check(&w, &insert(2000, 300), "filled");
    walbuf::note_size(&w, asked(&w));

    for round in 0..3 {
        let before = asked(&w);
        {
            let tx = w.transaction().unwrap();
            tx.execute("DELETE FROM t WHERE id % 2 = ?1", [round % 2])
                .unwrap();
            tx.execute_batch(&insert(400, 900)).unwrap();
            tx.rollback().unwrap();
        }
        assert_eq!(asked(&w), before, "round {round}: the rollback left it");
        // A small commit next: it writes over the start of the abandoned frames only.
        commit_and_check(
            &w,
            "UPDATE t SET k = k + 1 WHERE id = 7",
            "small after a rollback",
        );
        commit_and_check(&w, &insert(600, 900), "large after a rollback");

        // To a savepoint: pages spilled after it (page 1 with its free count) are undone, the
        // rest commits.
        let tx = w.transaction().unwrap();
        tx.execute("DELETE FROM t WHERE id % 7 = ?1", [round])
            .unwrap();
        tx.execute_batch("SAVEPOINT s").unwrap();
        tx.execute("DELETE FROM t WHERE id % 3 = ?1", [round % 3])
            .unwrap();
        tx.execute_batch(&insert(300, 900)).unwrap();
        tx.execute_batch("ROLLBACK TO s; RELEASE s").unwrap();
        tx.execute(
            "INSERT INTO t (k, v) VALUES (?1, randomblob(100))",
            params![round],
        )
        .unwrap();
        tx.commit().unwrap();
        assert_eq!(
            walbuf::committed_size(&w),
            Some(asked(&w)),
            "round {round}: after a savepoint's rollback"
        );
    }
}

#[test]
fn a_connection_of_the_default_vfs_has_no_figure() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(writer(&path, 2000));
    let plain = Connection::open(&path).unwrap();
    walbuf::note_size(&plain, asked(&plain));
    assert_eq!(walbuf::committed_size(&plain), None);
}
