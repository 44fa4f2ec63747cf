//! PostgreSQL stopped under load (issue 16): captures answer 503 `database_unavailable` within
//! the timeout, never hang, never acknowledge what was not committed, and recover by themselves
//! when the database is back. The test runs a private PostgreSQL of its own (initdb, pg_ctl) on
//! an ephemeral port in a temporary directory, so stopping it touches nothing else.
//!
//! PostgreSQL pass only (`HOOKBIN_TEST_DB=postgres`). Without PostgreSQL's server binaries it is
//! skipped loudly, except under `CI=true`, where `.ci/run` installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::util::{PATIENCE, Server};

/// The server's bound on a database call (`storage::postgres::DB_TIMEOUT`), plus slack for a
/// loaded machine.
const ANSWER_WITHIN: Duration = Duration::from_secs(5 + 5);

/// The directory of PostgreSQL's server binaries (`initdb`, `pg_ctl`), if installed.
fn server_bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|d| d.join("pg_ctl").exists() && d.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A PostgreSQL of the test's own; stopped (immediately) on drop.
struct PrivatePg {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl PrivatePg {
    fn start() -> Option<PrivatePg> {
        let Some(bin) = server_bin_dir() else {
            assert!(
                std::env::var("CI").is_err(),
                "PostgreSQL's server binaries are missing under CI=true"
            );
            eprintln!("SKIPPED: no PostgreSQL server binaries (apt-get install postgresql)");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        if is_root() {
            // initdb refuses to run as root: the cluster belongs to the postgres user.
            let ok = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown the data directory to postgres");
        }
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let pg = PrivatePg { bin, dir, port };
        let data = pg.data();
        let out = pg.run(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        assert!(out.status.success(), "initdb: {}", text(&out));
        pg.start_server();
        Some(pg)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// Runs a server binary, as the postgres user when we are root.
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let path = self.bin.join(tool);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        cmd.args(args).current_dir("/").output().expect(tool)
    }

    fn start_server(&self) {
        let log = Path::new(&self.data()).with_file_name("server.log");
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off",
            self.port
        );
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log.display().to_string(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
        assert!(out.status.success(), "pg_ctl start: {}", text(&out));
    }

    /// Stops at once, as a crash or a failover would look to hookbin.
    fn stop(&self) {
        let out = self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
        assert!(out.status.success(), "pg_ctl stop: {}", text(&out));
    }

    fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    fn create_db(&self, name: &str) {
        let out = Command::new("psql")
            .args(["-X", "-q", "-d", &self.url("postgres"), "-c"])
            .arg(format!("CREATE DATABASE {name}"))
            .output()
            .expect("psql");
        assert!(out.status.success(), "createdb: {}", text(&out));
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = self.run("pg_ctl", &["-D", &self.data(), "-m", "immediate", "stop"]);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One capture attempt under load.
#[derive(Debug)]
struct Attempt {
    status: u16,
    code: Option<String>,
    id: Option<String>,
    body: Vec<u8>,
    took: Duration,
}

#[test]
fn postgres_stopped_under_load_answers_503_in_time_loses_nothing_and_recovers() {
    if !crate::pg::postgres() {
        eprintln!("skipped: PostgreSQL fault tests need HOOKBIN_TEST_DB=postgres");
        return;
    }
    let Some(pg) = PrivatePg::start() else {
        return;
    };
    pg.create_db("hookbin");
    // No eviction: every acknowledged capture must still be there at the end.
    let s = Server::start_on(
        Path::new(&pg.url("hookbin")),
        &["--max-requests-per-bin", "1000000"],
    );
    let bin = s.create_bin();

    let attempts = Mutex::new(Vec::<Attempt>::new());
    let (acked, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let done = AtomicBool::new(false);
    let path = format!("/r/{bin}");
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (attempts, acked, refused, done, path, s) =
                (&attempts, &acked, &refused, &done, &path, &s);
            scope.spawn(move || {
                // Bounded: at most 20 000 attempts per thread, and it stops when told.
                for i in 0..20_000 {
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    let body = format!("thread {t} capture {i}").into_bytes();
                    let started = Instant::now();
                    let res = s.request("POST", path, &[], &body);
                    let took = started.elapsed();
                    let code = (res.status != 200)
                        .then(|| res.json()["error"]["code"].as_str().map(str::to_owned))
                        .flatten();
                    match res.status {
                        200 => acked.fetch_add(1, Ordering::SeqCst),
                        _ => refused.fetch_add(1, Ordering::SeqCst),
                    };
                    attempts.lock().unwrap().push(Attempt {
                        status: res.status,
                        code,
                        id: res.header("x-request-id").map(str::to_owned),
                        body,
                        took,
                    });
                    if res.status != 200 {
                        // What a webhook sender does: back off a little before retrying.
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            });
        }
        let wait = |what: &str, check: &dyn Fn() -> bool| {
            let deadline = Instant::now() + PATIENCE * 2;
            while !check() {
                assert!(Instant::now() < deadline, "timed out waiting for {what}");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait("captures under load", &|| {
            acked.load(Ordering::SeqCst) >= 100
        });
        pg.stop();
        let before = refused.load(Ordering::SeqCst);
        wait("503s while the database is down", &|| {
            refused.load(Ordering::SeqCst) >= before + 20
        });
        assert_eq!(s.get("/healthz").status, 503, "healthz while down");
        pg.start_server();
        let resumed_from = acked.load(Ordering::SeqCst);
        wait("captures to resume by themselves", &|| {
            acked.load(Ordering::SeqCst) >= resumed_from + 100
        });
        done.store(true, Ordering::Relaxed);
    });
    assert_eq!(s.get("/healthz").status, 200, "healthz after recovery");

    let attempts = attempts.into_inner().unwrap();
    let mut ids = std::collections::HashSet::new();
    for a in &attempts {
        assert!(a.took < ANSWER_WITHIN, "an answer took {:?}: {a:?}", a.took);
        match a.status {
            200 => {
                let id = a.id.clone().expect("x-request-id");
                assert!(ids.insert(id), "an id acknowledged twice: {a:?}");
            }
            503 => assert!(
                matches!(
                    a.code.as_deref(),
                    Some("database_unavailable" | "write_queue_full")
                ),
                "{a:?}"
            ),
            _ => panic!("unexpected answer: {a:?}"),
        }
    }
    // Every acknowledged capture is stored, byte for byte.
    let stored: std::collections::HashMap<String, u64> = s
        .list_all(&bin, 500)
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["body_size"].as_u64().unwrap(),
            )
        })
        .collect();
    for a in attempts.iter().filter(|a| a.status == 200) {
        let id = a.id.as_ref().unwrap();
        assert_eq!(
            stored.get(id).copied(),
            Some(a.body.len() as u64),
            "acknowledged {id} is missing"
        );
    }
    for a in attempts.iter().filter(|a| a.status == 200).step_by(25) {
        let id = a.id.as_ref().unwrap();
        assert_eq!(
            s.stored(&bin, id)["body_text"].as_str().unwrap().as_bytes(),
            a.body
        );
    }
    let down = attempts.iter().filter(|a| a.status == 503).count();
    eprintln!(
        "{} captures acknowledged and all stored, {down} answered 503 while the database was down",
        ids.len()
    );
}
