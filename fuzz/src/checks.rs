//! What each fuzz target checks, one function per target. The libFuzzer targets in
//! `fuzz/fuzz_targets/` call these, and `tests/it/fuzz_corpus.rs` (the main crate's tests,
//! through `#[path]`) feeds every file of `fuzz/corpus/<target>/` to the same functions, so the
//! corpus, crashes fixed included, is a regression test of every `cargo test` on stable Rust.
//!
//! Each function must not panic for any input; where there is more to promise than "no panic",
//! it asserts it (split invariance, limits honoured, a shell round trip).

use hookbin::content::{coding, multipart};
use hookbin::model::{HeaderPair, StoredRequest};
use hookbin::rawhead::HeadTap;
use hookbin::render::curl_command;
use hookbin::verify::{self, VerifyInput};
use hookbin::wire;

/// One target's check.
pub type Check = fn(&[u8]);

/// Every target by name, for the corpus replay.
pub const TARGETS: &[(&str, Check)] = &[
    ("rawhead", rawhead),
    ("decode", decode),
    ("multipart", multipart),
    ("search_query", search_query),
    ("curl", curl),
    ("signature_headers", signature_headers),
];

const BIN: &str = "0123456789abcdefghij";

/// A request captured at `/r/{BIN}{subpath}?{query}`.
fn request(subpath: &str, query: &str, headers: Vec<HeaderPair>, body: Vec<u8>) -> StoredRequest {
    StoredRequest {
        id: hookbin::ids::RequestId::from_row(1),
        bin_id: BIN.into(),
        method: "POST".into(),
        path: format!("/r/{BIN}{subpath}"),
        subpath: subpath.into(),
        query: query.into(),
        headers,
        body_size: body.len() as u64,
        body,
        body_truncated: false,
        remote_addr: "127.0.0.1".into(),
        http_version: "HTTP/1.1".into(),
        received_at: 0,
        response: None,
    }
}

/// Reads length-prefixed fields off fuzz input: the byte-level encoding every structured target
/// uses, so any input means something.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    /// Up to 255 bytes: a length byte, then that many (fewer at the end of the input).
    fn bytes(&mut self) -> &'a [u8] {
        let n = usize::from(self.byte()).min(self.0.len());
        let (field, rest) = self.0.split_at(n);
        self.0 = rest;
        field
    }

    fn text(&mut self) -> String {
        String::from_utf8_lossy(self.bytes()).into_owned()
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

/// The raw head tracker (`src/rawhead.rs`) sees a connection's bytes in reads of any size: the
/// heads it follows must not depend on where the reads split the stream. The first byte picks
/// the read size; the rest is the connection.
pub fn rawhead(data: &[u8]) {
    let Some((&size, stream)) = data.split_first() else {
        return;
    };
    // A limit no head here reaches: over it the tracker gives up at a point that does depend on
    // the reads (at the first read past it), which is fine for a server but not for this check.
    let max_head = stream.len() + 1;
    let whole = HeadTap::new(max_head);
    whole.feed(stream);
    let pieces = HeadTap::new(max_head);
    for chunk in stream.chunks(usize::from(size % 17) + 1) {
        pieces.feed(chunk);
    }
    let heads = whole.ready_heads();
    assert_eq!(heads, pieces.ready_heads(), "the heads depend on the reads");
    let mut total = 0;
    for head in &heads {
        assert!(head.len > 0 && head.len <= stream.len(), "{head:?}");
        total += head.len;
        for h in &head.headers() {
            assert!(wire::is_token(&h.name), "header name {:?}", h.name);
        }
    }
    assert!(total <= stream.len());
}

/// `Content-Encoding` decoding (`src/content/coding.rs`): a header value (first field) and a
/// body (the rest). The output never exceeds the limit, and what is cut or failed says so.
pub fn decode(data: &[u8]) {
    let mut f = Fields(data);
    let limit = usize::from(f.byte()) * 64 + 1;
    let encoding = f.text();
    let body = f.rest();
    let decoded = coding::decode(body, Some(&encoding), limit);
    assert!(
        decoded.bytes.len() <= limit.max(body.len()),
        "{} bytes past the limit {limit}",
        decoded.bytes.len()
    );
    if let coding::Outcome::Cut { limit: l } = decoded.outcome {
        assert_eq!(l, limit);
        assert_eq!(decoded.bytes.len(), limit);
    }
    if !decoded.was_encoded() {
        assert_eq!(&*decoded.bytes, body, "a body without a coding is itself");
    }
}

/// The multipart parser (`src/content/multipart.rs`): a `Content-Type` value (first field) and
/// a body. Every part's range lies inside the body, in order, without overlap.
pub fn multipart(data: &[u8]) {
    let mut f = Fields(data);
    let content_type = f.text();
    let body = f.rest();
    let boundary = multipart::boundary(&content_type)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(8)]).into_owned());
    if boundary.is_empty() {
        return;
    }
    let parsed = multipart::parse(body, &boundary);
    let mut end = 0;
    for part in &parsed.parts {
        assert!(part.range.start >= end, "parts overlap: {:?}", part.range);
        assert!(part.range.start <= part.range.end && part.range.end <= body.len());
        assert_eq!(part.bytes(body).len(), part.range.len());
        end = part.range.end;
    }
}

/// The search language (`src/search`): any text parses or is refused with a reason naming the
/// problem; a parsed query matches a request without panicking, and parsing is deterministic.
pub fn search_query(data: &[u8]) {
    let q = String::from_utf8_lossy(data);
    match hookbin::search::parse(&q) {
        Ok(query) => {
            assert_eq!(Ok(&query), hookbin::search::parse(&q).as_ref());
            let headers = vec![
                HeaderPair::new("Content-Type", "application/json"),
                HeaderPair::new("X-Key", "Value"),
            ];
            let r = request("/a/b", "x=1", headers, br#"{"amount": 42}"#.to_vec());
            let _ = query.matches(&r, 1 << 16);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// Expands the argument of `printf '%b'` as `printf_b_escape` writes it: `\0NNN` is one byte,
/// anything else is itself.
fn printf_b(arg: &str) -> Vec<u8> {
    let b = arg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'0') && i + 5 <= b.len() {
            let octal = std::str::from_utf8(&b[i + 2..i + 5]).expect("ASCII");
            out.push(u8::from_str_radix(octal, 8).expect("three octal digits"));
            i += 5;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// A `-H` argument after the shell's word splitting: plain, or the `$(printf '%b' '…')` form.
fn header_bytes(word: &str) -> Vec<u8> {
    match word
        .strip_prefix("$(printf '%b' '")
        .and_then(|w| w.strip_suffix("')"))
    {
        Some(arg) => printf_b(arg),
        None => word.as_bytes().to_vec(),
    }
}

/// Copy-as-curl (`src/render/curl.rs`) for a request built from the input: the command either
/// is refused (a request no HTTP/1 client could have sent) or, split into words the way a POSIX
/// shell does (`shell-words`), gives curl exactly the request's method, URL, headers in order
/// and body bytes.
pub fn curl(data: &[u8]) {
    let mut f = Fields(data);
    let flags = f.byte();
    let method = f.text();
    let subpath = f.text();
    let query = f.text();
    let count = f.byte() % 8;
    let headers: Vec<HeaderPair> = (0..count)
        .map(|_| HeaderPair::new(f.text(), f.bytes()))
        .collect();
    let mut req = request(&subpath, &query, headers, f.rest().to_vec());
    req.method = method;
    req.http_version = if flags & 1 == 0 {
        "HTTP/1.1"
    } else {
        "HTTP/1.0"
    }
    .into();
    let base = "http://hookbin.example:8080";
    let target = (flags & 2 != 0).then_some("http://localhost:3000/in");
    let Ok(command) = curl_command(&req, base, target) else {
        return;
    };
    let words =
        shell_words::split(&command).unwrap_or_else(|e| panic!("not shell words ({e}): {command}"));

    // `printf '%b' BODY | curl ...` or `curl ...`. The pipe is told by the first word, not by
    // looking for a `|` word: a quoted argument may be `|` too (`|` is a valid method token).
    let sends_body = wire::sends_body(&req.headers, &req.body);
    let (piped, args) = if words[0] == "printf" {
        assert_eq!(words[1], "%b", "{command}");
        assert_eq!(words[3], "|", "{command}");
        (Some(printf_b(&words[2])), &words[4..])
    } else {
        (None, &words[..])
    };
    assert_eq!(args[0], "curl", "{command}");
    let mut method = None;
    let mut urls = Vec::new();
    let mut request_target = None;
    let mut sent_headers = Vec::new();
    let mut data_arg = None;
    let mut it = args[1..].iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "-X" => method = it.next().cloned(),
            "--head" => method = Some("HEAD".into()),
            "--request-target" => request_target = it.next().cloned(),
            "-H" => sent_headers.push(header_bytes(it.next().expect("-H takes a value"))),
            "--data-binary" => data_arg = it.next().cloned(),
            "--http1.0" | "--http1.1" | "--path-as-is" | "--globoff" => {}
            other => {
                assert!(
                    !other.starts_with('-'),
                    "unexpected option {other}: {command}"
                );
                urls.push(other.to_owned());
            }
        }
    }
    // Method: written when curl's own choice would differ.
    let default = if sends_body { "POST" } else { "GET" };
    assert_eq!(
        method.as_deref().unwrap_or(default),
        req.method,
        "{command}"
    );
    // URL: whole, or origin plus --request-target.
    assert_eq!(urls.len(), 1, "{command}");
    let (origin, path) = match target {
        Some(t) => (t.trim_end_matches("/in"), format!("/in{}", req.subpath)),
        None => (base, req.path.clone()),
    };
    let expected_target = wire::request_target("", &path, &req.query);
    match request_target {
        Some(t) => {
            assert_eq!(urls[0], format!("{origin}/"), "{command}");
            assert_eq!(t, expected_target, "{command}");
        }
        None => assert_eq!(urls[0], format!("{origin}{expected_target}"), "{command}"),
    }
    // Headers: every header but those curl derives, in order, exact bytes; then nothing but
    // the suppression of curl's own headers (`Name:` with no value).
    let expected: Vec<Vec<u8>> = req
        .headers
        .iter()
        .filter(|h| !wire::is_dropped(&h.name))
        .map(|h| {
            let mut line = h.name.clone().into_bytes();
            if h.value.is_empty() {
                line.push(b';');
            } else {
                line.extend_from_slice(b": ");
                line.extend_from_slice(&h.value);
            }
            line
        })
        .collect();
    let suppressions = sent_headers.len() - expected.len().min(sent_headers.len());
    for s in &sent_headers[..suppressions] {
        assert!(s.ends_with(b":"), "{command}");
    }
    assert_eq!(sent_headers[suppressions..], expected[..], "{command}");
    // Body: inline or piped, the exact bytes.
    match (sends_body, data_arg.as_deref(), piped) {
        (false, None, None) => {}
        (true, Some("@-"), Some(bytes)) => assert_eq!(bytes, req.body, "{command}"),
        (true, Some(text), None) => assert_eq!(text.as_bytes(), req.body, "{command}"),
        other => panic!("body {other:?}: {command}"),
    }
}

/// Every signature scheme's header parsing (`src/signing`, `src/verify`): headers and a body
/// from the input, verified under each scheme and by detection; whatever the bytes, the answer
/// is a verdict or a refusal of the input, and a forged request is never valid.
pub fn signature_headers(data: &[u8]) {
    let mut f = Fields(data);
    let secret_kind = f.byte();
    let count = f.byte() % 6;
    let names = [
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "svix-id",
        "svix-timestamp",
        "svix-signature",
        "Stripe-Signature",
        "X-Hub-Signature",
        "X-Hub-Signature-256",
        "X-Slack-Request-Timestamp",
        "X-Slack-Signature",
        "X-Shopify-Hmac-Sha256",
        "X-Twilio-Signature",
        "X-BOTIX-Timestamp",
        "X-BOTIX-Signature",
        "X-Signature",
        "Content-Type",
    ];
    let headers: Vec<HeaderPair> = (0..count)
        .map(|_| {
            let name = names[usize::from(f.byte()) % names.len()];
            HeaderPair::new(name, f.bytes())
        })
        .collect();
    let req = request("", "", headers, f.rest().to_vec());
    let secret = match secret_kind % 4 {
        0 => "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        1 => "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
        2 => "It's a Secret to Everybody",
        _ => "8f742231b10e8888abcd99yyyzzz85a5",
    };
    let mut schemes: Vec<Option<&str>> = hookbin::signing::Scheme::NAMES
        .iter()
        .copied()
        .map(Some)
        .collect();
    schemes.push(None);
    for scheme in schemes {
        let input = VerifyInput {
            secret: secret.into(),
            scheme: scheme.map(str::to_owned),
            tolerance_seconds: Some(300),
            now: Some(1_700_000_000),
            url: None,
        };
        if let Ok(v) = verify::verify(&req, &input, &format!("http://h/r/{BIN}"), 0) {
            // Forging a valid signature from fuzz bytes would be a break of HMAC or Ed25519.
            assert!(!v.valid, "{scheme:?} accepted fuzz input: {v:?}");
            assert!(!v.detail.is_empty());
            assert!(
                !v.detail.contains(secret),
                "the secret leaked into the detail"
            );
        }
    }
}
