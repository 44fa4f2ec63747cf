//! The OpenAPI document (`docs/openapi.json`, served at `/api/openapi.json`) against the code and
//! the live server: it lists exactly the router's routes ([`hookbin::http::api::ROUTES`]), a real
//! validator (`openapi-spec-validator`) accepts it, and schemathesis fuzzes a running hookbin with
//! it (every check, a fixed seed and number of examples) without finding a 5xx, an answer that
//! breaks its schema or an undocumented status; the errors the document promises must show up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use super::tools::{self, available};
use super::util::Server;
use hookbin::http::api::{OPENAPI_JSON, ROUTES};

/// Pinned so that a run is repeatable: the same seed gives the same requests only with the same
/// generator.
const PYTHON_PACKAGES: [&str; 3] = [
    "schemathesis==4.32.5",
    "openapi-spec-validator==0.9.0",
    "haralyzer==2.4.0",
];

/// The venv with schemathesis, the validator and haralyzer (the HAR test uses it too).
pub fn api_tools() -> Option<&'static Path> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = PYTHON.get_or_init(|| tools::venv("api-tools", &PYTHON_PACKAGES));
    available(
        result,
        "python3 with venv, and PyPI packages schemathesis, openapi-spec-validator, haralyzer",
    )
}

fn document() -> Value {
    serde_json::from_str(OPENAPI_JSON).expect("docs/openapi.json is JSON")
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `(path, METHOD)` of every operation in the document.
fn documented() -> BTreeSet<(String, String)> {
    let doc = document();
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                out.insert((path.clone(), method.to_uppercase()));
            }
        }
    }
    out
}

#[test]
fn the_document_lists_exactly_the_routes_of_the_router() {
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .flat_map(|r| r.methods().map(|m| (r.path.to_owned(), m.to_owned())))
        .collect();
    let documented = documented();
    let missing: Vec<_> = routed.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&routed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/openapi.json lacks {missing:?} and has {extra:?} that the router (http/api.rs \
         ROUTES) does not"
    );
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    // Every operation is named (schemathesis and generated clients use the names) and
    // documents its errors in the API's one error shape.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            assert!(
                op["operationId"].is_string(),
                "{method} {path}: operationId"
            );
            let responses = op["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|s| s.starts_with('4')),
                "{method} {path}: no error documented"
            );
        }
    }
}

#[test]
fn the_server_serves_the_repository_document() {
    let server = Server::start(&[]);
    let res = server.get("/api/openapi.json");
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(res.body, OPENAPI_JSON.as_bytes());
    let file =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json"))
            .unwrap();
    assert_eq!(file, OPENAPI_JSON);
    // A documented path with an undocumented method: 405 naming the documented ones.
    let res = server.request("PATCH", "/api/openapi.json", &[], b"");
    res.assert_error(405, "method_not_allowed");
    assert_eq!(res.header("allow"), Some("GET"));
}

#[test]
fn openapi_spec_validator_accepts_the_document() {
    let Some(python) = api_tools() else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    let out = Command::new(python)
        .args(["-m", "openapi_spec_validator"])
        .arg(&path)
        .output()
        .expect("run openapi-spec-validator");
    assert!(
        out.status.success(),
        "openapi-spec-validator: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Requests of every kind the request endpoints treat differently, captured into `bin`; their
/// ids.
fn seed(server: &Server, bin: &str) -> Vec<String> {
    let gzip = |data: &[u8]| -> Vec<u8> {
        use std::io::Write;
        let mut child = Command::new("gzip")
            .arg("-c")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("gzip (apt install gzip)");
        child.stdin.take().unwrap().write_all(data).unwrap();
        child.wait_with_output().unwrap().stdout
    };
    let multipart: &[u8] = b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; \
        filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--xyz\r\n\
        Content-Disposition: form-data; name=\"n\"\r\n\r\n42\r\n--xyz--\r\n";
    type Capture<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>);
    let requests: Vec<Capture> = vec![
        (
            "POST",
            vec![
                ("Content-Type", "application/json"),
                ("Stripe-Signature", "t=1700000000,v1=00"),
            ],
            br#"{"type":"evt","amount":42}"#.to_vec(),
        ),
        (
            "PUT",
            vec![
                ("Content-Type", "multipart/form-data; boundary=xyz"),
                ("Content-Encoding", "gzip"),
            ],
            gzip(multipart),
        ),
        (
            "POST",
            vec![("Content-Encoding", "gzip")],
            b"not gzip at all".to_vec(),
        ),
        // Decodes to more than the server's --max-decoded-bytes (see the test).
        (
            "POST",
            vec![("Content-Encoding", "gzip")],
            gzip(&[b'0'; 4096]),
        ),
        ("GET", vec![("X-Hub-Signature-256", "sha256=00")], vec![]),
    ];
    requests
        .into_iter()
        .map(|(method, headers, body)| {
            let res = server.request(method, &format!("/r/{bin}/path?a=1"), &headers, &body);
            assert_eq!(res.status, 200, "{}", res.text());
            res.header("x-request-id").unwrap().to_owned()
        })
        .collect()
}

/// schemathesis's project file: the seeded bin and requests offered to the read-only
/// operations (random ids almost never exist), and where the schema cannot say everything the
/// server checks, the statuses valid-looking data may get.
fn config(bin: &str, requests: &[String]) -> String {
    let (undecodable, bomb) = (&requests[2], &requests[3]);
    let reqs: Vec<String> = requests.iter().map(|r| format!("\"{r}\"")).collect();
    let reqs = reqs.join(", ");
    format!(
        r#"
workers = 1

[dictionaries.bins]
values = ["{bin}"]

[dictionaries.reqs]
values = [{reqs}]

# The encoded bodies: one that does not decode, one that decodes beyond the limit.
[dictionaries.encoded]
values = ["{undecodable}", "{bomb}"]

[[operations]]
include-operation-id-regex = "^(getBin|setBinResponse|listRequests|getRequest|getRequestPart|verifyRequest|getRequestCurl|exportBin)$"
parameters = {{ "path.bin" = {{ dictionary = "bins", probability = 0.7 }}, "path.req" = {{ dictionary = "reqs", probability = 0.8 }}, "query.q" = {{ dictionary = "searches", probability = 0.3 }} }}

# Searches that parse and match some of the seeded requests (random text rarely parses).
[dictionaries.searches]
values = ["method:post", "body:amount", "-header:x-hub-signature-256", "path:/path \"evt\"", "header:content-encoding=gzip"]

[[operations]]
include-operation-id = "getRequestBody"
parameters = {{ "path.bin" = {{ dictionary = "bins", probability = 0.9 }}, "path.req" = {{ dictionary = "encoded", probability = 1.0 }}, "query.decode" = {{ dictionary = "decode", probability = 0.5 }} }}

[dictionaries.decode]
values = ["1"]

# The ResponseSpec rules beyond its schema (no hop-by-hop or origin-wide headers, cookies and
# redirects kept inside the bin) and the secret's form per scheme answer 422 to data the schema
# allows; a cursor is valid only as issued (400 otherwise), a target only as an http(s) URL, and
# a part only when the request has that many.
[[operations]]
include-operation-id-regex = "^(createBin|setBinResponse|verifyRequest)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "404", "422"]

[[operations]]
include-operation-id-regex = "^(listRequests|getRequestCurl)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "422"]

# `DELETE .../requests` empties the list, which stays (API.md): schemathesis's use-after-free
# check takes a DELETE with a path parameter for the deletion of the resource at that path.
# `tests/it/api.rs` checks that the list of a deleted bin is a 404.
[[operations]]
include-operation-id = "listRequests"
checks.use_after_free.enabled = false

[[operations]]
include-operation-id-regex = "^(getRequestBody)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "404", "413", "422"]

# A bin created with `"private": true` answers 404, as an unknown bin, to every call without its
# view token (issue 18), and an OpenAPI link cannot carry the token into `Authorization` (the
# spec ignores header parameters of that name): so the bins schemathesis creates are public,
# and every check (ensure_resource_availability too) holds for them. `tests/it/private.rs`
# checks every bin operation of a private bin with and without the token.
[[operations]]
include-operation-id = "createBin"
parameters = {{ "body.private" = false }}
"#
    )
}

/// Runs schemathesis over the whole document but the event stream (an answer that does not
/// end while the bin lives: `tests/it/api.rs` and `forward.rs` test it), with every check.
#[test]
fn schemathesis_finds_no_server_error_and_no_schema_violation() {
    let Some(python) = api_tools() else { return };
    let server = Server::start(&[
        "--max-bins-per-minute",
        "100000",
        "--max-in-flight-per-client",
        "0",
        "--max-decoded-bytes",
        "1024",
    ]);
    let bin = server.create_bin();
    let requests = seed(&server, &bin);
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("schemathesis.toml");
    std::fs::write(&config_path, config(&bin, &requests)).unwrap();
    let report = dir.path().join("report.har");
    let schemathesis = python.parent().unwrap().join("schemathesis");
    let out = Command::new(&schemathesis)
        .current_dir(dir.path())
        .arg("--config-file")
        .arg(&config_path)
        .args(["run", "--no-color"])
        .args(["--seed", "20240617", "--max-examples", "40"])
        .args(["--output-truncate", "true"])
        .args(["--request-timeout", "10"])
        .args(["--exclude-operation-id", "streamBin"])
        .args(["--report", "har", "--report-har-path"])
        .arg(&report)
        .args(["--url", &server.url("")])
        .arg(server.url("/api/openapi.json"))
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    documented_errors_appear(&report);
    // The seeded bin took part: its requests were read through the API.
    let log = server.log();
    assert!(!log.contains("panicked"), "{log}");
}

/// Every client error the document gives an operation (but those that need load, a slow body
/// or another site's page to happen) was answered by that operation during the run.
fn documented_errors_appear(report: &Path) {
    let har: Value =
        serde_json::from_str(&std::fs::read_to_string(report).expect("the HAR report")).unwrap();
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for entry in har["log"]["entries"].as_array().unwrap() {
        let method = entry["request"]["method"].as_str().unwrap().to_owned();
        let url = entry["request"]["url"].as_str().unwrap();
        let path = url
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
            .unwrap_or("/");
        let path = path.split('?').next().unwrap();
        let Some(template) = template_of(path) else {
            continue;
        };
        let status = entry["response"]["status"].to_string();
        seen.entry((template, method)).or_default().insert(status);
    }
    // 403: cross-site pages; 408, 413 (API bodies), 429, 503: time, size and load.
    let needs_more_than_fuzzing = ["403", "408", "429", "503"];
    // Only a database edited by hand holds a request that curl cannot send (a CR in a header):
    // the server never records one. `src/render/curl.rs` tests it.
    let never_captured = [("/api/bins/{bin}/requests/{req}/curl", "422")];
    let doc = document();
    let mut missing = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            if op["operationId"] == "streamBin" {
                continue;
            }
            let key = (path.clone(), method.to_uppercase());
            let statuses = seen.get(&key).cloned().unwrap_or_default();
            for status in op["responses"].as_object().unwrap().keys() {
                let is_error = status.starts_with('4');
                let body_limit = status == "413" && op.get("requestBody").is_some();
                if is_error
                    && !needs_more_than_fuzzing.contains(&status.as_str())
                    && !body_limit
                    && !never_captured.contains(&(path.as_str(), status.as_str()))
                    && !statuses.contains(status)
                {
                    missing.push(format!("{} {path}: {status} (saw {statuses:?})", key.1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documented errors that schemathesis never got:\n{}",
        missing.join("\n")
    );
}

/// The route template of `path` (`/api/bins/abc.../requests` -> `/api/bins/{bin}/requests`).
fn template_of(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('/').collect();
    ROUTES.iter().map(|r| r.path).find_map(|t| {
        let parts: Vec<&str> = t.split('/').collect();
        (parts.len() == segments.len()
            && parts
                .iter()
                .zip(&segments)
                .all(|(p, s)| p.starts_with('{') && !s.is_empty() || p == s))
        .then(|| t.to_owned())
    })
}
