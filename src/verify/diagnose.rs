//! Explaining a mismatch: re-run the check with one thing changed at a time and, when a change
//! reproduces the signature, say which. Only well-known mistakes are tried (a trailing newline
//! lost or added, a signature over the body alone, a key derived the wrong way, the right MAC
//! under the wrong label or encoding), so a hit is a reliable hint; no hit leaves the plain
//! "wrong secret or changed bytes" answer.
//!
//! The hints never make a request valid: they only change the wording of `detail`.

/// One alternative to try (a key, a signed-bytes prefix, a received tag) and the sentence that
/// explains the mismatch when it is the one that matches.
#[derive(Debug, Clone)]
pub(crate) struct Alt {
    pub hint: String,
    pub bytes: Vec<u8>,
}

impl Alt {
    pub(crate) fn new(hint: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            hint: hint.into(),
            bytes,
        }
    }
}

/// The bytes a scheme signs: `prefix` (id, timestamp, separators) followed by the raw body.
/// Every body-signing scheme puts the body last, so body variants only touch the tail.
#[derive(Debug, Clone)]
pub(crate) struct Signed<'a> {
    pub prefix: Vec<u8>,
    pub body: &'a [u8],
}

impl<'a> Signed<'a> {
    pub(crate) fn parts(&self) -> [&[u8]; 2] {
        [&self.prefix, self.body]
    }
}

/// A change to the end of the body: keep `body[..keep]`, then append `suffix`.
struct BodyChange {
    hint: &'static str,
    keep: usize,
    suffix: &'static [u8],
}

/// The body changes worth trying: whitespace at the end is what proxies, editors, `echo` and
/// "pretty" re-serialisation add or strip most often.
fn body_changes(body: &[u8]) -> Vec<BodyChange> {
    let len = body.len();
    let mut changes = vec![
        BodyChange {
            hint: "body differs from what was signed: trailing newline? The signature matches \
                   this body with a newline (\\n) appended, so the signed body ended in a \
                   newline that was lost on the way",
            keep: len,
            suffix: b"\n",
        },
        BodyChange {
            hint: "body differs from what was signed: trailing newline? The signature matches \
                   this body with CRLF (\\r\\n) appended, so the signed body ended in a line \
                   break that was lost on the way",
            keep: len,
            suffix: b"\r\n",
        },
        BodyChange {
            hint: "body differs from what was signed: trailing whitespace? The signature matches \
                   this body with a space appended, so the signed body ended in a space that \
                   was lost on the way",
            keep: len,
            suffix: b" ",
        },
    ];
    if body.ends_with(b"\r\n") {
        changes.push(BodyChange {
            hint: "body differs from what was signed: trailing newline? The signature matches \
                   this body without its final CRLF (\\r\\n), which was added after signing",
            keep: len - 2,
            suffix: b"",
        });
    } else if body.ends_with(b"\n") {
        changes.push(BodyChange {
            hint: "body differs from what was signed: trailing newline? The signature matches \
                   this body without its final newline (\\n), which was added after signing",
            keep: len - 1,
            suffix: b"",
        });
    }
    let trimmed = body.trim_ascii_end().len();
    if trimmed < len && changes.iter().all(|c| c.keep != trimmed) {
        changes.push(BodyChange {
            hint: "body differs from what was signed: trailing whitespace? The signature matches \
                   this body without its trailing whitespace, which was added after signing",
            keep: trimmed,
            suffix: b"",
        });
    }
    changes
}

/// Tries body changes first, then the alternative `formats` (other prefixes for the same body),
/// and returns the hint of the first one `matches` accepts. `matches` gets the signed bytes as
/// segments, in order.
pub(crate) fn explain_signed_bytes(
    signed: &Signed<'_>,
    formats: &[Alt],
    matches: impl Fn(&[&[u8]]) -> bool,
) -> Option<String> {
    let body = signed.body;
    body_changes(body)
        .into_iter()
        .find(|c| matches(&[&signed.prefix, &body[..c.keep], c.suffix]))
        .map(|c| c.hint.to_owned())
        .or_else(|| {
            formats
                .iter()
                .find(|f| matches(&[&f.bytes, body]))
                .map(|f| f.hint.clone())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn finds_a_lost_or_added_trailing_newline() {
        let signed = Signed {
            prefix: b"1.".to_vec(),
            body: b"{}",
        };
        let hint = explain_signed_bytes(&signed, &[], |p| concat(p) == b"1.{}\n").unwrap();
        assert!(hint.contains("trailing newline?"), "{hint}");
        assert!(hint.contains("appended"), "{hint}");

        let signed = Signed {
            prefix: Vec::new(),
            body: b"{}\r\n",
        };
        let hint = explain_signed_bytes(&signed, &[], |p| concat(p) == b"{}").unwrap();
        assert!(hint.contains("without its final CRLF"), "{hint}");

        let signed = Signed {
            prefix: Vec::new(),
            body: b"{} \t\n",
        };
        let hint = explain_signed_bytes(&signed, &[], |p| concat(p) == b"{}").unwrap();
        assert!(hint.contains("without its trailing whitespace"), "{hint}");
    }

    #[test]
    fn finds_an_alternative_format() {
        let signed = Signed {
            prefix: b"id.1.".to_vec(),
            body: b"{}",
        };
        let formats = [Alt::new("body only", Vec::new())];
        let hint = explain_signed_bytes(&signed, &formats, |p| concat(p) == b"{}");
        assert_eq!(hint.as_deref(), Some("body only"));
        assert_eq!(explain_signed_bytes(&signed, &formats, |_| false), None);
    }
}
