//! How a captured body is shown: chosen by content type and content, always as text.
//!
//! A body with a `Content-Encoding` is shown decoded (with a note saying from what, and where
//! decoding stopped for a bomb or damage), its bytes as sent in an extra hex tab. Multipart
//! bodies are listed part by part, XML is re-indented, JSON is re-indented with `\uXXXX`
//! escapes shown as the characters they stand for (Raw keeps the bytes).
//!
//! Every view here produces plain strings (or `(class, text)` tokens) that the templates escape.
//! Nothing is ever pre-built HTML. Views are capped, so a 5 MiB body does not produce a 50 MB
//! page; the download link always gives the exact bytes.

use std::borrow::Cow;

use crate::content::coding::Outcome;
use crate::content::{self, multipart};
use crate::model::StoredRequest;

/// How much of a body one view renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Most HTML a text view (pretty JSON with its markup, raw text, XML, form fields, part
    /// previews) may take, counted as escaped: `"` costs 5 bytes (`&#34;`) in the page, so a
    /// cap on the text itself would let a body of quotes take five times the room.
    pub text: usize,
    /// Most body bytes rendered as a hex dump (each 16 bytes become one line of 78 to 142 bytes
    /// of HTML, depending on how many characters of the ASCII column need escaping).
    pub hex: usize,
}

/// The request on its own page. Together the views stay well under the 300 KiB a request page
/// may weigh whatever the body (issue 12): at most Pretty 72 KiB + Raw 72 KiB + a hex dump of
/// 8 KiB (71 KiB at worst) + the hex dump as sent of an encoded body (36 KiB at worst).
pub const PAGE_CAPS: Caps = Caps {
    text: 72 * 1024,
    hex: 8 * 1024,
};
/// The detail beside the list: the bin page is the one kept open and reloaded, so it stays
/// light; its notes point to the request's own page for more.
pub const PANE_CAPS: Caps = Caps {
    text: 24 * 1024,
    hex: 4 * 1024,
};
/// Bodies up to this size are checked as a whole to be JSON. A larger body declared as JSON has
/// its start pretty-printed unchecked (a view only: Raw and the download stay exact), so a
/// 5 MiB body costs what the page shows, not a full parse on every page view.
pub const JSON_CHECK_CAP: usize = 1024 * 1024;
/// How much of the body is looked at to tell text from binary.
const SNIFF: usize = 64 * 1024;

/// One piece of highlighted JSON: a CSS class (`""` for punctuation and layout) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub class: &'static str,
    pub text: String,
}

/// The contents of one tab of the body view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Panel {
    Json(Vec<Token>),
    Form(Vec<(String, String)>),
    Text(String),
    Hex(String),
    Parts(Vec<PartView>),
}

/// One part of a multipart body, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartView {
    /// 0-based, as in `GET .../body/parts/{n}`.
    pub index: usize,
    pub name: Option<String>,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub size: String,
    pub size_exact: String,
    /// The body ended inside this part.
    pub incomplete: bool,
    /// The start of the content as text, or a hex dump of its start; empty when not shown.
    pub preview: String,
    pub preview_is_hex: bool,
    /// Why the preview is partial or missing.
    pub preview_note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tab {
    pub label: &'static str,
    pub panel: Panel,
    /// Set when the panel shows only the start of the body.
    pub clipped: Option<String>,
}

/// The body section of the request detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyView {
    /// What the body was recognised as: `JSON`, `XML`, `form`, `multipart`, `text`, `binary`,
    /// or `empty`.
    pub kind: &'static str,
    pub tabs: Vec<Tab>,
    /// Remarks on the content (e.g. "decoded from gzip", "declared JSON but does not parse").
    pub notes: Vec<String>,
}

impl BodyView {
    pub fn is_empty(&self) -> bool {
        self.tabs.is_empty()
    }
}

fn is_json_type(media: &str) -> bool {
    media == "application/json" || media == "text/json" || media.ends_with("+json")
}

/// The longest prefix of `bytes` that is UTF-8, if all of `bytes` is UTF-8 except possibly an
/// incomplete character at the very end (a body cut by the size limit).
fn utf8_text(bytes: &[u8]) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Some(s),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&bytes[..e.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// Whether UTF-8 `text` reads as text: no NUL and few other control characters.
fn looks_like_text(text: &str) -> bool {
    let controls = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{c}'))
        .count();
    !text.contains('\0') && controls * 100 <= text.len().max(1)
}

/// What `text` weighs in the page once HTML-escaped (askama writes `&#34;` for `"`, and the
/// same length for `'`, `<`, `>`, `&`).
pub fn html_len(text: &str) -> usize {
    text.len()
        + 4 * text
            .bytes()
            .filter(|b| matches!(b, b'"' | b'\'' | b'<' | b'>' | b'&'))
            .count()
}

/// The start of `text` that weighs at most `cap` bytes of HTML once escaped, cut at a
/// character boundary.
fn clip_html(text: &str, cap: usize) -> (&str, bool) {
    let mut weight = 0;
    for (i, b) in text.bytes().enumerate() {
        weight += if matches!(b, b'"' | b'\'' | b'<' | b'>' | b'&') {
            5
        } else {
            1
        };
        if weight > cap {
            let mut end = i;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            return (&text[..end], true);
        }
    }
    (text, false)
}

/// The start of `text`, at most `cap` bytes, cut at a character boundary.
fn clip(text: &str, cap: usize) -> (&str, bool) {
    if text.len() <= cap {
        return (text, false);
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

fn clip_note(shown: usize, total: usize, caps: Caps) -> String {
    format!(
        "Showing the first {} of {}. {}",
        super::format::human_size(shown as u64),
        super::format::human_size(total as u64),
        more(caps)
    )
}

/// Where to find the rest of a clipped view.
fn more(caps: Caps) -> &'static str {
    if caps == PANE_CAPS {
        "Open the request on its own page for more, or download the body."
    } else {
        "Download the body for all of it."
    }
}

/// The views of a request's body: decoded first when it has a `Content-Encoding` (at most
/// `decode_limit` bytes, `--max-decoded-bytes`), then chosen as [`view`] does, plus a hex tab
/// of the bytes as sent.
pub fn request_view(r: &StoredRequest, caps: Caps, decode_limit: usize) -> BodyView {
    let content_type = r.content_type();
    let decoded = content::decoded_body(r, decode_limit);
    if !decoded.was_encoded() {
        return view(&r.body, content_type.as_deref(), caps);
    }
    let codings = decoded
        .codings
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ");
    let sizes = |decoded: usize| {
        format!(
            "{} → {}",
            super::format::exact_bytes(r.body.len() as u64).trim_end_matches(" bytes"),
            super::format::exact_bytes(decoded as u64)
        )
    };
    // What is shown, what to say about it, and whether it is the decoded body.
    let (shown, note, is_decoded): (&[u8], String, bool) = match &decoded.outcome {
        Outcome::Complete => (
            &decoded.bytes,
            format!("Decoded from {codings}: {}.", sizes(decoded.bytes.len())),
            true,
        ),
        Outcome::Cut { limit } => (
            &decoded.bytes,
            format!(
                "Decoded from {codings}, cut at {} (--max-decoded-bytes): the body decodes to \
                 more than that, likely a decompression bomb. Shown: its start.",
                super::format::exact_bytes(*limit as u64)
            ),
            true,
        ),
        Outcome::Failed(e) if decoded.bytes.is_empty() => (
            &r.body,
            format!("Content-Encoding not undone ({e}): shown as sent."),
            false,
        ),
        Outcome::Failed(e) => (
            &decoded.bytes,
            format!(
                "Decoded from {codings} up to damage ({e}): {}. Shown: what decoded.",
                sizes(decoded.bytes.len())
            ),
            true,
        ),
    };
    let mut v = view(shown, content_type.as_deref(), caps);
    v.notes.insert(0, note);
    if is_decoded {
        // Half the room: the decoded views come first.
        let (dump, clipped) = hexdump(&r.body, caps.hex / 2);
        v.tabs.push(Tab {
            label: "As sent (hex)",
            panel: Panel::Hex(dump),
            clipped: clipped.then(|| clip_note(caps.hex / 2, r.body.len(), caps)),
        });
    }
    v
}

/// Chooses the views of `body` by content type and content.
pub fn view(body: &[u8], content_type: Option<&str>, caps: Caps) -> BodyView {
    if body.is_empty() {
        return BodyView {
            kind: "empty",
            tabs: Vec::new(),
            notes: Vec::new(),
        };
    }
    let media = content::media_type(content_type.unwrap_or(""));
    let text = utf8_text(body).filter(|t| looks_like_text(clip(t, SNIFF).0));
    let mut tabs = Vec::new();
    let mut notes = Vec::new();
    let mut kind = "binary";
    let boundary = content_type.and_then(multipart::boundary);
    if let Some(boundary) = &boundary {
        kind = "multipart";
        let parsed = multipart::parse(body, boundary);
        notes.extend(parsed.problem.clone());
        tabs.push(Tab {
            label: "Parts",
            panel: Panel::Parts(part_views(body, &parsed, caps)),
            clipped: None,
        });
    }
    if let Some(text) = text {
        if boundary.is_none() {
            kind = "text";
        }
        let declared_json = is_json_type(&media);
        let trimmed = text.trim_start();
        let looks_json = trimmed.starts_with('{') || trimmed.starts_with('[');
        let declared_xml = content::is_xml_type(&media);
        let looks_xml = trimmed.starts_with("<?xml");
        if boundary.is_some() {
            // Parts are the view; Raw and Hex below.
        } else if declared_json && looks_json && text.len() > JSON_CHECK_CAP {
            kind = "JSON";
            let (tokens, _, unescaped) = json_tokens(text, caps.text);
            let shown: usize = tokens.iter().map(|t| t.text.len()).sum();
            notes.extend(unescaped.then(unescape_note));
            tabs.push(Tab {
                label: "Pretty",
                panel: Panel::Json(tokens),
                clipped: Some(format!(
                    "A large body: the first {} of it pretty-printed, not checked as a whole \
                     (Raw and the download are exact). {}",
                    super::format::human_size(shown as u64),
                    more(caps)
                )),
            });
        } else if text.len() <= JSON_CHECK_CAP && (declared_json || looks_json) {
            match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => {
                    kind = "JSON";
                    let (tokens, clipped, unescaped) = json_tokens(text, caps.text);
                    let shown: usize = tokens.iter().map(|t| t.text.len()).sum();
                    notes.extend(unescaped.then(unescape_note));
                    tabs.push(Tab {
                        label: "Pretty",
                        panel: Panel::Json(tokens),
                        clipped: clipped.then(|| {
                            format!(
                                "Showing the first {} of the pretty-printed text. {}",
                                super::format::human_size(shown as u64),
                                more(caps)
                            )
                        }),
                    });
                }
                Err(e) if declared_json => {
                    notes.push(format!("Declared as JSON but does not parse: {e}."));
                }
                Err(_) => {}
            }
        } else if declared_xml || looks_xml {
            match content::xml::pretty(text, caps.text) {
                Ok((pretty, clipped)) => {
                    // XML is mostly `<`, `>` and quotes: clipped again by its escaped weight.
                    let (fits, cut) = clip_html(&pretty, caps.text);
                    let (pretty, clipped) = (fits.to_owned(), clipped || cut);
                    kind = "XML";
                    tabs.push(Tab {
                        label: "Pretty",
                        clipped: clipped.then(|| {
                            format!(
                                "Showing the first {} of the re-indented text. {}",
                                super::format::human_size(pretty.len() as u64),
                                more(caps)
                            )
                        }),
                        panel: Panel::Text(pretty),
                    });
                }
                Err(e) if declared_xml => {
                    notes.push(format!("Declared as XML but does not parse: {e}."));
                }
                Err(_) => {}
            }
        } else if media == "application/x-www-form-urlencoded" {
            kind = "form";
            let (fields, clipped) = form_fields(text, caps.text);
            tabs.push(Tab {
                label: "Fields",
                panel: Panel::Form(fields),
                clipped: clipped.then(|| format!("Showing the first fields only. {}", more(caps))),
            });
        }
        let (shown, clipped) = clip_html(text, caps.text);
        tabs.push(Tab {
            label: "Raw",
            panel: Panel::Text(shown.to_owned()),
            clipped: clipped.then(|| clip_note(shown.len(), body.len(), caps)),
        });
    }
    let (dump, clipped) = hexdump(body, caps.hex);
    tabs.push(Tab {
        label: if text.is_some() { "Hex" } else { "Raw (hex)" },
        panel: Panel::Hex(dump),
        clipped: clipped.then(|| clip_note(caps.hex, body.len(), caps)),
    });
    if boundary.is_some() {
        // Binary parts are normal in multipart bodies: no remark on the whole.
    } else if text.is_none() && utf8_text(body).is_none() {
        notes.push("Not valid UTF-8: shown as a hex dump.".to_owned());
    } else if text.is_none() {
        notes.push("Binary content: shown as a hex dump.".to_owned());
    }
    BodyView { kind, tabs, notes }
}

fn unescape_note() -> String {
    "Pretty shows \\uXXXX escapes as the characters they stand for; Raw has the bytes as sent."
        .to_owned()
}

/// The parts of a multipart body with previews: the start of each part as text or a hex dump,
/// within one budget for the whole list (a form with a thousand fields stays a page, not a
/// book).
fn part_views(body: &[u8], parsed: &multipart::Multipart, caps: Caps) -> Vec<PartView> {
    let text_cap = caps.text / 32;
    let hex_cap = caps.hex / 64;
    let mut budget = caps.text;
    parsed
        .parts
        .iter()
        .enumerate()
        .map(|(index, p)| {
            let bytes = p.bytes(body);
            let mut view = PartView {
                index,
                name: p.name.clone(),
                filename: p.filename.clone(),
                content_type: p.content_type.clone(),
                size: super::format::human_size(bytes.len() as u64),
                size_exact: super::format::exact_bytes(bytes.len() as u64),
                incomplete: !p.complete,
                preview: String::new(),
                preview_is_hex: false,
                preview_note: None,
            };
            if bytes.is_empty() {
                return view;
            }
            if budget == 0 {
                view.preview_note =
                    Some("Not previewed: the page shows enough already. Download it.".into());
                return view;
            }
            let text = utf8_text(bytes).filter(|t| looks_like_text(clip(t, SNIFF).0));
            let (preview, clipped, is_hex) = match text {
                Some(t) => {
                    let (shown, clipped) = clip_html(t, text_cap.min(budget));
                    (shown.to_owned(), clipped, false)
                }
                None => {
                    let (dump, clipped) = hexdump(bytes, hex_cap);
                    (dump, clipped, true)
                }
            };
            budget = budget.saturating_sub(html_len(&preview));
            if clipped {
                view.preview_note = Some(format!(
                    "Showing the start of its {}. Download it for all of it.",
                    super::format::human_size(bytes.len() as u64)
                ));
            }
            view.preview = preview;
            view.preview_is_hex = is_hex;
            view
        })
        .collect()
}

/// The markup of one form field row (`<tr><td class="name">...`), for the page budget.
const FIELD_ROW_HTML: usize = 60;

/// Form fields decoded as application/x-www-form-urlencoded, in order, repeats kept; stops
/// after about `cap` bytes of text.
fn form_fields(text: &str, cap: usize) -> (Vec<(String, String)>, bool) {
    let mut fields = Vec::new();
    let mut size = 0;
    for (k, v) in form_urlencoded::parse(text.as_bytes()) {
        size += html_len(&k) + html_len(&v) + FIELD_ROW_HTML;
        if size > cap {
            return (fields, true);
        }
        fields.push((k.into_owned(), v.into_owned()));
    }
    (fields, false)
}

/// Classic hex dump: offset, 16 bytes in two groups of 8, and the printable ASCII column.
/// Renders at most `cap` bytes; the flag tells whether it stopped early.
pub fn hexdump(bytes: &[u8], cap: usize) -> (String, bool) {
    let shown = &bytes[..bytes.len().min(cap)];
    let mut out = String::with_capacity(shown.len() / 16 * 80 + 80);
    for (line, chunk) in shown.chunks(16).enumerate() {
        use std::fmt::Write as _;
        let _ = write!(out, "{:08x}  ", line * 16);
        for i in 0..16 {
            match chunk.get(i) {
                Some(b) => {
                    let _ = write!(out, "{b:02x} ");
                }
                None => out.push_str("   "),
            }
            if i == 7 {
                out.push(' ');
            }
        }
        out.push_str(" |");
        out.extend(chunk.iter().map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            }
        }));
        out.push_str("|\n");
    }
    (out, shown.len() < bytes.len())
}

/// Pretty-prints JSON `text` (already known to parse) as classed tokens, keeping every
/// string, number and key as written (no re-serialisation: key order and number spelling stay
/// as received), except that `\uXXXX` escapes of visible characters are shown as those
/// characters (see [`show_unicode_escapes`]). Stops after about `cap` bytes of output. Returns
/// the tokens, whether it stopped early, and whether an escape was shown as its character.
pub fn json_tokens(text: &str, cap: usize) -> (Vec<Token>, bool, bool) {
    let mut out = Tokens::default();
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    let next_non_ws = |mut j: usize| {
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        bytes.get(j).copied().map(|b| (j, b))
    };
    while i < bytes.len() {
        if out.size > cap {
            return (out.tokens, true, out.unescaped);
        }
        let b = bytes[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                match next_non_ws(i + 1) {
                    Some((j, c)) if c == close => {
                        out.push("", if b == b'{' { "{}" } else { "[]" });
                        i = j + 1;
                    }
                    _ => {
                        depth += 1;
                        out.push("", &(b as char).to_string());
                        out.newline(depth);
                        i += 1;
                    }
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                out.newline(depth);
                out.push("", &(b as char).to_string());
                i += 1;
            }
            b',' => {
                out.push("", ",");
                out.newline(depth);
                i += 1;
            }
            b':' => {
                out.push("", ": ");
                i += 1;
            }
            b'"' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(bytes.len());
                let is_key = matches!(next_non_ws(end), Some((_, b':')));
                let shown = show_unicode_escapes(&text[i..end]);
                out.unescaped |= matches!(shown, Cow::Owned(_));
                out.push(if is_key { "j-key" } else { "j-str" }, &shown);
                i = end;
            }
            _ => {
                let mut j = i;
                while j < bytes.len()
                    && !matches!(bytes[j], b',' | b'}' | b']' | b':')
                    && !bytes[j].is_ascii_whitespace()
                {
                    j += 1;
                }
                let j = j.max(i + 1).min(bytes.len());
                let word = &text[i..j];
                let class = match word {
                    "true" | "false" => "j-bool",
                    "null" => "j-null",
                    _ => "j-num",
                };
                out.push(class, word);
                i = j;
            }
        }
    }
    (out.tokens, false, out.unescaped)
}

/// A JSON string literal (quotes included) with each `\uXXXX` escape (surrogate pairs too)
/// replaced by its character, so `"Gr\u00fc\u00dfe"` reads `"Grüße"`. Escapes that would
/// change the literal's meaning or hide something stay as written: `"` and `\` become `\"`
/// and `\\`; control characters, invisible and direction-changing characters (which
/// could make the text read differently from what it is), and lone surrogates keep their escape.
pub fn show_unicode_escapes(literal: &str) -> Cow<'_, str> {
    if !literal.contains("\\u") {
        return Cow::Borrowed(literal);
    }
    let bytes = literal.as_bytes();
    let hex4 = |at: usize| -> Option<u32> {
        let digits = literal.get(at..at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    };
    let mut out = String::with_capacity(literal.len());
    let mut changed = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2; // another escape (\n, \", \\): kept as written
            continue;
        }
        let Some(unit) = hex4(i + 2) else {
            i += 2;
            continue;
        };
        let (code, len) = match unit {
            0xd800..=0xdbff => match (bytes.get(i + 6..i + 8), hex4(i + 8)) {
                (Some(b"\\u"), Some(low @ 0xdc00..=0xdfff)) => {
                    (0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00), 12)
                }
                _ => (unit, 6),
            },
            _ => (unit, 6),
        };
        let replacement = match char::from_u32(code) {
            Some('"') => Some("\\\"".to_owned()),
            Some('\\') => Some("\\\\".to_owned()),
            Some(c) if !hidden(c) => Some(c.to_string()),
            _ => None,
        };
        if let Some(r) = replacement {
            out.push_str(&literal[copied..i]);
            out.push_str(&r);
            copied = i + len;
            changed = true;
        }
        i += len;
    }
    if !changed {
        return Cow::Borrowed(literal);
    }
    out.push_str(&literal[copied..]);
    Cow::Owned(out)
}

/// Characters shown as their escape: controls, and invisible or direction-changing format
/// characters (soft hyphen, zero-width ones, bidi embeddings, overrides and isolates, BOM).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `<span class="j-key"></span>` around a classed token.
const SPAN_HTML: usize = 27;

#[derive(Default)]
struct Tokens {
    tokens: Vec<Token>,
    size: usize,
    /// A string was shown with an escape replaced by its character.
    unescaped: bool,
}

impl Tokens {
    fn push(&mut self, class: &'static str, text: &str) {
        // Counted as the page will weigh it: escaped, and in its span.
        self.size += html_len(text) + if class.is_empty() { 0 } else { SPAN_HTML };
        match self.tokens.last_mut() {
            Some(last) if last.class.is_empty() && class.is_empty() => last.text.push_str(text),
            _ => self.tokens.push(Token {
                class,
                text: text.to_owned(),
            }),
        }
    }

    fn newline(&mut self, depth: usize) {
        let mut s = String::with_capacity(1 + depth * 2);
        s.push('\n');
        for _ in 0..depth {
            s.push_str("  ");
        }
        self.push("", &s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(tokens: &[Token]) -> String {
        tokens.iter().map(|t| t.text.as_str()).collect()
    }

    #[test]
    fn json_is_reindented_without_changing_tokens() {
        let text = r#"{"b":1.50,"a":[true,null,"x\"<y>"],"e":{},"f":[ ]}"#;
        let (tokens, clipped, unescaped) = json_tokens(text, PAGE_CAPS.text);
        assert!(!clipped);
        assert!(!unescaped);
        assert_eq!(
            plain(&tokens),
            "{\n  \"b\": 1.50,\n  \"a\": [\n    true,\n    null,\n    \"x\\\"<y>\"\n  ],\n  \"e\": {},\n  \"f\": []\n}"
        );
        let classes: Vec<_> = tokens
            .iter()
            .filter(|t| !t.class.is_empty())
            .map(|t| (t.class, t.text.as_str()))
            .collect();
        assert_eq!(
            classes,
            vec![
                ("j-key", "\"b\""),
                ("j-num", "1.50"),
                ("j-key", "\"a\""),
                ("j-bool", "true"),
                ("j-null", "null"),
                ("j-str", "\"x\\\"<y>\""),
                ("j-key", "\"e\""),
                ("j-key", "\"f\""),
            ]
        );
    }

    #[test]
    fn json_scalars_and_caps() {
        assert_eq!(plain(&json_tokens(" 42 ", 100).0), "42");
        let big = format!("[{}1]", "1,".repeat(1000));
        let (tokens, clipped, _) = json_tokens(&big, 100);
        assert!(clipped);
        assert!(plain(&tokens).len() < 200);
    }

    #[test]
    fn views_by_type_and_content() {
        let v = view(
            br#"{"a":1}"#,
            Some("application/json; charset=utf-8"),
            PAGE_CAPS,
        );
        assert_eq!(v.kind, "JSON");
        assert_eq!(
            v.tabs.iter().map(|t| t.label).collect::<Vec<_>>(),
            ["Pretty", "Raw", "Hex"]
        );
        // JSON without a content type is still recognised by its content.
        assert_eq!(view(b"[1,2]", None, PAGE_CAPS).kind, "JSON");
        // Declared JSON that does not parse: text, with a note.
        let v = view(b"{nope", Some("application/json"), PAGE_CAPS);
        assert_eq!(v.kind, "text");
        assert!(v.notes[0].contains("does not parse"));
        let v = view(
            b"a=1&b=x+y&a=%3C",
            Some("application/x-www-form-urlencoded"),
            PAGE_CAPS,
        );
        assert_eq!(v.kind, "form");
        assert_eq!(
            v.tabs[0].panel,
            Panel::Form(vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("a".into(), "<".into())
            ])
        );
        assert_eq!(view(b"hello\n", Some("text/plain"), PAGE_CAPS).kind, "text");
        let v = view(&[0xff, 0xfe, b'<'], Some("text/html"), PAGE_CAPS);
        assert_eq!(v.kind, "binary");
        assert_eq!(v.tabs.len(), 1);
        assert!(v.notes[0].contains("UTF-8"));
        assert_eq!(view(b"\0\x01\x02", None, PAGE_CAPS).kind, "binary");
        assert!(view(b"", None, PAGE_CAPS).is_empty());
    }

    #[test]
    fn a_body_cut_inside_a_character_is_still_text() {
        let mut body = "héllo".as_bytes().to_vec();
        body.truncate(2); // "h" + the first byte of "é"
        assert_eq!(view(&body, Some("text/plain"), PAGE_CAPS).kind, "text");
    }

    #[test]
    fn big_bodies_are_clipped() {
        let body = "x".repeat(PAGE_CAPS.text + 10);
        let v = view(body.as_bytes(), Some("text/plain"), PAGE_CAPS);
        let Panel::Text(shown) = &v.tabs[0].panel else {
            panic!("raw tab first")
        };
        assert_eq!(shown.len(), PAGE_CAPS.text);
        assert!(
            v.tabs[0]
                .clipped
                .as_deref()
                .unwrap()
                .contains("Download the body")
        );
        let v = view(body.as_bytes(), Some("text/plain"), PANE_CAPS);
        assert!(v.tabs[0].clipped.as_deref().unwrap().contains("own page"));
        assert!(v.tabs[0].clipped.is_some());
        assert!(v.tabs[1].clipped.is_some(), "hex is clipped too");
    }

    #[test]
    fn large_json_is_pretty_printed_from_its_start_without_a_full_parse() {
        let body = format!("[{}1]", "{\"k\": 1},".repeat(JSON_CHECK_CAP / 8));
        let v = view(body.as_bytes(), Some("application/json"), PAGE_CAPS);
        assert_eq!(v.kind, "JSON");
        assert!(
            v.tabs[0]
                .clipped
                .as_deref()
                .unwrap()
                .contains("not checked as a whole")
        );
        let Panel::Json(tokens) = &v.tabs[0].panel else {
            panic!("pretty first")
        };
        assert!(plain(tokens).starts_with("[\n  {\n    \"k\": 1\n  },"));
        // Undeclared, it is only text: too big to check, and maybe not JSON at all.
        assert_eq!(
            view(body.as_bytes(), Some("text/plain"), PAGE_CAPS).kind,
            "text"
        );
    }

    fn gzipped(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn request(headers: &[(&str, &str)], body: &[u8]) -> StoredRequest {
        StoredRequest::sample("0123456789abcdefghij", "", "", headers, body)
    }

    fn labels(v: &BodyView) -> Vec<&str> {
        v.tabs.iter().map(|t| t.label).collect()
    }

    #[test]
    fn encoded_bodies_are_shown_decoded_with_the_bytes_as_sent_beside() {
        let json = br#"{"paid": true}"#;
        let gz = gzipped(json);
        let r = request(
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", "gzip"),
            ],
            &gz,
        );
        let v = request_view(&r, PAGE_CAPS, 1 << 20);
        assert_eq!(v.kind, "JSON");
        assert_eq!(labels(&v), ["Pretty", "Raw", "Hex", "As sent (hex)"]);
        assert_eq!(
            v.notes[0],
            format!("Decoded from gzip: {} → 14 bytes.", gz.len())
        );
        assert_eq!(v.tabs[1].panel, Panel::Text(r#"{"paid": true}"#.into()));
        let Panel::Hex(sent) = &v.tabs[3].panel else {
            panic!("hex of the bytes as sent")
        };
        assert!(sent.starts_with("00000000  1f 8b"), "{sent}");

        // A bomb: cut at the limit, and said so.
        let bomb = gzipped(&vec![0u8; 100_000]);
        let r = request(&[("Content-Encoding", "gzip")], &bomb);
        let v = request_view(&r, PAGE_CAPS, 1000);
        assert!(
            v.notes[0].starts_with("Decoded from gzip, cut at 1,000 bytes"),
            "{:?}",
            v.notes
        );
        assert!(v.notes[0].contains("decompression bomb"));

        // Damage: what decoded, and the error naming the coding.
        let mut cut = gzipped(&b"text ".repeat(20_000));
        cut.truncate(cut.len() / 2);
        let r = request(
            &[("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
            &cut,
        );
        let v = request_view(&r, PAGE_CAPS, 1 << 20);
        assert!(
            v.notes[0].starts_with("Decoded from gzip up to damage (gzip: "),
            "{:?}",
            v.notes
        );
        assert_eq!(v.kind, "text");

        // Nothing decodes: shown as sent, no extra tab.
        let r = request(&[("Content-Encoding", "br, compress")], b"hello");
        let v = request_view(&r, PAGE_CAPS, 1 << 20);
        assert_eq!(
            v.notes[0],
            "Content-Encoding not undone (compress: not a coding hookbin can undo (it knows \
             gzip, x-gzip, deflate, br and zstd)): shown as sent."
        );
        assert_eq!(labels(&v), ["Raw", "Hex"]);
        // No encoding: the plain view.
        let r = request(&[("Content-Type", "text/plain")], b"hello");
        assert_eq!(
            request_view(&r, PAGE_CAPS, 1),
            view(b"hello", Some("text/plain"), PAGE_CAPS)
        );
    }

    #[test]
    fn multipart_bodies_list_their_parts_with_previews() {
        let mut body = b"--b\r\nContent-Disposition: form-data; name=\"<title>\"\r\n\r\nHello <b>\r\n\
                         --b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\\\".png\"\r\n\
                         Content-Type: image/png\r\n\r\n"
            .to_vec();
        body.extend(b"\x89PNG\r\n\x1a\n\0\0");
        body.extend(b"\r\n--b\r\n\r\n\r\n--b--\r\n");
        let v = view(&body, Some("multipart/form-data; boundary=b"), PAGE_CAPS);
        assert_eq!(v.kind, "multipart");
        assert_eq!(labels(&v), ["Parts", "Raw (hex)"]);
        assert_eq!(v.notes, Vec::<String>::new(), "binary parts are normal");
        let Panel::Parts(parts) = &v.tabs[0].panel else {
            panic!("parts first")
        };
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].name.as_deref(), Some("<title>"));
        assert_eq!(
            (parts[0].preview.as_str(), parts[0].preview_is_hex),
            ("Hello <b>", false)
        );
        assert_eq!(parts[1].filename.as_deref(), Some("x\".png"));
        assert_eq!(parts[1].content_type.as_deref(), Some("image/png"));
        assert_eq!(parts[1].size, "10 B");
        assert!(parts[1].preview_is_hex);
        assert!(parts[1].preview.starts_with("00000000  89 50 4e 47"));
        assert_eq!((parts[2].index, parts[2].preview.as_str()), (2, ""));
        // A text multipart body also has Raw; damage is noted.
        let v = view(
            b"--b\r\n\r\nfirst\r\n--b\r\n\r\nsecond, cut",
            Some("multipart/mixed; boundary=b"),
            PAGE_CAPS,
        );
        assert_eq!(labels(&v), ["Parts", "Raw", "Hex"]);
        assert!(v.notes[0].contains("ends inside part 2"), "{:?}", v.notes);
        let Panel::Parts(parts) = &v.tabs[0].panel else {
            panic!("parts first")
        };
        assert!(parts[1].incomplete);
        // No delimiter at all: no parts, and why.
        let v = view(
            b"just text",
            Some("multipart/form-data; boundary=zz"),
            PAGE_CAPS,
        );
        assert_eq!(v.tabs[0].panel, Panel::Parts(vec![]));
        assert!(v.notes[0].contains("--zz"));
    }

    #[test]
    fn multipart_previews_share_one_budget() {
        let field = "v".repeat(10_000);
        let body: String = (0..100)
            .map(|i| {
                format!("--b\r\nContent-Disposition: form-data; name=\"f{i}\"\r\n\r\n{field}\r\n")
            })
            .collect::<String>()
            + "--b--";
        let v = view(
            body.as_bytes(),
            Some("multipart/form-data; boundary=b"),
            PANE_CAPS,
        );
        let Panel::Parts(parts) = &v.tabs[0].panel else {
            panic!("parts first")
        };
        assert_eq!(parts.len(), 100);
        let shown: usize = parts.iter().map(|p| p.preview.len()).sum();
        assert!(shown <= PANE_CAPS.text, "{shown}");
        assert_eq!(parts[0].preview.len(), PANE_CAPS.text / 32);
        assert!(
            parts[0]
                .preview_note
                .as_deref()
                .unwrap()
                .contains("the start")
        );
        assert!(parts[99].preview.is_empty());
        assert!(
            parts[99]
                .preview_note
                .as_deref()
                .unwrap()
                .contains("Not previewed")
        );
    }

    #[test]
    fn xml_is_reindented() {
        let xml = b"<?xml version=\"1.0\"?><a x=\"1\"><b>t</b></a>";
        for ct in [
            Some("application/xml"),
            Some("text/xml; charset=utf-8"),
            Some("image/svg+xml"),
            None,
        ] {
            let v = view(xml, ct, PAGE_CAPS);
            assert_eq!(v.kind, "XML", "{ct:?}");
            assert_eq!(labels(&v), ["Pretty", "Raw", "Hex"]);
            assert_eq!(
                v.tabs[0].panel,
                Panel::Text("<?xml version=\"1.0\"?>\n<a x=\"1\">\n  <b>t</b>\n</a>".into())
            );
        }
        let v = view(b"<a><b></a>", Some("application/atom+xml"), PAGE_CAPS);
        assert_eq!(v.kind, "text");
        assert!(
            v.notes[0].starts_with("Declared as XML but does not parse: at byte"),
            "{:?}",
            v.notes
        );
        // Undeclared and not starting with a declaration: just text.
        assert_eq!(
            view(b"<a>x</a>", Some("text/plain"), PAGE_CAPS).kind,
            "text"
        );
    }

    #[test]
    fn json_pretty_shows_characters_for_escapes() {
        let text = r#"{"n\u00e4me":"J\u00fcrgen \ud83d\ude00","q":"\u0022\u005c","keep":"\u0000\u202e\u200b\ud800\n\"","esc":"\\u00fc"}"#;
        let v = view(text.as_bytes(), Some("application/json"), PAGE_CAPS);
        let Panel::Json(tokens) = &v.tabs[0].panel else {
            panic!("pretty first")
        };
        let pretty = plain(tokens);
        assert!(pretty.contains(r#""näme": "Jürgen 😀""#), "{pretty}");
        assert!(pretty.contains(r#""q": "\"\\""#), "{pretty}");
        assert!(
            pretty.contains(r#""keep": "\u0000\u202e\u200b\ud800\n\"""#),
            "{pretty}"
        );
        assert!(
            pretty.contains(r#""esc": "\\u00fc""#),
            "an escaped backslash is not an escape"
        );
        assert!(v.notes[0].contains("Raw has the bytes as sent"));
        let Panel::Text(raw) = &v.tabs[1].panel else {
            panic!("raw second")
        };
        assert_eq!(raw, text, "Raw keeps the escapes");
        assert!(view(br#"{"a":"\n"}"#, None, PAGE_CAPS).notes.is_empty());
        assert_eq!(
            show_unicode_escapes(r#""\u00""#),
            r#""\u00""#,
            "short escapes kept"
        );
        assert_eq!(show_unicode_escapes(r#""\uzzzz\u0041""#), r#""\uzzzzA""#);
    }

    #[test]
    fn hexdump_layout() {
        let (dump, clipped) = hexdump(b"Hello, <world>!\x00\x01", 1024);
        assert!(!clipped);
        assert_eq!(
            dump,
            "00000000  48 65 6c 6c 6f 2c 20 3c  77 6f 72 6c 64 3e 21 00  |Hello, <world>!.|\n\
             00000010  01                                                |.|\n"
        );
    }
}
