//! Copy-as-curl: one shell command line that replays a captured request byte-exact.
//!
//! The command sends the same method, path and query, the same headers in the same order with
//! duplicates (minus hop-by-hop headers and the framing headers curl computes itself), and the
//! exact body bytes. It is meant to be pasted into bash or zsh, so everything captured is untrusted
//! input that must stay inert there.
//!
//! # Quoting
//!
//! Every word that carries captured or configured data is wrapped in POSIX single quotes, where
//! neither bash nor zsh interprets anything (`$`, backticks, `\`, `!`, `%` are all literal); a `'`
//! inside becomes `'\''`. Bytes that single quotes cannot carry readably or at all (NUL, control
//! characters, bytes that are not UTF-8) never appear raw: they are written as `\0NNN` octal
//! escapes in the argument of `printf '%b'`, which bash's and zsh's builtin `printf` expand
//! identically, and that argument itself contains only plain ASCII. ANSI-C `$'…'` quoting is never
//! used.
//!
//! # Body
//!
//! - Printable text (see [`is_inline_text`]: UTF-8, LF the only control) goes inline:
//!   `--data-binary '…'`.
//! - Anything else (NUL, CR, TAB, other controls, invalid UTF-8, a leading `@` that curl would read
//!   as a file name, or more than [`INLINE_BODY_MAX`] bytes) is piped in:
//!   `printf '%b' '…' | curl … --data-binary @-`. `printf` is a builtin in bash and zsh, so its
//!   argument is not subject to the kernel's ~128 KiB per-argument limit (`E2BIG`) that applies to
//!   the arguments of `curl`; a 1 MiB binary body becomes a ~3.7 MiB builtin argument (tested).
//! - `--data-binary` (never `-d`) keeps CR and LF.
//! - An empty body is sent (as `--data-binary ''`, so curl writes `Content-Length: 0`) when the
//!   original carried `Content-Length` or `Transfer-Encoding`; otherwise no body is sent at all. A
//!   `Transfer-Encoding: chunked` original is replayed with a `Content-Length`: the stored body is
//!   already de-chunked, and the body bytes (what signatures cover) are what must match, not the
//!   framing.
//!
//! # Method
//!
//! curl picks GET without a body and POST with `--data-binary`; `-X` is written only when that
//! guess would be wrong. A bodiless `HEAD` uses `--head`, because `-X HEAD` makes curl wait for a
//! response body that never comes; a `HEAD` that carried a body needs `-X HEAD` (curl refuses
//! `--head` together with data) and may then wait on servers that announce a body length.
//!
//! # Headers
//!
//! Dropped: hop-by-hop headers ([`is_dropped`]) and `Host`/`Content-Length`, which curl
//! derives from the URL and the body. Headers curl would add by itself although the original lacked
//! them (`User-Agent`, `Accept`, and with a body `Expect` and the form `Content-Type`) are
//! suppressed with `-H 'Name:'`. An empty value is sent as `-H 'Name;'`, curl's syntax for an empty
//! header. curl sends `-H` headers verbatim, in order, duplicates included, after its own `Host`.
//! `--http1.0`/`--http1.1` pins the version: without it an `https://` target could negotiate
//! HTTP/2, which lowercases header names.
//!
//! # URL
//!
//! `--path-as-is` stops curl from squashing `/../`, `--globoff` makes `[]{}` literal. curl 7.88
//! sends every other visible ASCII byte of the URL as written, but it cuts the URL at `#` and
//! percent-encodes non-ASCII; for such paths the URL names only the origin and `--request-target`
//! carries the exact path and query.

use crate::model::{HeaderPair, StoredRequest, find_header};
use crate::wire::url::{HttpUrl, UrlError};
use crate::wire::{self, Unsendable, is_dropped};

/// Headers curl adds on its own to every request; suppressed when the original lacked them.
const CURL_DEFAULT_HEADERS: &[&str] = &["User-Agent", "Accept"];

/// Largest body written inline. A single argument of an external command is limited to 128 KiB
/// by Linux (`MAX_ARG_STRLEN`); staying well below leaves room for quoting and the rest.
pub const INLINE_BODY_MAX: usize = 64 * 1024;

/// Why no command could be built; the server answers `400` with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CurlError {
    /// The `target` is not an absolute `http(s)` URL without query, fragment and credentials.
    #[error("invalid target URL: {0}")]
    InvalidTarget(UrlError),
    /// The server's own base URL is not an absolute `http(s)` URL.
    #[error("invalid base URL: {0}")]
    InvalidBase(UrlError),
    /// The stored request holds something no HTTP/1 request can carry (a CR or LF in a header,
    /// a method that is not a token); it cannot have been received like that.
    #[error("request cannot be reproduced with curl: {0}")]
    Unreproducible(#[from] Unsendable),
}

/// Builds one shell command line (possibly a `printf … |` pipeline into curl) that replays `req`.
///
/// Without `target` the command aims at `{original_base}{path}?{query}`. With `target` (an
/// absolute `http(s)` URL, e.g. `http://localhost:3000/webhooks`) it aims at
/// `{target without trailing slash}{subpath}?{query}`.
pub fn curl_command(
    req: &StoredRequest,
    original_base: &str,
    target: Option<&str>,
) -> Result<String, CurlError> {
    // Passing a CR or LF to `curl -H` would inject header lines.
    wire::check_request(req)?;
    let (url, path) = match target {
        Some(t) => (
            HttpUrl::parse_base(t).map_err(CurlError::InvalidTarget)?,
            req.subpath.as_str(),
        ),
        // The server's own base URL: configuration, or a Host header already checked.
        None => (
            HttpUrl::parse_base(original_base).map_err(CurlError::InvalidBase)?,
            req.path.as_str(),
        ),
    };
    let request_target = wire::request_target(url.prefix(), path, &req.query);
    wire::check_target(&request_target)?;
    let sends_body = wire::sends_body(&req.headers, &req.body);

    let mut words: Vec<String> = vec!["curl".into()];
    words.extend(method_args(&req.method, sends_body));
    words.extend(url_args(url.origin(), &request_target));
    words.push(version_flag(&req.http_version).into());
    words.push("--path-as-is".into());
    words.push("--globoff".into());
    words.extend(suppression_args(&req.headers, sends_body));
    for h in req.headers.iter().filter(|h| !is_dropped(&h.name)) {
        words.push("-H".into());
        words.push(header_word(h));
    }

    let mut pipe_prefix = String::new();
    if sends_body {
        if is_inline_text(&req.body) {
            words.push("--data-binary".into());
            // is_inline_text guarantees valid UTF-8.
            words.push(sh_quote(std::str::from_utf8(&req.body).unwrap_or_default()));
        } else {
            pipe_prefix = format!("{} | ", printf_word(&req.body));
            words.push("--data-binary".into());
            words.push("@-".into());
        }
    }
    Ok(pipe_prefix + &words.join(" "))
}

/// Wraps `s` in POSIX single quotes; each `'` becomes `'\''` (close, escaped quote, reopen).
///
/// Runs between quotes are emitted as separate `'…'` words glued by `\'`, so the output never
/// contains `''` inside a word; that keeps it unambiguous even under zsh's `RC_QUOTES` option.
pub fn sh_quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    let mut out = String::with_capacity(s.len() + 2);
    for (i, run) in s.split('\'').enumerate() {
        if i > 0 {
            out.push_str("\\'");
        }
        if !run.is_empty() {
            out.push('\'');
            out.push_str(run);
            out.push('\'');
        }
    }
    out
}

/// The URL word(s): the full URL when curl sends it unchanged, else the origin plus
/// `--request-target` (curl would drop everything after `#` and percent-encode non-ASCII).
fn url_args(origin: &str, request_target: &str) -> Vec<String> {
    let curl_keeps_it = request_target
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'#');
    if curl_keeps_it {
        vec![sh_quote(&format!("{origin}{request_target}"))]
    } else {
        vec![
            sh_quote(&format!("{origin}/")),
            "--request-target".into(),
            sh_quote(request_target),
        ]
    }
}

/// `-X METHOD` only where curl's own choice (GET, or POST with data) differs; `--head` for HEAD.
fn method_args(method: &str, sends_body: bool) -> Vec<String> {
    let curl_default = if sends_body { "POST" } else { "GET" };
    if method == curl_default {
        Vec::new()
    } else if method == "HEAD" && !sends_body {
        vec!["--head".into()]
    } else {
        vec!["-X".into(), sh_quote(method)]
    }
}

fn version_flag(http_version: &str) -> &'static str {
    if http_version == "HTTP/1.0" {
        "--http1.0"
    } else {
        "--http1.1"
    }
}

/// `-H 'Name:'` for each header curl would add by itself that the original did not have.
fn suppression_args(headers: &[HeaderPair], sends_body: bool) -> Vec<String> {
    // With --data-binary curl also adds `Content-Type: application/x-www-form-urlencoded` and,
    // for large bodies, `Expect: 100-continue`; without a body it adds neither.
    let with_body: &[&str] = if sends_body {
        &["Expect", "Content-Type"]
    } else {
        &[]
    };
    CURL_DEFAULT_HEADERS
        .iter()
        .chain(with_body)
        .filter(|n| find_header(headers, n).is_none())
        .flat_map(|n| ["-H".to_string(), sh_quote(&format!("{n}:"))])
        .collect()
}

/// The quoted argument of `-H` for one header: `Name: value`, or `Name;` for an empty value.
///
/// Printable UTF-8 goes in single quotes. Anything else (obs-text bytes that are not UTF-8, a TAB,
/// other controls) comes out of `"$(printf '%b' '…')"`: the output is a Rust `String`, so raw
/// non-UTF-8 bytes cannot be written, and controls would be hazardous to paste into a terminal.
/// Command substitution only strips trailing newlines, and header values hold none.
fn header_word(h: &HeaderPair) -> String {
    let mut line = h.name.as_bytes().to_vec();
    if h.value.is_empty() {
        line.push(b';');
    } else {
        line.extend_from_slice(b": ");
        line.extend_from_slice(&h.value);
    }
    match std::str::from_utf8(&line) {
        Ok(s) if !s.chars().any(char::is_control) => sh_quote(s),
        _ => format!("\"$({})\"", printf_word(&line)),
    }
}

/// Whether a body can be written inline as `--data-binary '…'` and still be pasted safely:
/// valid UTF-8, no control characters except LF (no NUL, no CR, no ESC sequences that a terminal
/// would act on, and no TAB: pasted into bash without bracketed paste, readline takes a TAB for
/// completion and drops it), not starting with `@` (curl would read a file), and short enough
/// for one argument of an external command.
pub fn is_inline_text(body: &[u8]) -> bool {
    if body.len() > INLINE_BODY_MAX || body.first() == Some(&b'@') {
        return false;
    }
    match std::str::from_utf8(body) {
        Ok(s) => s.chars().all(|c| c == '\n' || !c.is_control()),
        Err(_) => false,
    }
}

/// `printf '%b' '…'` printing exactly `bytes`.
fn printf_word(bytes: &[u8]) -> String {
    format!("printf '%b' '{}'", printf_b_escape(bytes))
}

/// Escapes `bytes` for the argument of `printf '%b'`: a few plainly safe ASCII characters stay,
/// every other byte becomes `\0NNN` (always three octal digits, so a following digit is never
/// absorbed). bash and zsh both read `\0NNN` in `%b` arguments as one byte, and neither treats `%`
/// there as a conversion. The result holds no `'`, `\` outside escapes, `!`, `$` or backtick, so
/// it is inert inside single quotes and even inside `"$(…)"` under interactive history expansion.
pub fn printf_b_escape(bytes: &[u8]) -> String {
    const PLAIN: &[u8] = b" -_.,:;/=+@%*()[]{}<>?&|#^~";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || PLAIN.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\0{b:03o}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    type Headers<'a> = &'a [(&'a str, &'a [u8])];

    fn req(method: &str, headers: Headers, body: &[u8]) -> StoredRequest {
        StoredRequest {
            id: crate::ids::RequestId::from_row(7),
            method: method.into(),
            received_at: 1_700_000_000_000,
            ..StoredRequest::sample(
                "abcdefghijklmnop",
                "/hooks/a%20b",
                "x=1&y=%2F",
                headers,
                body,
            )
        }
    }

    const BASE: &str = "http://127.0.0.1:8080";

    fn cmd(r: &StoredRequest) -> String {
        curl_command(r, BASE, None).unwrap()
    }

    #[test]
    fn sh_quote_wraps_and_escapes_single_quotes() {
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("abc"), "'abc'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote("'"), "\\'");
        assert_eq!(sh_quote("''x"), "\\'\\''x'");
        assert_eq!(sh_quote("$(id) `id` \\ ! %"), "'$(id) `id` \\ ! %'");
    }

    #[test]
    fn printf_escape_keeps_only_plain_ascii() {
        assert_eq!(printf_b_escape(b"a b%"), "a b%");
        assert_eq!(printf_b_escape(b"\0\x01\xff"), "\\0000\\0001\\0377");
        assert_eq!(
            printf_b_escape(b"'\\!$`\"\n\r"),
            "\\0047\\0134\\0041\\0044\\0140\\0042\\0012\\0015"
        );
        // A digit after an escape stays a literal digit: escapes always have three digits.
        assert_eq!(printf_b_escape(b"\x017"), "\\00017");
    }

    #[test]
    fn json_post_is_inline_and_has_no_x() {
        let r = req(
            "POST",
            &[
                ("Host", b"example.com"),
                ("Content-Type", b"application/json"),
                ("Content-Length", b"9"),
                ("X-Sig", b"t=1,v1=abc"),
            ],
            b"{\"a\":\"'\"}",
        );
        assert_eq!(
            cmd(&r),
            "curl 'http://127.0.0.1:8080/r/abcdefghijklmnop/hooks/a%20b?x=1&y=%2F' --http1.1 \
             --path-as-is --globoff -H 'User-Agent:' -H 'Accept:' -H 'Expect:' \
             -H 'Content-Type: application/json' -H 'X-Sig: t=1,v1=abc' \
             --data-binary '{\"a\":\"'\\''\"}'"
        );
    }

    #[test]
    fn get_without_body_suppresses_only_curl_defaults() {
        let r = req(
            "GET",
            &[("Accept", b"*/*"), ("User-Agent", b"Stripe/1.0")],
            b"",
        );
        let c = cmd(&r);
        assert!(c.starts_with("curl 'http://"));
        assert!(!c.contains("-X"));
        assert!(!c.contains("--data-binary"));
        assert!(
            !c.contains("'Content-Type:'"),
            "no form type without a body: {c}"
        );
        assert!(!c.contains("'User-Agent:'") && !c.contains("'Accept:'"));
        assert!(!c.contains("'Expect:'"), "no Expect without a body: {c}");
        assert!(c.contains("-H 'Accept: */*' -H 'User-Agent: Stripe/1.0'"));
    }

    #[test]
    fn methods_use_x_only_when_curl_would_guess_wrong() {
        let framed: Headers = &[("Content-Length", b"0")];
        let cases: &[(&str, Headers, &[u8], &str)] = &[
            ("GET", &[], b"", "curl 'http"),
            ("POST", &[], b"x", "curl 'http"),
            ("POST", framed, b"", "curl 'http"),
            ("POST", &[], b"", "curl -X 'POST' 'http"),
            ("GET", &[], b"x", "curl -X 'GET' 'http"),
            ("HEAD", &[], b"", "curl --head 'http"),
            ("HEAD", &[], b"x", "curl -X 'HEAD' 'http"),
            ("PROPFIND", &[], b"", "curl -X 'PROPFIND' 'http"),
            ("PURGE", &[], b"", "curl -X 'PURGE' 'http"),
            ("get", &[], b"", "curl -X 'get' 'http"),
            ("M'1", &[], b"", "curl -X 'M'\\''1' 'http"),
        ];
        for (m, h, b, prefix) in cases {
            let c = cmd(&req(m, h, b));
            assert!(c.starts_with(prefix), "{m} {b:?}: {c}");
        }
    }

    #[test]
    fn empty_body_is_sent_only_when_framed() {
        let c = cmd(&req("POST", &[("Content-Length", b"0")], b""));
        assert!(c.ends_with("--data-binary ''"), "{c}");
        assert!(c.contains("-H 'Content-Type:'"));
        assert!(!c.contains("Content-Length"));
        let c = cmd(&req("PUT", &[], b""));
        assert!(!c.contains("--data-binary"), "{c}");
    }

    #[test]
    fn empty_values_duplicates_and_order_are_kept() {
        let r = req(
            "POST",
            &[
                ("X-Dup", b"1"),
                ("x-empty", b""),
                ("Connection", b"keep-alive"),
                ("X-Dup", b"2"),
                ("Transfer-Encoding", b"chunked"),
                ("TE", b"trailers"),
                ("X-Dup", b"1"),
            ],
            b"b",
        );
        let c = cmd(&r);
        assert!(
            c.contains("-H 'X-Dup: 1' -H 'x-empty;' -H 'X-Dup: 2' -H 'X-Dup: 1' --data-binary 'b'"),
            "{c}"
        );
        assert!(!c.contains("Connection") && !c.contains("chunked") && !c.contains("TE:"));
    }

    #[test]
    fn present_default_headers_are_not_suppressed() {
        let r = req(
            "POST",
            &[
                ("user-agent", b""),
                ("EXPECT", b"100-continue"),
                ("content-type", b"a/b"),
            ],
            b"x",
        );
        let c = cmd(&r);
        assert!(c.contains("-H 'Accept:'"));
        for n in ["'User-Agent:'", "'Expect:'", "'Content-Type:'"] {
            assert!(!c.contains(n), "{n} in {c}");
        }
        assert!(c.contains("-H 'user-agent;' -H 'EXPECT: 100-continue' -H 'content-type: a/b'"));
    }

    #[test]
    fn hostile_values_stay_inside_quotes() {
        let r = req(
            "POST",
            &[("X-Evil", b"'; touch pwned; ' $(id) `id` \\ ! %s")],
            b"'; touch pwned; '",
        );
        let c = cmd(&r);
        assert!(
            c.contains("-H 'X-Evil: '\\''; touch pwned; '\\'' $(id) `id` \\ ! %s'"),
            "{c}"
        );
        assert!(c.ends_with("--data-binary \\''; touch pwned; '\\'"), "{c}");
    }

    #[test]
    fn non_utf8_and_tab_header_values_go_through_printf() {
        let r = req(
            "GET",
            &[
                ("X-Obs", b"caf\xe9"),
                ("X-Tab", b"a\tb"),
                ("X-Utf8", "é".as_bytes()),
            ],
            b"",
        );
        let c = cmd(&r);
        assert!(
            c.contains(r#"-H "$(printf '%b' 'X-Obs: caf\0351')""#),
            "{c}"
        );
        assert!(c.contains(r#"-H "$(printf '%b' 'X-Tab: a\0011b')""#), "{c}");
        assert!(c.contains("-H 'X-Utf8: é'"), "{c}");
    }

    #[test]
    fn binary_bodies_are_piped_through_printf() {
        let c = cmd(&req("POST", &[], b"a\0b\r\n\xff'%"));
        assert_eq!(
            c.split(" | ").next().unwrap(),
            r"printf '%b' 'a\0000b\0015\0012\0377\0047%'"
        );
        assert!(c.ends_with("--data-binary @-"));
        // Text that curl would read as a file name, and text too long for one argument.
        assert!(cmd(&req("POST", &[], b"@/etc/passwd")).ends_with("@-"));
        assert!(cmd(&req("POST", &[], &vec![b'a'; INLINE_BODY_MAX + 1])).ends_with("@-"));
        assert!(!cmd(&req("POST", &[], &vec![b'a'; INLINE_BODY_MAX])).ends_with("@-"));
    }

    #[test]
    fn inline_text_rule() {
        assert!(is_inline_text(b""));
        assert!(is_inline_text("line1\n  line2 é ✓ $'`\\".as_bytes()));
        assert!(!is_inline_text(b"a\tb"));
        assert!(!is_inline_text(b"a\r\n"));
        assert!(!is_inline_text(b"a\0"));
        assert!(!is_inline_text(b"\x1b[31m"));
        assert!(!is_inline_text("\u{85}".as_bytes()));
        assert!(!is_inline_text(b"\xc3"));
        assert!(!is_inline_text(b"@x"));
    }

    #[test]
    fn target_replaces_origin_and_prefix() {
        let r = req("GET", &[], b"");
        let url = |t: &str| {
            let c = curl_command(&r, BASE, Some(t)).unwrap();
            c.split(' ').nth(1).unwrap().to_string()
        };
        assert_eq!(
            url("http://localhost:3000/webhooks"),
            "'http://localhost:3000/webhooks/hooks/a%20b?x=1&y=%2F'"
        );
        assert_eq!(
            url("https://h.example/webhooks//"),
            "'https://h.example/webhooks/hooks/a%20b?x=1&y=%2F'"
        );
        assert_eq!(
            url("HTTP://[::1]:3000"),
            "'HTTP://[::1]:3000/hooks/a%20b?x=1&y=%2F'"
        );
        let mut bare = r.clone();
        bare.subpath = String::new();
        bare.query = String::new();
        let c = curl_command(&bare, BASE, Some("http://localhost:3000/")).unwrap();
        assert!(c.contains(" 'http://localhost:3000/' "), "{c}");
    }

    #[test]
    fn invalid_targets_are_rejected() {
        let r = req("GET", &[], b"");
        for t in [
            "",
            "localhost:3000",
            "/webhooks",
            "ftp://h/x",
            "http://",
            "http:///x",
            "http://h/x?a=1",
            "http://h/x#f",
            "http://u:p@h/x",
            "http://h:/x",
            "http://h:99999/x",
            "http://h:3o/x",
            "http://h x/",
            "http://h/a b",
            "http://h/\n",
            "http://hé/",
            "http://[::1/",
            "http://[zz]/",
            "-o/etc/passwd",
        ] {
            assert!(
                matches!(
                    curl_command(&r, BASE, Some(t)),
                    Err(CurlError::InvalidTarget(_))
                ),
                "{t:?} accepted"
            );
        }
    }

    #[test]
    fn base_must_be_http() {
        let r = req("GET", &[], b"");
        assert!(matches!(
            curl_command(&r, "-K/etc/x", None),
            Err(CurlError::InvalidBase(_))
        ));
        let c = curl_command(&r, "http://h:1/", None).unwrap();
        assert!(
            c.contains("'http://h:1/r/abcdefghijklmnop/hooks/a%20b?x=1&y=%2F'"),
            "{c}"
        );
    }

    #[test]
    fn fragment_or_non_ascii_paths_use_request_target() {
        let mut r = req("GET", &[], b"");
        r.path = "/r/abcdefghijklmnop/a#b/é".into();
        r.query = "q=#".into();
        let c = cmd(&r);
        assert!(
            c.contains("'http://127.0.0.1:8080/' --request-target '/r/abcdefghijklmnop/a#b/é?q=#'"),
            "{c}"
        );
    }

    #[test]
    fn http10_is_pinned() {
        let mut r = req("GET", &[], b"");
        r.http_version = "HTTP/1.0".into();
        assert!(cmd(&r).contains(" --http1.0 "));
    }

    #[test]
    fn impossible_requests_are_errors() {
        let bad = [
            req("GET", &[("X", b"a\r\nInjected: 1")], b""),
            req("GET", &[("X", b"a\0")], b""),
            req("GET", &[("Bad Name", b"a")], b""),
            req("GET", &[("", b"a")], b""),
            req("GE T", &[], b""),
            req("", &[], b""),
        ];
        for r in &bad {
            assert!(matches!(
                curl_command(r, BASE, None),
                Err(CurlError::Unreproducible(_))
            ));
        }
        let mut r = req("GET", &[], b"");
        r.query = "a b".into();
        assert!(curl_command(&r, BASE, None).is_err());
    }

    #[test]
    fn output_is_a_single_line_unless_the_text_body_has_newlines() {
        let c = cmd(&req("POST", &[("X-Tab", b"a\tb")], b"\x00\n\r"));
        assert!(!c.contains('\n') && !c.contains('\t'), "{c}");
        let c = cmd(&req("POST", &[], b"a\nb"));
        assert_eq!(c.lines().count(), 2);
    }
}
