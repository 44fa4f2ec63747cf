//! XML re-indented for reading: one element per line, two spaces per level, text kept on its
//! element's line. Tags, attributes, text, entities and CDATA are written exactly as received
//! (only whitespace between tags changes), so the view shows what was sent, not a
//! re-serialization. Parsing is quick-xml's; it stops at the first error and says where.

use quick_xml::events::Event;

/// Why a body is not XML: where quick-xml stopped, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {reason}")]
pub struct XmlError {
    pub offset: u64,
    pub reason: String,
}

/// `text` re-indented; stops after about `cap` bytes of output (the flag says it did). A
/// document that does not parse (up to where the output stops) is an error.
pub fn pretty(text: &str, cap: usize) -> Result<(String, bool), XmlError> {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut out = Pretty::default();
    let mut open: Vec<String> = Vec::new();
    loop {
        if out.text.len() > cap {
            return Ok((out.text, true));
        }
        let event = reader.read_event().map_err(|e| XmlError {
            offset: reader.error_position(),
            reason: e.to_string(),
        })?;
        match event {
            Event::Start(e) => {
                out.flush_text();
                out.line(&["<", e.trim_end(), ">"]);
                open.push(e.name().as_ref().to_owned());
                out.depth += 1;
                out.just_opened = true;
            }
            Event::End(e) => {
                out.flush_text();
                out.depth = out.depth.saturating_sub(1);
                open.pop();
                let tag = ["</", &e, ">"];
                if out.just_opened || out.inline_text {
                    out.push(&tag);
                } else {
                    out.line(&tag);
                }
                out.just_opened = false;
                out.inline_text = false;
            }
            Event::Empty(e) => {
                out.flush_text();
                out.line(&["<", e.trim_end(), "/>"]);
            }
            Event::Text(e) => out.pending.push_str(&e),
            Event::GeneralRef(e) => {
                out.pending.push('&');
                out.pending.push_str(&e);
                out.pending.push(';');
            }
            Event::CData(e) => {
                out.pending.push_str("<![CDATA[");
                out.pending.push_str(&e);
                out.pending.push_str("]]>");
            }
            Event::Comment(e) => {
                out.flush_text();
                out.line(&["<!--", &e, "-->"]);
            }
            Event::Decl(e) => {
                out.flush_text();
                out.line(&["<?", &e, "?>"]);
            }
            Event::PI(e) => {
                out.flush_text();
                out.line(&["<?", &e, "?>"]);
            }
            Event::DocType(e) => {
                out.flush_text();
                out.line(&["<!DOCTYPE ", e.trim(), ">"]);
            }
            Event::Eof => {
                out.flush_text();
                if let Some(name) = open.last() {
                    return Err(XmlError {
                        offset: text.len() as u64,
                        reason: format!("the document ends with <{name}> still open"),
                    });
                }
                return Ok((out.text, false));
            }
        }
    }
}

#[derive(Default)]
struct Pretty {
    text: String,
    depth: usize,
    /// Text (with entity references and CDATA) seen since the last tag.
    pending: String,
    /// The last thing written is a start tag.
    just_opened: bool,
    /// The last thing written is text on its start tag's line.
    inline_text: bool,
}

impl Pretty {
    /// Writes `pieces` on a new line at the current depth.
    fn line(&mut self, pieces: &[&str]) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        for _ in 0..self.depth {
            self.text.push_str("  ");
        }
        self.push(pieces);
        self.just_opened = false;
        self.inline_text = false;
    }

    fn push(&mut self, pieces: &[&str]) {
        for p in pieces {
            self.text.push_str(p);
        }
    }

    /// Writes pending text: after its start tag on the same line, else on a line of its own.
    /// Whitespace between tags is layout and dropped.
    fn flush_text(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let trimmed = pending.trim();
        if trimmed.is_empty() {
            return;
        }
        if self.just_opened {
            self.push(&[trimmed]);
            self.just_opened = false;
            self.inline_text = true;
        } else {
            self.line(&[trimmed]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pp(text: &str) -> String {
        pretty(text, 1 << 20).unwrap().0
    }

    #[test]
    fn reindents_keeping_tags_and_text_as_written() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE note><!-- c --><note id='7'  x="a&amp;b"><to>Tove &amp; <![CDATA[<Jani>]]></to><empty /><p>Hi <b>you</b> there</p><?pi data?></note>"#;
        assert_eq!(
            pp(xml),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <!DOCTYPE note>\n\
             <!-- c -->\n\
             <note id='7'  x=\"a&amp;b\">\n  \
               <to>Tove &amp; <![CDATA[<Jani>]]></to>\n  \
               <empty/>\n  \
               <p>Hi\n    \
                 <b>you</b>\n    \
                 there\n  \
               </p>\n  \
               <?pi data?>\n\
             </note>"
        );
    }

    #[test]
    fn whitespace_between_tags_is_layout() {
        assert_eq!(
            pp("<a>\n   <b>1</b>\n\n\t<c></c>\n</a>\n"),
            "<a>\n  <b>1</b>\n  <c></c>\n</a>"
        );
    }

    #[test]
    fn errors_say_where() {
        let e = pretty("<a><b></a>", 1000).unwrap_err();
        assert!(e.reason.contains('b'), "{e}");
        assert!(e.to_string().starts_with("at byte "), "{e}");
        let e = pretty("<a><b>", 1000).unwrap_err();
        assert!(e.reason.contains("<b> still open"), "{e}");
        assert!(pretty("<a attr=\"x></a>", 1000).is_err());
    }

    #[test]
    fn output_is_capped() {
        let xml = format!("<r>{}</r>", "<i>x</i>".repeat(1000));
        let (out, clipped) = pretty(&xml, 100).unwrap();
        assert!(clipped);
        assert!(out.len() < 150, "{}", out.len());
        // Clipped output need not see the end: a document damaged later is still shown.
        let (_, clipped) = pretty(&format!("{xml}<unclosed>"), 100).unwrap();
        assert!(clipped);
    }
}
