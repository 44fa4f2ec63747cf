//! Storage quotas and a really full disk (issue 18): `--max-bin-bytes` evicts a bin's oldest
//! requests, `--max-db-bytes` and a full filesystem answer `507 storage_full` without recording
//! anything, and in every case nothing acknowledged is lost and capture resumes by itself.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::replay_support::noise;
use crate::util::{Server, b64};

/// The value of one sample in the `/metrics` text.
fn metric(s: &Server, name: &str) -> u64 {
    s.metric(name)
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

#[test]
fn a_bin_over_its_byte_quota_drops_its_oldest_requests() {
    // Each capture stores a 3000-byte body plus its headers (~100 bytes): two fit in 7000.
    let s = Server::start(&["--max-bin-bytes", "7000"]);
    let bin = s.create_bin();
    let ids: Vec<String> = (0..5u8)
        .map(|i| s.capture(&bin, &[b'a' + i; 3000]))
        .collect();
    let kept: Vec<String> = s
        .list_all(&bin, 50)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kept,
        [ids[4].clone(), ids[3].clone()],
        "the newest two remain"
    );
    assert_eq!(
        b64(s.stored(&bin, &ids[4])["body_base64"].as_str().unwrap()),
        [b'e'; 3000]
    );
    assert_eq!(
        s.get(&format!("/api/bins/{bin}/requests/{}", ids[0]))
            .status,
        404
    );
    assert_eq!(metric(&s, "hookbin_requests_evicted_total"), 3);

    // A body larger than the whole quota is still kept, alone: the newest always shows.
    let big = s.capture(&bin, &[b'z'; 9000]);
    let kept = s.list_all(&bin, 50);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["id"], big.as_str());
}

#[test]
fn over_max_db_bytes_captures_answer_507_until_room_is_made() {
    let s = Server::start(&["--max-db-bytes", "262144"]);
    let bin = s.create_bin();
    let path = format!("/r/{bin}");
    // 64 KiB bodies: the database passes 256 KiB after a few. Noise, because repetitive bodies
    // are stored compressed and would take almost no room.
    let mut acked = Vec::new();
    let refused = loop {
        let body = noise(65536, acked.len() as u64 + 1);
        let res = s.request("POST", &path, &[], &body);
        match res.status {
            200 => acked.push(res.header("x-request-id").unwrap().to_owned()),
            _ => break res,
        }
        assert!(acked.len() < 20, "the limit never applied");
    };
    refused.assert_error(507, "storage_full");
    assert_eq!(refused.header("retry-after"), Some("60"));
    assert!(
        acked.len() >= 2,
        "only {} stored before the limit",
        acked.len()
    );
    // Nothing of the refused capture was recorded; everything acknowledged is there.
    assert_eq!(s.list_all(&bin, 50).len(), acked.len());
    assert_eq!(
        metric(&s, "hookbin_captures_rejected_storage_full_total"),
        1
    );
    assert_eq!(metric(&s, "hookbin_database_limit_bytes"), 262144);
    assert!(metric(&s, "hookbin_database_used_bytes") >= 262144);

    // Reads keep working, and a delete makes room: capture resumes by itself.
    for id in &acked {
        assert_eq!(s.stored(&bin, id)["body_size"], 65536);
    }
    let other = s.create_bin();
    assert_eq!(s.delete(&format!("/api/bins/{bin}")).status, 204);
    s.capture(&other, &noise(65536, 99));
}

#[test]
fn quota_flags_with_bad_values_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value) in [
        ("--max-bin-bytes", "0"),
        ("--max-bin-bytes", "100MB"),
        ("--max-db-bytes", "abc"),
        ("--max-db-bytes", "1000"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hookbin"))
            .args(["--db", dir.path().join("q.db").to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", flag, value])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
}

/// A tmpfs of `size` mounted on `dir` for the life of the value (root only).
struct SmallDisk<'a>(&'a Path);

impl<'a> SmallDisk<'a> {
    /// `None` (after saying why) when this process may not mount: the test then does not run,
    /// except under CI=true, where it fails.
    fn mount(dir: &'a Path, size: &str) -> Option<SmallDisk<'a>> {
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(SmallDisk(dir)),
            other => {
                let msg = format!(
                    "SKIPPED: the full-disk test mounts a small tmpfs and needs root \
                     (mount: {other:?})"
                );
                assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
                eprintln!("{msg}");
                None
            }
        }
    }
}

impl Drop for SmallDisk<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0).status();
    }
}

#[test]
fn a_full_disk_answers_507_loses_nothing_and_recovers_when_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_disk) = SmallDisk::mount(dir.path(), "3m") else {
        return;
    };
    // A filler the test deletes later, to give the database room again.
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![0u8; 1024 * 1024]).unwrap();
    let db = dir.path().join("hookbin.db");
    let s = Server::start_on(&db, &["--write-queue", "64"]);
    let bin = s.create_bin();
    let path = format!("/r/{bin}");

    // Four senders capture 16 KiB bodies (noise: they do not compress) until the disk has
    // refused several of them.
    let acked = Mutex::new(Vec::<(String, Vec<u8>)>::new());
    let refusals = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for t in 0..4u8 {
            let (s, path, acked, refusals, stop) = (&s, &path, &acked, &refusals, &stop);
            scope.spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let mut body = format!("{t}-{n}-").into_bytes();
                    body.extend(noise(16000, u64::from(t) << 32 | u64::from(n) | 1));
                    n += 1;
                    let res = s.request("POST", path, &[], &body);
                    match res.status {
                        200 => acked
                            .lock()
                            .unwrap()
                            .push((res.header("x-request-id").unwrap().to_owned(), body)),
                        _ => {
                            let mut r = refusals.lock().unwrap();
                            r.push((res.status, res.text()));
                            if r.len() >= 20 {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                    assert!(n < 5000, "the disk never filled");
                }
            });
        }
    });
    let acked = acked.into_inner().unwrap();
    let refusals = refusals.into_inner().unwrap();
    assert!(
        !acked.is_empty(),
        "nothing was stored before the disk filled"
    );
    for (status, text) in &refusals {
        assert_eq!(*status, 507, "a full disk answers 507 storage_full: {text}");
        assert!(text.contains("storage_full"), "{text}");
    }

    // The process is up, and every acknowledged request is there, byte for byte.
    assert_eq!(s.get("/healthz").status, 200);
    for (id, body) in &acked {
        assert_eq!(
            &b64(s.stored(&bin, id)["body_base64"].as_str().unwrap()),
            body
        );
    }
    // Room again: capture resumes by itself.
    std::fs::remove_file(&filler).unwrap();
    let id = s.capture(&bin, b"after the disk had room again");
    assert_eq!(
        b64(s.stored(&bin, &id)["body_base64"].as_str().unwrap()),
        b"after the disk had room again"
    );
    drop(s);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let stored: i64 = conn
        .query_row("SELECT count(*) FROM bin_requests", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored as usize, acked.len() + 1);
}
