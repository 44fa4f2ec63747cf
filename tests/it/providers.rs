//! The providers' own libraries judge what `hookbin send` and `hookbin probe` send: a receiver
//! written with `standardwebhooks` (Standard Webhooks, and Svix the way the `svix` package maps
//! its headers onto it), `stripe`, `slack_sdk` and `twilio` from PyPI, and one with
//! `@octokit/webhooks-methods` from npm for GitHub. Shopify and BOTIX publish no library, and no
//! released library implements Standard Webhooks v1a; the vectors and the verifier cover those.
//!
//! The tools are installed into `target/tmp` (a venv and an npm prefix) once per build
//! directory. Under `CI=true` a failed install fails the test; elsewhere the test is skipped
//! with a message naming what to install.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use super::send::{Run, hookbin};
use super::tools::{self, available, run_ok};

/// Pinned to the versions the shared vectors were made and checked with.
const PYTHON_PACKAGES: [&str; 4] = [
    "standardwebhooks==1.1.0",
    "stripe==16.1.0",
    "slack_sdk==3.48.0",
    "twilio==9.13.0",
];
const NPM_PACKAGE: &str = "@octokit/webhooks-methods@6.0.0";

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STRIPE: &str = "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ";
const SLACK: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const TWILIO: &str = "5f20491516d714049ed85a7737c74682";
const GITHUB: &str = "It's a Secret to Everybody";

fn tools_dir() -> PathBuf {
    tools::tools_dir("provider-libraries")
}

/// The venv's python, with the provider packages installed (once per build directory).
fn python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = PYTHON.get_or_init(|| {
        // Written here, once, so that tests running at once never read a half-written script.
        std::fs::create_dir_all(tools_dir()).map_err(|e| e.to_string())?;
        std::fs::write(tools_dir().join("receiver.py"), PYTHON_RECEIVER)
            .map_err(|e| e.to_string())?;
        tools::venv("provider-libraries", &PYTHON_PACKAGES)
    });
    available(
        result,
        "python3 with venv, and PyPI packages standardwebhooks, stripe, slack_sdk, twilio",
    )
}

/// The npm prefix with `@octokit/webhooks-methods` installed.
fn octokit() -> Option<&'static Path> {
    static PREFIX: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = PREFIX.get_or_init(|| {
        let prefix = tools_dir().join("npm");
        let marker = prefix.join("installed.txt");
        std::fs::create_dir_all(&prefix).map_err(|e| e.to_string())?;
        // Next to node_modules, so that its import resolves; written once (see `python`).
        std::fs::write(prefix.join("receiver.mjs"), NODE_RECEIVER).map_err(|e| e.to_string())?;
        if std::fs::read_to_string(&marker).is_ok_and(|m| m == NPM_PACKAGE) {
            return Ok(prefix);
        }
        run_ok(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(&prefix)
                .arg(NPM_PACKAGE),
            "npm install",
        )?;
        std::fs::write(&marker, NPM_PACKAGE).map_err(|e| e.to_string())?;
        Ok(prefix)
    });
    available(
        result,
        "node and npm, and the npm package @octokit/webhooks-methods",
    )
}

/// A receiver process; killed (by its handle) on drop.
struct Process {
    child: Child,
    port: u16,
}

impl Process {
    /// Starts `cmd`, which prints the port it listens on as its first line.
    fn start(mut cmd: Command) -> Process {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the receiver prints its port");
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the receiver did not start: {line:?}")
        });
        Process { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP server, a path per scheme, each verifying with the provider's library: 200 when
/// it accepts, 400 with the library's complaint when it does not.
const PYTHON_RECEIVER: &str = r#"
import json, sys, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import standardwebhooks
import stripe
from slack_sdk.signature import SignatureVerifier
from twilio.request_validator import RequestValidator

SECRETS = json.loads(sys.argv[1])


def verify(scheme, secret, body, headers, url):
    if scheme == "standard-webhooks":
        standardwebhooks.Webhook(secret).verify(body, headers)
    elif scheme == "svix":
        # What the svix package (2.x) does: svix-* headers read as webhook-* ones.
        mapped = {k.replace("svix-", "webhook-", 1): v for k, v in headers.items()}
        standardwebhooks.Webhook(secret).verify(body, mapped)
    elif scheme == "stripe":
        stripe.Webhook.construct_event(body, headers.get("stripe-signature", ""), secret)
    elif scheme == "slack":
        if not SignatureVerifier(secret).is_valid_request(body, headers):
            raise ValueError("slack_sdk: invalid signature")
    elif scheme == "twilio":
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        params = {}
        if media == "application/x-www-form-urlencoded":
            params = dict(urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        if not RequestValidator(secret).validate(url, params, headers.get("x-twilio-signature", "")):
            raise ValueError("twilio: invalid signature")
    else:
        raise ValueError("unknown path")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        scheme = self.path.split("?")[0].strip("/")
        url = "http://" + headers["host"] + self.path
        try:
            verify(scheme, SECRETS[scheme], body, headers, url)
        except Exception as e:
            return self.answer(400, "%s: %s" % (type(e).__name__, e))
        self.answer(200, "accepted")

    def answer(self, status, text):
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

const NODE_RECEIVER: &str = r#"
import http from "node:http";
import { verify } from "@octokit/webhooks-methods";

const secret = process.argv[2];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const body = Buffer.concat(chunks).toString("utf8");
    let ok = false;
    try {
      ok = await verify(secret, body, req.headers["x-hub-signature-256"] || "");
    } catch (e) {
      ok = false;
    }
    res.writeHead(ok ? 200 : 400, { "Content-Type": "text/plain" });
    res.end(ok ? "accepted" : "octokit: invalid signature");
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
"#;

fn python_receiver(python: &Path) -> Process {
    let script = tools_dir().join("receiver.py");
    let secrets = serde_json::json!({
        "standard-webhooks": WHSEC, "svix": WHSEC, "stripe": STRIPE, "slack": SLACK,
        "twilio": TWILIO,
    });
    let mut cmd = Command::new(python);
    cmd.arg(&script).arg(secrets.to_string());
    Process::start(cmd)
}

fn node_receiver(prefix: &Path) -> Process {
    let script = prefix.join("receiver.mjs");
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(GITHUB);
    Process::start(cmd)
}

fn send(url: &str, flags: &[&str]) -> Run {
    let mut args = vec!["send", url, "--timeout", "10s"];
    args.extend(flags);
    hookbin(&args)
}

/// The library accepts what send signs with the right secret, and refuses a wrong one.
fn accepted_and_refused(url: &str, scheme: &str, secret: &str, wrong: &str, extra: &[&str]) {
    let flags = |secret| [&["--scheme", scheme, "--secret", secret][..], extra].concat();
    let run = send(url, &flags(secret));
    assert_eq!(
        run.code, 0,
        "{scheme} {extra:?}: {}{}",
        run.stdout, run.stderr
    );
    assert!(run.stdout.ends_with(" ms accepted\n"), "{}", run.stdout);
    let run = send(url, &flags(wrong));
    assert_eq!(
        run.code, 1,
        "{scheme} {extra:?} wrong secret: {}",
        run.stdout
    );
    assert!(run.stdout.starts_with("1 400 "), "{}", run.stdout);
}

#[test]
fn the_providers_libraries_accept_what_send_signs() {
    let utf8 = "{\"name\":\"Zoë Müller\",\"note\":\"café ☕ 東京 🚀\"}\n";
    let slash = "token=xyz&team_id=T1&command=%2Fweather&text=94070&response_url=https%3A%2F%2Fhooks.example%2Fx";
    let form = ["--content-type", "application/x-www-form-urlencoded"];
    if let Some(python) = python() {
        let receiver = python_receiver(python);
        let other_whsec = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        for (path, scheme, secret, wrong, extra) in [
            (
                "/standard-webhooks",
                "standard-webhooks",
                WHSEC,
                other_whsec,
                vec!["--data", utf8],
            ),
            (
                "/standard-webhooks",
                "standard-webhooks",
                WHSEC,
                other_whsec,
                vec![],
            ),
            ("/svix", "svix", WHSEC, other_whsec, vec!["--data", utf8]),
            (
                "/stripe",
                "stripe",
                STRIPE,
                "whsec_wrong",
                vec!["--data", utf8],
            ),
            ("/stripe", "stripe", STRIPE, "whsec_wrong", vec![]),
            (
                "/slack",
                "slack",
                SLACK,
                "0000",
                [&["--data", slash][..], &form].concat(),
            ),
            (
                "/twilio",
                "twilio",
                TWILIO,
                "0000",
                [
                    &[
                        "--data",
                        "From=%2B15005550006&Body=Gr%C3%BC%C3%9Fe+%E2%98%95",
                    ][..],
                    &form,
                ]
                .concat(),
            ),
            // A JSON body: Twilio signs the URL alone.
            ("/twilio?tenant=7", "twilio", TWILIO, "0000", vec![]),
        ] {
            accepted_and_refused(&receiver.url(path), scheme, secret, wrong, &extra);
        }
    }
    if let Some(prefix) = octokit() {
        let receiver = node_receiver(prefix);
        let url = receiver.url("/github");
        accepted_and_refused(&url, "github", GITHUB, "not it", &["--data", utf8]);
        accepted_and_refused(
            &url,
            "github",
            GITHUB,
            "not it",
            &["--data", "Hello, World!"],
        );
    }
}

/// `(case, result)` for every row of probe's JSON.
fn probe(url: &str, flags: &[&str]) -> Vec<(String, String)> {
    let mut args = vec!["probe", url, "--json"];
    args.extend(flags);
    let run = hookbin(&args);
    let report: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    let rows = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["case"].as_str().unwrap().to_owned(),
                c["result"].as_str().unwrap().to_owned(),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(run.code, 0, "{flags:?}: {}", run.stdout);
    assert_eq!(report["passed"], true);
    rows
}

fn only(rows: &[(String, String)], result: &str) -> Vec<String> {
    rows.iter()
        .filter(|(_, r)| r == result)
        .map(|(c, _)| c.clone())
        .collect()
}

#[test]
fn receivers_built_on_the_providers_libraries_pass_the_probe() {
    if let Some(python) = python() {
        let receiver = python_receiver(python);
        let rows = probe(
            &receiver.url("/standard-webhooks"),
            &["--scheme", "standard-webhooks", "--secret", WHSEC],
        );
        assert!(only(&rows, "n/a").is_empty(), "{rows:?}");
        let rows = probe(
            &receiver.url("/svix"),
            &["--scheme", "svix", "--secret", WHSEC],
        );
        assert!(only(&rows, "n/a").is_empty(), "{rows:?}");
        // Stripe's library accepts a timestamp from the future: n/a, not a failure.
        let rows = probe(
            &receiver.url("/stripe"),
            &["--scheme", "stripe", "--secret", STRIPE],
        );
        assert_eq!(only(&rows, "n/a"), ["future-timestamp"], "{rows:?}");
        let rows = probe(
            &receiver.url("/slack"),
            &["--scheme", "slack", "--secret", SLACK],
        );
        assert!(only(&rows, "n/a").is_empty(), "{rows:?}");
        let rows = probe(
            &receiver.url("/twilio"),
            &[
                "--scheme",
                "twilio",
                "--secret",
                TWILIO,
                "--content-type",
                "application/x-www-form-urlencoded",
                "--data",
                "Digits=1234&From=%2B15005550006",
            ],
        );
        assert_eq!(
            only(&rows, "n/a"),
            ["reserialized-body", "stale-timestamp", "future-timestamp"],
            "{rows:?}"
        );
    }
    if let Some(prefix) = octokit() {
        let receiver = node_receiver(prefix);
        let rows = probe(
            &receiver.url("/github"),
            &["--scheme", "github", "--secret", GITHUB],
        );
        assert_eq!(
            only(&rows, "n/a"),
            ["stale-timestamp", "future-timestamp"],
            "{rows:?}"
        );
    }
}
