//! The Dockerfile, checked without a Docker engine.
//!
//! The Dockerfile is parsed, not duplicated: its build stage must run exactly the README's build
//! command, and its runtime stage (user, volume, environment, entrypoint, health check, stop
//! signal) is replayed here against a real binary: the test build's, or the `dist` binary that
//! `.ci/docker-steps` built with the Dockerfile's own command (`HOOKBIN_IMAGE_BINARY`).

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::util::{Log, PATIENCE, read_response, wait_exit};

fn repo_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|e| panic!("read {name}: {e}"))
}

/// One instruction of the Dockerfile: its stage (0 = first FROM), keyword and arguments.
#[derive(Debug)]
struct Instruction {
    stage: usize,
    keyword: String,
    args: String,
}

/// The Dockerfile's instructions, continuation lines joined, comments dropped.
fn dockerfile() -> Vec<Instruction> {
    let text = repo_file("Dockerfile");
    let mut out = Vec::new();
    let mut stage = None::<usize>;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(part) = trimmed.strip_suffix('\\') {
            pending.push_str(part.trim());
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let full = std::mem::take(&mut pending);
        let (keyword, args) = full.split_once(' ').unwrap_or((&full, ""));
        let keyword = keyword.to_ascii_uppercase();
        if keyword == "FROM" {
            stage = Some(stage.map_or(0, |s| s + 1));
        }
        out.push(Instruction {
            stage: stage.expect("the Dockerfile starts with FROM"),
            keyword,
            args: args.trim().to_owned(),
        });
    }
    out
}

/// The arguments of each `keyword` instruction in `stage`.
fn all<'a>(file: &'a [Instruction], stage: usize, keyword: &str) -> Vec<&'a str> {
    file.iter()
        .filter(|i| i.stage == stage && i.keyword == keyword)
        .map(|i| i.args.as_str())
        .collect()
}

fn one<'a>(file: &'a [Instruction], stage: usize, keyword: &str) -> &'a str {
    match all(file, stage, keyword)[..] {
        [args] => args,
        ref found => panic!("stage {stage}: expected one {keyword}, found {found:?}"),
    }
}

/// An exec-form list: `["hookbin", "serve"]`.
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("not exec form ({e}): {args}"))
}

/// `ENV A=1 B=2` pairs of a stage, in order.
fn env_of(file: &[Instruction], stage: usize) -> Vec<(String, String)> {
    all(file, stage, "ENV")
        .iter()
        .flat_map(|args| args.split_whitespace())
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("ENV in KEY=value form");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

#[test]
fn dockerfile_build_stage_runs_the_readme_build_command() {
    let file = dockerfile();
    let stages = file.iter().filter(|i| i.keyword == "FROM").count();
    assert_eq!(stages, 2, "a build stage and a runtime stage");
    assert!(one(&file, 0, "FROM").starts_with("rust:"));
    assert!(one(&file, 0, "FROM").ends_with(" AS build"));

    // The README's build command: every `cargo build` line in it is the same one.
    let readme = repo_file("README.md");
    let mut commands: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cargo build"))
        .collect();
    commands.dedup();
    assert_eq!(
        commands.len(),
        1,
        "one build command in the README: {commands:?}"
    );
    assert_eq!(
        all(&file, 0, "RUN"),
        commands,
        "the Dockerfile builds with exactly the README's command"
    );
    // The shipped build: the `dist` profile (fat LTO), not the fast `release` one.
    assert!(commands[0].contains("--profile dist") && commands[0].contains("--locked"));

    // The runtime stage copies what that command produced, and .ci/docker-steps checks that
    // same binary.
    let workdir = one(&file, 0, "WORKDIR");
    assert_eq!(
        one(&file, 1, "COPY"),
        format!("--from=build {workdir}/target/dist/hookbin /usr/local/bin/hookbin")
    );
    assert!(
        repo_file(".ci/docker-steps").contains("HOOKBIN_IMAGE_BINARY=\"$PWD/target/dist/hookbin\""),
        ".ci/docker-steps tests another binary than the image's"
    );
    // The Rust image is new enough for the crate.
    let image = one(&file, 0, "FROM");
    let version = image["rust:".len()..].split('-').next().unwrap();
    let rust_version = repo_file("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"')
        .to_owned();
    let parse = |v: &str| -> Vec<u32> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    assert!(
        parse(version) >= parse(&rust_version),
        "{image} < {rust_version}"
    );

    // The build context leaves out build output, the repository and local databases.
    let ignore = repo_file(".dockerignore");
    for entry in ["target/", ".git", "*.db"] {
        assert!(ignore.lines().any(|l| l.trim() == entry), "{entry}");
    }
}

#[test]
fn dockerfile_runtime_stage_is_small_non_root_and_configured_by_env() {
    let file = dockerfile();
    assert!(
        one(&file, 1, "FROM").contains("-slim"),
        "a slim runtime base"
    );
    let (uid, gid) = image_user(&file);
    assert!(uid != 0 && gid != 0, "a non-root user");
    assert_eq!(one(&file, 1, "VOLUME"), "/data");
    let env = env_of(&file, 1);
    let get = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("HOOKBIN_DB"), Some("/data/hookbin.db"));
    assert_eq!(get("HOOKBIN_LISTEN"), Some("0.0.0.0:8080"));
    assert!(env.iter().all(|(k, _)| k.starts_with("HOOKBIN_")));
    assert_eq!(one(&file, 1, "EXPOSE"), "8080");
    assert_eq!(one(&file, 1, "STOPSIGNAL"), "SIGTERM");
    assert_eq!(healthcheck_argv(&file), ["hookbin", "healthcheck"]);
    assert_eq!(entry_argv(&file), ["hookbin", "serve"]);
}

fn image_user(file: &[Instruction]) -> (u32, u32) {
    let user = one(file, 1, "USER");
    let (uid, gid) = user
        .split_once(':')
        .unwrap_or_else(|| panic!("USER uid:gid, numeric: {user}"));
    (uid.parse().unwrap(), gid.parse().unwrap())
}

fn healthcheck_argv(file: &[Instruction]) -> Vec<String> {
    let health = one(file, 1, "HEALTHCHECK");
    exec_form(&health[health.find("CMD ").expect("HEALTHCHECK ... CMD") + 4..])
}

fn entry_argv(file: &[Instruction]) -> Vec<String> {
    let mut argv = exec_form(one(file, 1, "ENTRYPOINT"));
    argv.extend(exec_form(one(file, 1, "CMD")));
    argv
}

/// A process of the emulated container; killed on drop.
struct Contained {
    child: Option<Child>,
    log: Log,
}

impl Drop for Contained {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- container log ---\n{}", self.log.text());
        }
    }
}

/// The image's filesystem and process setup, emulated in a temporary directory.
struct Container {
    root: tempfile::TempDir,
    user: (u32, u32),
    env: Vec<(String, String)>,
    as_root: bool,
}

impl Container {
    fn command(&self, argv: &[String], env: &[(&str, String)]) -> Command {
        // Exec form: argv[0] is looked up on the image's PATH, where COPY put the binary.
        let program = self.root.path().join("usr/local/bin").join(&argv[0]);
        assert!(program.is_file(), "{} is not in the image", argv[0]);
        let mut cmd = Command::new(program);
        cmd.args(&argv[1..])
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        if self.as_root {
            // The image's `USER uid:gid` (std also drops root's supplementary groups).
            cmd.uid(self.user.0).gid(self.user.1);
        }
        cmd
    }
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// The real uid of a running process.
fn uid_of(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn http(addr: SocketAddr, raw: &str) -> crate::util::Response {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    conn.write_all(raw.as_bytes()).unwrap();
    read_response(&mut BufReader::new(conn)).unwrap()
}

#[test]
fn image_runtime_runs_as_its_user_with_env_config_health_check_and_stop_signal() {
    let file = dockerfile();
    let binary = std::env::var_os("HOOKBIN_IMAGE_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_hookbin")));
    eprintln!("image binary: {}", binary.display());
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        root.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // COPY --from=build ... /usr/local/bin/hookbin
    let bin_dir = root.path().join("usr/local/bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::fs::copy(&binary, bin_dir.join("hookbin")).expect("copy the binary");
    // RUN ... mkdir -p /data && chown uid:gid /data; VOLUME /data
    let volume = one(&file, 1, "VOLUME");
    let data = root.path().join(volume.trim_start_matches('/'));
    std::fs::create_dir_all(&data).unwrap();
    let user = image_user(&file);
    let as_root = is_root();
    if as_root {
        std::os::unix::fs::chown(&data, Some(user.0), Some(user.1)).unwrap();
    }
    // ENV, with the volume at its emulated path and port 0 instead of 8080 (which may be taken).
    let env = env_of(&file, 1)
        .into_iter()
        .map(|(k, v)| {
            let v = v.replace(volume, &data.display().to_string());
            let v = if k == "HOOKBIN_LISTEN" {
                v.replace(":8080", ":0")
            } else {
                v
            };
            (k, v)
        })
        .collect();
    let container = Container {
        root,
        user,
        env,
        as_root,
    };

    // ENTRYPOINT + CMD
    let mut child = container
        .command(&entry_argv(&file), &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the entrypoint");
    let log = Log::default();
    log.follow(child.stderr.take().unwrap());
    log.follow(child.stdout.take().unwrap());
    let pid = child.id();
    let mut server = Contained {
        child: Some(child),
        log: log.clone(),
    };
    const LISTENING: &str = "listening on http://0.0.0.0:";
    let text = log
        .wait_until(|text| text.contains(LISTENING))
        .unwrap_or_else(|e| panic!("no '{LISTENING}' line: HOOKBIN_LISTEN not applied? {e}"));
    let rest = &text[text.find(LISTENING).unwrap() + LISTENING.len()..];
    let port: u16 = rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()]
        .parse()
        .unwrap();
    if as_root {
        assert_eq!(uid_of(pid), user.0, "runs as the image's USER");
    } else {
        assert_ne!(uid_of(pid), 0);
    }
    // HOOKBIN_DB put the database on the volume, owned by the image's user.
    let db = data.join("hookbin.db");
    assert!(db.is_file(), "no database at {}", db.display());
    if as_root {
        assert_eq!(std::fs::metadata(&db).unwrap().uid(), user.0);
    }
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let res = http(
        addr,
        "POST /api/bins HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(res.status, 201, "{}", res.text());
    let bin = res.json()["id"].as_str().unwrap().to_owned();
    let res = http(
        addr,
        &format!(
            "POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        ),
    );
    assert_eq!(res.status, 200);

    // HEALTHCHECK CMD, with the container's environment (the real port in HOOKBIN_LISTEN).
    let listen = ("HOOKBIN_LISTEN", format!("0.0.0.0:{port}"));
    let health = |container: &Container| {
        container
            .command(&healthcheck_argv(&file), std::slice::from_ref(&listen))
            .output()
            .expect("run the health check")
    };
    let out = health(&container);
    assert!(out.status.success(), "health check failed: {out:?}");

    // STOPSIGNAL: a clean stop, exit 0; then the health check fails.
    let signal = one(&file, 1, "STOPSIGNAL").trim_start_matches("SIG");
    let ok = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let mut child = server.child.take().unwrap();
    let status = wait_exit(&mut child, &[&log]);
    assert!(status.success(), "exit status after SIG{signal}: {status}");
    assert_eq!(health(&container).status.code(), Some(1));
    // The capture is in the database on the volume.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM bin_requests", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}
