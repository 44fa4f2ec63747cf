//! `hookbin healthcheck`: the container health check, against a real server.

use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::util::{Server, closed_port};

fn hookbin(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbin"));
    cmd.args(args).env_remove("HOOKBIN_LISTEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run hookbin")
}

#[test]
fn healthcheck_exits_0_when_healthz_answers_200_and_1_otherwise() {
    let s = Server::start(&[]);
    let url = s.url("/healthz");
    let out = hookbin(&["healthcheck", "--url", &url], &[]);
    assert!(out.status.success(), "{out:?}");
    // Without --url: /healthz at HOOKBIN_LISTEN, the variable the server reads too.
    let listen = s.addr.to_string();
    let out = hookbin(&["healthcheck"], &[("HOOKBIN_LISTEN", &listen)]);
    assert!(out.status.success(), "{out:?}");
    let wildcard = format!("0.0.0.0:{}", s.addr.port());
    let out = hookbin(&["healthcheck"], &[("HOOKBIN_LISTEN", &wildcard)]);
    assert!(out.status.success(), "0.0.0.0 means loopback: {out:?}");

    let out = hookbin(&["healthcheck", "--url", &s.url("/nope")], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("404"),
        "{out:?}"
    );

    // A server that accepts but never answers: exit 1 after --timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/healthz", silent.local_addr().unwrap());
    let started = Instant::now();
    let out = hookbin(
        &["healthcheck", "--url", &silent_url, "--timeout", "300ms"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Nothing listening: exit 1, naming the reason.
    let out = hookbin(
        &[
            "healthcheck",
            "--url",
            &format!("http://{}/healthz", closed_port()),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));

    let out = hookbin(&["healthcheck", "--url", "ftp://h/"], &[]);
    assert_eq!(out.status.code(), Some(2), "a bad flag value: {out:?}");
}
