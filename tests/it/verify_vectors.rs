//! Every vector in `shared/vectors/signatures.json` (made with the providers' own libraries),
//! verified twice: once with its scheme named and once with the scheme detected from the headers.
//! The verdict and reason must match the file's `expected`, and nothing in the answer may
//! contain the secret.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hookbin::model::{HeaderPair, StoredRequest};
use hookbin::verify::{self, Scheme, Verification, VerifyInput};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

/// The vectors, vendored from the shared folder (see tests/data/README.md).
const VECTOR_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/signatures.json");
/// The project's shared copy: `shared/vectors/signatures.json` in the checkout's parent or any
/// folder above it (`/work/shared` for `/work/main` and for the worktrees in `/work/wt/*`), or in
/// `$HOOKBIN_SHARED_DIR`.
const SHARED_VECTORS: &str = "vectors/signatures.json";

/// The bin URL the server would pass; the Twilio vectors carry their own `url`, which wins.
const DEFAULT_URL: &str = "http://127.0.0.1:8080/r/0123456789abcdefgh";

/// A wall clock far from every vector's `now`: passing `now` must override it.
const WALL_CLOCK: i64 = 4_000_000_000;

#[derive(Deserialize)]
pub(crate) struct VectorFile {
    vectors: Vec<Vector>,
}

#[derive(Deserialize)]
pub(crate) struct Vector {
    pub(crate) id: String,
    pub(crate) scheme: String,
    pub(crate) secret: String,
    /// A JSON object; kept in document order, which is the order the sender sent them in.
    #[serde(deserialize_with = "ordered_pairs")]
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body_base64: String,
    pub(crate) now: i64,
    pub(crate) tolerance_seconds: Option<u64>,
    pub(crate) expected: Expected,
    pub(crate) url: Option<String>,
    /// standard-webhooks-v1a only: the `whsk_` key the signatures were made with.
    pub(crate) signing_key_for_reference: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct Expected {
    pub(crate) valid: bool,
    pub(crate) reason: String,
}

/// Reads a JSON object as `(name, value)` pairs in document order. (`serde_json::Map` would
/// sort them unless the `preserve_order` feature were on, which would change it crate-wide.)
fn ordered_pairs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of header names to string values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
    d.deserialize_map(Pairs)
}

pub(crate) fn load() -> Vec<Vector> {
    let text = std::fs::read_to_string(VECTOR_FILE)
        .unwrap_or_else(|e| panic!("cannot read {VECTOR_FILE}: {e}"));
    serde_json::from_str::<VectorFile>(&text)
        .expect("vector file parses")
        .vectors
}

fn request(v: &Vector) -> StoredRequest {
    let body = BASE64.decode(&v.body_base64).expect("body_base64 decodes");
    StoredRequest {
        id: hookbin::ids::RequestId::from_row(1),
        bin_id: "0123456789abcdefgh".into(),
        method: "POST".into(),
        path: "/r/0123456789abcdefgh".into(),
        subpath: String::new(),
        query: String::new(),
        headers: v
            .headers
            .iter()
            .map(|(n, val)| HeaderPair::new(n.as_str(), val.as_bytes()))
            .collect(),
        body_size: body.len() as u64,
        body,
        body_truncated: false,
        remote_addr: "127.0.0.1".into(),
        http_version: "HTTP/1.1".into(),
        received_at: v.now * 1000,
        response: None,
    }
}

fn input(v: &Vector, scheme: Option<&str>) -> VerifyInput {
    VerifyInput {
        secret: v.secret.clone(),
        scheme: scheme.map(str::to_owned),
        tolerance_seconds: v.tolerance_seconds,
        now: Some(v.now),
        url: v.url.clone(),
    }
}

/// The forms of the secret that must never appear in an answer: the text itself, the part after
/// a `whsec_`/`whpk_`/`whsk_` prefix, and the decoded key as hex and base64.
pub(crate) fn secret_forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned(), hex(secret.as_bytes())];
    if let Some((_, encoded)) = secret.split_once('_') {
        forms.push(encoded.to_owned());
    }
    let encoded = secret.split_once('_').map_or(secret, |(_, e)| e);
    if let Ok(key) = BASE64.decode(encoded) {
        forms.push(hex(&key));
        forms.push(BASE64.encode(&key));
    }
    forms
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Checks one answer against the vector; returns what is wrong, if anything.
fn problems(v: &Vector, mode: &str, answer: &Verification) -> Vec<String> {
    let mut wrong = Vec::new();
    if answer.valid != v.expected.valid {
        wrong.push(format!(
            "valid = {}, expected {}",
            answer.valid, v.expected.valid
        ));
    }
    if answer.reason.as_str() != v.expected.reason {
        wrong.push(format!(
            "reason = {}, expected {}",
            answer.reason.as_str(),
            v.expected.reason
        ));
    }
    let canonical = Scheme::from_name(&v.scheme).map(Scheme::name);
    let undetectable = mode == "detected" && v.expected.reason == "missing_header";
    if answer.scheme.as_deref() != canonical && !(undetectable && answer.scheme.is_none()) {
        wrong.push(format!(
            "scheme = {:?}, expected {canonical:?}",
            answer.scheme
        ));
    }
    let timestamp_ok_expected = match (v.tolerance_seconds, v.expected.reason.as_str()) {
        (None, _) | (_, "missing_header") => None,
        (Some(_), "timestamp_out_of_tolerance") => Some(false),
        (Some(_), _) => Some(true),
    };
    if answer.timestamp_ok != timestamp_ok_expected {
        wrong.push(format!(
            "timestamp_ok = {:?}, expected {timestamp_ok_expected:?}",
            answer.timestamp_ok
        ));
    }
    if answer.detail.trim().is_empty() {
        wrong.push("detail is empty".into());
    }
    let json = serde_json::to_string(answer).expect("Verification serialises");
    let public = format!(
        "{:?}{}{}",
        v.headers,
        String::from_utf8_lossy(&request(v).body),
        v.url.as_deref().unwrap_or_default()
    );
    for form in secret_forms(&v.secret) {
        // A short secret can occur in the request itself (twilio's published token "12345" is
        // in its CallSid); only a form absent from the request's own data can reveal a leak.
        if json.contains(&form) && !public.contains(&form) {
            wrong.push("the answer contains the secret".into());
        }
    }
    wrong
}

#[test]
fn every_vector_verifies_as_expected_with_named_and_detected_scheme() {
    let vectors = load();
    let mut failures = String::new();
    let mut passed = 0;
    for v in &vectors {
        let req = request(v);
        let mut ok = true;
        for (mode, scheme) in [("named", Some(v.scheme.as_str())), ("detected", None)] {
            let answer = match verify::verify(&req, &input(v, scheme), DEFAULT_URL, WALL_CLOCK) {
                Ok(answer) => answer,
                Err(e) => {
                    ok = false;
                    let _ = writeln!(failures, "{} [{mode}]: error: {e}", v.id);
                    continue;
                }
            };
            let wrong = problems(v, mode, &answer);
            if !wrong.is_empty() {
                ok = false;
                let _ = writeln!(
                    failures,
                    "{} [{mode}]: {}\n    detail: {}",
                    v.id,
                    wrong.join("; "),
                    answer.detail
                );
            }
        }
        passed += usize::from(ok);
    }
    println!(
        "signature vectors: {passed} of {} pass, named and detected",
        vectors.len()
    );
    assert!(failures.is_empty(), "failing vectors:\n{failures}");
    assert!(
        vectors.len() >= 130,
        "only {} vectors loaded",
        vectors.len()
    );
}

#[test]
fn the_vector_file_covers_every_provider_scheme() {
    let vectors = load();
    for scheme in Scheme::ALL {
        if scheme == Scheme::HmacSha256 {
            continue; // the generic check has no provider vectors; unit tests cover it
        }
        assert!(
            vectors
                .iter()
                .any(|v| Scheme::from_name(&v.scheme) == Some(scheme)),
            "no vector for {}",
            scheme.name()
        );
    }
    for v in &vectors {
        assert!(
            Scheme::from_name(&v.scheme).is_some(),
            "{}: unknown scheme {}",
            v.id,
            v.scheme
        );
    }
}

/// A valid vector stays valid under the generic check when its signature is a plain HMAC-SHA256
/// of the body (GitHub's, Shopify's): the generic scheme finds it in whatever header carries it.
#[test]
fn generic_check_finds_body_hmacs_of_the_vectors() {
    for v in load()
        .iter()
        .filter(|v| v.expected.valid && (v.scheme == "github" || v.scheme == "shopify"))
    {
        let answer = verify::verify(
            &request(v),
            &input(v, Some("hmac-sha256")),
            DEFAULT_URL,
            WALL_CLOCK,
        )
        .expect("no input error");
        assert!(answer.valid, "{}: {}", v.id, answer.detail);
        let header = &v.headers[0].0;
        assert_eq!(
            answer.signature_header.as_deref(),
            Some(header.as_str()),
            "{}",
            v.id
        );
        assert!(answer.detail.contains(header.as_str()), "{}", answer.detail);
    }
}

fn shared_vector_file() -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("HOOKBIN_SHARED_DIR") {
        return Some(std::path::Path::new(&dir).join(SHARED_VECTORS));
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared").join(SHARED_VECTORS))
        .find(|path| path.is_file())
}

/// A copy that cannot be compared is a failure, not a pass: the vendored file could be stale.
#[test]
fn vendored_vectors_equal_the_shared_copy() {
    // The vendored copy is what every other vector test reads (and they fail without it). The
    // shared folder sits beside the project's checkout, not inside a clone of it: a clone made
    // elsewhere (a CI runner) has nothing to compare with, which is said loudly, not hidden.
    let Some(shared_file) = shared_vector_file() else {
        eprintln!(
            "NOTE: no shared/{SHARED_VECTORS} above {}; the vendored vectors were not compared \
             with the shared copy (set HOOKBIN_SHARED_DIR to compare)",
            env!("CARGO_MANIFEST_DIR")
        );
        return;
    };
    let shared = std::fs::read(&shared_file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", shared_file.display()));
    assert!(
        shared == std::fs::read(VECTOR_FILE).unwrap(),
        "tests/data/signatures.json differs from {}: copy the new vectors in",
        shared_file.display()
    );
}
