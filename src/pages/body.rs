//! How a captured body is shown: chosen by content type and content, always as text.
//!
//! Every view here produces plain strings (or `(class, text)` tokens) that the templates escape.
//! Nothing is ever pre-built HTML. Views are capped, so a 5 MiB body does not produce a 50 MB
//! page; the download link always gives the exact bytes.

/// How much of a body one view renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Most text (pretty JSON, raw text) rendered per view.
    pub text: usize,
    /// Most body bytes rendered as a hex dump (each 16 bytes become one ~78 character line).
    pub hex: usize,
}

/// The request on its own page.
pub const PAGE_CAPS: Caps = Caps {
    text: 128 * 1024,
    hex: 32 * 1024,
};
/// The detail beside the list: the bin page is the one kept open and reloaded, so it stays
/// light; its notes point to the request's own page for more.
pub const PANE_CAPS: Caps = Caps {
    text: 32 * 1024,
    hex: 8 * 1024,
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
    /// What the body was recognised as: `JSON`, `form`, `text`, `binary`, or `empty`.
    pub kind: &'static str,
    pub tabs: Vec<Tab>,
    /// A remark on the content (e.g. "declared JSON but does not parse").
    pub note: Option<String>,
}

impl BodyView {
    pub fn is_empty(&self) -> bool {
        self.tabs.is_empty()
    }
}

fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
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

/// Chooses the views of `body` by content type and content.
pub fn view(body: &[u8], content_type: Option<&str>, caps: Caps) -> BodyView {
    if body.is_empty() {
        return BodyView {
            kind: "empty",
            tabs: Vec::new(),
            note: None,
        };
    }
    let media = media_type(content_type);
    let text = utf8_text(body).filter(|t| looks_like_text(clip(t, SNIFF).0));
    let mut tabs = Vec::new();
    let mut note = None;
    let mut kind = "binary";
    if let Some(text) = text {
        kind = "text";
        let declared_json = is_json_type(&media);
        let trimmed = text.trim_start();
        let looks_json = trimmed.starts_with('{') || trimmed.starts_with('[');
        if declared_json && looks_json && text.len() > JSON_CHECK_CAP {
            kind = "JSON";
            let (tokens, _) = json_tokens(text, caps.text);
            let shown: usize = tokens.iter().map(|t| t.text.len()).sum();
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
                    let (tokens, clipped) = json_tokens(text, caps.text);
                    let shown: usize = tokens.iter().map(|t| t.text.len()).sum();
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
                    note = Some(format!("Declared as JSON but does not parse: {e}."));
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
        let (shown, clipped) = clip(text, caps.text);
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
    if text.is_none() && utf8_text(body).is_none() {
        note = Some("Not valid UTF-8: shown as a hex dump.".to_owned());
    } else if text.is_none() {
        note = Some("Binary content: shown as a hex dump.".to_owned());
    }
    BodyView { kind, tabs, note }
}

/// Form fields decoded as application/x-www-form-urlencoded, in order, repeats kept; stops
/// after about `cap` bytes of text.
fn form_fields(text: &str, cap: usize) -> (Vec<(String, String)>, bool) {
    let mut fields = Vec::new();
    let mut size = 0;
    for (k, v) in form_urlencoded::parse(text.as_bytes()) {
        size += k.len() + v.len();
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
/// string, number and key exactly as written (no re-serialisation: key order, escapes and
/// number spelling stay as received). Stops after about `cap` bytes of output.
pub fn json_tokens(text: &str, cap: usize) -> (Vec<Token>, bool) {
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
            return (out.tokens, true);
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
                out.push(if is_key { "j-key" } else { "j-str" }, &text[i..end]);
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
    (out.tokens, false)
}

#[derive(Default)]
struct Tokens {
    tokens: Vec<Token>,
    size: usize,
}

impl Tokens {
    fn push(&mut self, class: &'static str, text: &str) {
        self.size += text.len();
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
        let (tokens, clipped) = json_tokens(text, PAGE_CAPS.text);
        assert!(!clipped);
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
        let (tokens, clipped) = json_tokens(&big, 100);
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
        assert!(v.note.unwrap().contains("does not parse"));
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
        assert!(v.note.unwrap().contains("UTF-8"));
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
