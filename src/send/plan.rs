//! What `send` and `probe` send, built once from the flags and checked: the target, method, body,
//! Content-Type, extra headers and the signer. Only the id, the timestamp (and, for the probe's
//! forgeries, the body or the key) change between attempts and cases.

use std::io::Read;

use super::UsageError;
use super::transport::Outgoing;
use crate::cli::MessageArgs;
use crate::model::StoredRequest;
use crate::signing::{Header, Message, Scheme, Signer};
use crate::wire::is_token;
use crate::wire::url::{HttpUrl, UrlError};

/// The body when neither `--data` nor `--from` is given: a small event with a number in it (the
/// probe's tampered-body case changes a digit, which keeps the JSON valid).
pub const DEFAULT_BODY: &[u8] =
    br#"{"type":"hookbin.test","data":{"id":"evt_test","amount":4200,"currency":"usd"}}"#;
const DEFAULT_CONTENT_TYPE: &str = "application/json";
const USER_AGENT: &str = concat!("hookbin/", env!("CARGO_PKG_VERSION"));

/// Where the body comes from, once read.
pub enum Payload {
    /// `--data`: its bytes.
    Data(Vec<u8>),
    /// `--from`: the captured request (body, Content-Type, Content-Encoding).
    Captured(Box<StoredRequest>),
    /// Neither: [`DEFAULT_BODY`] as JSON.
    Default,
}

/// A request to sign and send.
#[derive(Debug)]
pub struct Plan {
    pub target: HttpUrl,
    pub method: String,
    /// The URL a Twilio signature covers: `--signed-url`, else the target URL.
    pub signed_url: String,
    pub content_type: Option<String>,
    /// With `--from`: the captured `Content-Encoding`, without which the bytes mean nothing.
    pub content_encoding: Option<String>,
    /// `--header`s, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub signer: Signer,
    /// `--content-type` or a `--header 'Content-Type: ...'`, which wins over a captured one.
    explicit_content_type: Option<String>,
}

impl Plan {
    /// Checks every flag (before anything is fetched or sent) and builds the plan with the
    /// default body, or the `--data` bytes. Every error is a usage error naming the flag.
    pub fn new(url: &str, args: &MessageArgs, payload: Payload) -> Result<Plan, UsageError> {
        let usage = |text: String| UsageError(text);
        let target = parse_url(url).map_err(|e| usage(format!("invalid URL {url:?}: {e}")))?;
        let scheme = args.scheme;
        let mut signer = Signer::new(scheme, &args.secret).map_err(|e| usage(e.to_string()))?;
        if let Some(name) = &args.signature_header {
            if scheme != Scheme::HmacSha256 {
                return Err(usage(format!(
                    "--signature-header applies to hmac-sha256 only; {} sends its own headers",
                    scheme.name()
                )));
            }
            if !is_token(name) || crate::wire::is_dropped(name) {
                return Err(usage(format!(
                    "--signature-header {name:?} is not a usable header name"
                )));
            }
            signer = signer.with_signature_header(name);
        }
        let signed_url = match &args.signed_url {
            Some(_) if scheme != Scheme::Twilio => {
                return Err(usage(
                    "--signed-url applies to twilio only (the only scheme that signs the URL)"
                        .to_owned(),
                ));
            }
            Some(signed) => {
                parse_url(signed)
                    .map_err(|e| usage(format!("invalid --signed-url {signed:?}: {e}")))?;
                signed.clone()
            }
            None => target.as_str().to_owned(),
        };
        if !is_token(&args.method) {
            return Err(usage(format!(
                "--method {:?} is not an HTTP method",
                args.method
            )));
        }
        let mut headers = Vec::with_capacity(args.headers.len());
        let mut header_content_type = None;
        for line in &args.headers {
            let (name, value) = parse_header(line).map_err(usage)?;
            if name.eq_ignore_ascii_case("content-type") {
                header_content_type = Some(value);
            } else {
                headers.push((name, value));
            }
        }
        if header_content_type.is_some() && args.content_type.is_some() {
            return Err(usage(
                "both --content-type and --header 'Content-Type: ...' given; give it once"
                    .to_owned(),
            ));
        }
        let explicit = header_content_type.or_else(|| args.content_type.clone());
        if let Some(ct) = &explicit {
            check_value("Content-Type", ct).map_err(usage)?;
        }
        Plan {
            target,
            method: args.method.clone(),
            signed_url,
            content_type: None,
            content_encoding: None,
            headers,
            body: Vec::new(),
            signer,
            explicit_content_type: explicit,
        }
        .with_payload(payload)
    }

    /// Sets the body, Content-Type and Content-Encoding from `payload`.
    pub fn with_payload(mut self, payload: Payload) -> Result<Plan, UsageError> {
        let explicit = self.explicit_content_type.clone();
        let json = || {
            explicit
                .clone()
                .or_else(|| Some(DEFAULT_CONTENT_TYPE.to_owned()))
        };
        match payload {
            Payload::Data(body) => (self.body, self.content_type) = (body, json()),
            Payload::Default => (self.body, self.content_type) = (DEFAULT_BODY.to_vec(), json()),
            Payload::Captured(req) => {
                let req = checked_capture(*req)?;
                let header = |name: &str| {
                    crate::model::find_header(&req.headers, name)
                        .map(|h| h.value_lossy().trim().to_owned())
                        .filter(|v| check_value(name, v).is_ok())
                };
                self.content_type = explicit.or_else(|| header("content-type"));
                self.content_encoding = header("content-encoding");
                self.body = req.body;
            }
        }
        Ok(self)
    }

    pub fn scheme(&self) -> Scheme {
        self.signer.scheme()
    }

    /// The headers `signer` makes for `body` with this id and timestamp.
    pub fn sign(&self, signer: &Signer, id: &str, timestamp: i64, body: &[u8]) -> Vec<Header> {
        signer.sign(&Message {
            id,
            timestamp,
            body,
            url: &self.signed_url,
            content_type: self.content_type.as_deref(),
        })
    }

    /// The request: Content-Type (and Content-Encoding), the scheme's headers, the `--header`s,
    /// and a User-Agent unless one was given.
    pub fn outgoing(&self, signed: Vec<Header>, body: Vec<u8>) -> Outgoing {
        let mut headers = Vec::with_capacity(signed.len() + self.headers.len() + 3);
        if let Some(ct) = &self.content_type {
            headers.push(("Content-Type".to_owned(), ct.clone()));
        }
        if let Some(ce) = &self.content_encoding {
            headers.push(("Content-Encoding".to_owned(), ce.clone()));
        }
        headers.extend(signed.into_iter().map(|h| (h.name, h.value)));
        headers.extend(self.headers.iter().cloned());
        if !self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
        {
            headers.push(("User-Agent".to_owned(), USER_AGENT.to_owned()));
        }
        Outgoing {
            method: self.method.clone(),
            url: self.target.clone(),
            headers,
            body,
        }
    }

    /// The signed request as the provider would send it.
    pub fn signed(&self, id: &str, timestamp: i64) -> Outgoing {
        self.outgoing(
            self.sign(&self.signer, id, timestamp, &self.body),
            self.body.clone(),
        )
    }
}

/// A captured request whose body can be re-sent: one cut at capture cannot be re-sent whole, so
/// it is refused rather than signed and sent short.
fn checked_capture(req: StoredRequest) -> Result<StoredRequest, UsageError> {
    if req.body_truncated {
        return Err(UsageError(format!(
            "--from: the captured body was truncated at capture ({} of {} bytes stored), so it \
             cannot be re-sent whole",
            req.body.len(),
            req.body_size
        )));
    }
    Ok(req)
}

/// The bytes `--data` names: the string itself, `@FILE`'s contents, or stdin for `-` (and `@-`,
/// as in curl).
pub fn read_data(spec: &str, stdin: &mut dyn Read) -> Result<Vec<u8>, UsageError> {
    let from_stdin = |stdin: &mut dyn Read| {
        let mut bytes = Vec::new();
        stdin
            .read_to_end(&mut bytes)
            .map_err(|e| UsageError(format!("--data -: cannot read stdin: {e}")))?;
        Ok(bytes)
    };
    match spec {
        "-" | "@-" => from_stdin(stdin),
        _ => match spec.strip_prefix('@') {
            Some(path) => std::fs::read(path)
                .map_err(|e| UsageError(format!("--data: cannot read file {path:?}: {e}"))),
            None => Ok(spec.as_bytes().to_vec()),
        },
    }
}

/// Checks an `--id` for `scheme`: visible ASCII, and no `.` where the id is part of the signed
/// bytes (Standard Webhooks separates the parts with dots).
pub fn check_id(scheme: Scheme, id: &str) -> Result<(), UsageError> {
    if id.is_empty() || id.len() > 256 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(UsageError(
            "--id must be 1 to 256 visible ASCII characters".to_owned(),
        ));
    }
    if matches!(scheme, Scheme::StandardWebhooks | Scheme::Svix) && id.contains('.') {
        return Err(UsageError(format!(
            "--id must not contain '.' for {}: the signed content is id.timestamp.body",
            scheme.name()
        )));
    }
    Ok(())
}

/// Checks a `--timestamp`: Unix seconds, not milliseconds, not before 1970.
pub fn check_timestamp(ts: i64) -> Result<(), UsageError> {
    if ts < 0 {
        return Err(UsageError(
            "--timestamp must be Unix seconds (0 or more)".to_owned(),
        ));
    }
    // 10^11 seconds is the year 5138; 10^12 milliseconds is 2001.
    if ts > 100_000_000_000 {
        return Err(UsageError(
            "--timestamp looks like milliseconds; every scheme signs Unix seconds".to_owned(),
        ));
    }
    Ok(())
}

/// An absolute http(s) URL; a text that is no URL at all is told what one looks like.
fn parse_url(text: &str) -> Result<HttpUrl, String> {
    HttpUrl::parse(text).map_err(|e| match e {
        UrlError::Malformed(_) => format!("{e}; expected http://HOST[:PORT]/PATH or https://..."),
        e => e.to_string(),
    })
}

/// `Name: value` from `--header`.
fn parse_header(line: &str) -> Result<(String, String), String> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(format!("--header {line:?}: expected 'Name: value'"));
    };
    let name = name.trim();
    if !is_token(name) {
        return Err(format!("--header {line:?}: {name:?} is not a header name"));
    }
    // The client writes Host and Content-Length; hop-by-hop headers are the connection's.
    if crate::wire::is_dropped(name) {
        return Err(format!(
            "--header {name}: hookbin sets Host and Content-Length itself, and sends no \
             hop-by-hop header"
        ));
    }
    let value = value.trim_matches([' ', '\t']);
    check_value(name, value)?;
    Ok((name.to_owned(), value.to_owned()))
}

/// A header value may not hold CR, LF or NUL (header injection); the rule is [`crate::wire`]'s.
fn check_value(name: &str, value: &str) -> Result<(), String> {
    crate::wire::check_header(name, value.as_bytes())
        .map_err(|e| format!("the {name} header cannot be sent: {e}"))
}

/// A fresh id in the provider's style: `msg_` and 27 alphanumerics for Standard Webhooks and
/// Svix, a UUID (version 4) for GitHub and Shopify deliveries. `random` fills a buffer.
pub fn fresh_id(scheme: Scheme, random: &mut dyn FnMut(&mut [u8])) -> String {
    match scheme {
        Scheme::Github | Scheme::Shopify => {
            let mut b = [0u8; 16];
            random(&mut b);
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            let hex = crate::signing::crypto::encode_hex(&b);
            format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            )
        }
        _ => {
            const ALPHANUMERIC: &[u8; 62] =
                b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
            let mut id = String::from("msg_");
            let mut buf = [0u8; 64];
            while id.len() < 4 + 27 {
                random(&mut buf);
                // 248 = 4 * 62: rejecting larger bytes keeps the choice uniform.
                for &b in buf.iter().filter(|&&b| b < 248) {
                    if id.len() == 4 + 27 {
                        break;
                    }
                    id.push(char::from(ALPHANUMERIC[usize::from(b % 62)]));
                }
            }
            id
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn args(extra: &[&str]) -> MessageArgs {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            message: MessageArgs,
        }
        let mut argv = vec!["x", "--scheme", "stripe", "--secret", "whsec_abc"];
        argv.extend_from_slice(extra);
        Wrapper::try_parse_from(argv).expect("flags parse").message
    }

    fn plan(extra: &[&str], payload: Payload) -> Result<Plan, String> {
        Plan::new("http://127.0.0.1:9/hook", &args(extra), payload).map_err(|e| e.0)
    }

    #[test]
    fn default_request_is_the_json_test_event_with_the_scheme_headers() {
        let p = plan(
            &["-H", "X-Tenant: 7", "--header", "User-Agent: probe/1"],
            Payload::Default,
        )
        .unwrap();
        let out = p.signed("evt_1", 1_750_000_000);
        assert_eq!(out.method, "POST");
        assert_eq!(out.body, DEFAULT_BODY);
        let names: Vec<&str> = out.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["Content-Type", "Stripe-Signature", "X-Tenant", "User-Agent"]
        );
        assert_eq!(out.headers[0].1, "application/json");
        assert!(out.headers[1].1.starts_with("t=1750000000,v1="));
        assert_eq!(out.headers[3].1, "probe/1");
        // Same flags, same bytes.
        assert_eq!(out, p.signed("evt_1", 1_750_000_000));
    }

    #[test]
    fn content_type_comes_from_one_place() {
        let p = plan(
            &["-H", "content-type: text/plain"],
            Payload::Data(b"x".to_vec()),
        )
        .unwrap();
        assert_eq!(p.content_type.as_deref(), Some("text/plain"));
        assert!(p.headers.is_empty());
        let err = plan(
            &["-H", "Content-Type: a/b", "--content-type", "c/d"],
            Payload::Default,
        )
        .unwrap_err();
        assert!(err.contains("give it once"), "{err}");
        let mut captured = StoredRequest::sample::<&str>(
            "b",
            "",
            "",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Content-Encoding", "gzip"),
            ],
            b"a=1",
        );
        captured.body_size = 3;
        let p = plan(&[], Payload::Captured(Box::new(captured.clone()))).unwrap();
        assert_eq!(
            p.content_type.as_deref(),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(p.content_encoding.as_deref(), Some("gzip"));
        assert_eq!(p.body, b"a=1");
        captured.body_truncated = true;
        captured.body_size = 10;
        let err = plan(&[], Payload::Captured(Box::new(captured))).unwrap_err();
        assert!(err.contains("truncated at capture (3 of 10 bytes"), "{err}");
    }

    #[test]
    fn bad_flags_are_named() {
        for (extra, says) in [
            (&["-H", "NoColon"][..], "expected 'Name: value'"),
            (&["-H", "Bad Name: x"], "not a header name"),
            (&["-H", "Host: evil"], "--header Host: hookbin sets Host"),
            (&["-H", "Content-Length: 1"], "--header Content-Length"),
            (&["-H", "Transfer-Encoding: chunked"], "hop-by-hop"),
            (&["--method", "PO ST"], "not an HTTP method"),
            (&["--signed-url", "https://x/"], "twilio only"),
            (&["--signature-header", "X-Sig"], "hmac-sha256 only"),
        ] {
            let err = plan(extra, Payload::Default).unwrap_err();
            assert!(err.contains(says), "{extra:?}: {err}");
        }
        let err = Plan::new("ftp://h/", &args(&[]), Payload::Default).unwrap_err();
        assert!(err.0.starts_with("invalid URL \"ftp://h/\": "), "{}", err.0);
    }

    #[test]
    fn data_is_a_string_a_file_or_stdin() {
        let mut stdin: &[u8] = b"from stdin";
        assert_eq!(read_data("a=1", &mut stdin).unwrap(), b"a=1");
        assert_eq!(read_data("-", &mut stdin).unwrap(), b"from stdin");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("body.bin");
        std::fs::write(&path, b"\x00\xffbytes\n").unwrap();
        let spec = format!("@{}", path.display());
        assert_eq!(read_data(&spec, &mut stdin).unwrap(), b"\x00\xffbytes\n");
        let err = read_data("@/no/such/file", &mut stdin).unwrap_err();
        assert!(
            err.0.contains("cannot read file \"/no/such/file\""),
            "{}",
            err.0
        );
    }

    #[test]
    fn ids_and_timestamps_are_checked() {
        assert!(check_id(Scheme::Svix, "msg_1").is_ok());
        assert!(check_id(Scheme::Svix, "msg.1").is_err());
        assert!(check_id(Scheme::Stripe, "evt.1").is_ok());
        assert!(check_id(Scheme::Github, "a b").is_err());
        assert!(check_timestamp(1_750_000_000).is_ok());
        assert!(check_timestamp(-1).is_err());
        assert!(
            check_timestamp(1_750_000_000_000)
                .unwrap_err()
                .0
                .contains("milliseconds")
        );
    }

    #[test]
    fn fresh_ids_look_like_the_providers() {
        let mut n = 0u8;
        let mut random = |buf: &mut [u8]| {
            for b in buf {
                n = n.wrapping_add(37);
                *b = n;
            }
        };
        let msg = fresh_id(Scheme::StandardWebhooks, &mut random);
        assert!(msg.starts_with("msg_") && msg.len() == 31, "{msg}");
        assert!(msg[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        let uuid = fresh_id(Scheme::Github, &mut random);
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4", "{uuid}");
        assert_eq!(uuid.matches('-').count(), 4);
    }
}
