//! One verifier per scheme, and what they share: the request context, header lookup, the HMAC
//! check with its mismatch explanation, and the way a finding becomes a [`Verification`].
//!
//! Each verifier takes its scheme's rules (header names, signed bytes, value formats, keys)
//! from the matching module of [`crate::signing`], the ones `hookbin send` signs with.

mod botix;
pub(crate) mod generic;
mod github;
mod shopify;
mod slack;
mod standard;
mod stripe;
mod twilio;

use std::borrow::Cow;

use super::diagnose::{Alt, Signed, explain_signed_bytes};
use super::freshness::{Clock, Freshness};
use super::{Reason, Scheme, Verification, VerifyError, text};
use crate::model::{HeaderPair, StoredRequest, find_header};
use crate::signing::crypto::{Algo, first_match, hmac, tags_equal};
use crate::signing::keys;

/// Everything a verifier may look at.
pub(crate) struct Context<'a> {
    pub req: &'a StoredRequest,
    pub secret: &'a str,
    pub clock: Clock,
    /// Twilio: the URL to check (the caller's `url`, else `default_url`).
    pub url: &'a str,
    pub url_given: bool,
    /// The bin URL as captured, for Twilio's "it matches the other URL" hint.
    pub default_url: &'a str,
}

impl Context<'_> {
    /// The first header called `name`, in any case.
    pub(crate) fn header(&self, name: &str) -> Option<&HeaderPair> {
        find_header(&self.req.headers, name)
    }

    /// The headers a scheme cannot do without, in the order of `names`; or the outcome that
    /// names the missing ones and says what the scheme `needs`.
    pub(crate) fn required<const N: usize>(
        &self,
        scheme: Scheme,
        names: [&str; N],
        needs: &str,
    ) -> Result<[&HeaderPair; N], Outcome> {
        let found = names.map(|n| self.header(n));
        if found.iter().all(Option::is_some) {
            return Ok(found.map(|h| h.expect("checked above")));
        }
        let absent: Vec<&str> = names
            .iter()
            .zip(&found)
            .filter(|(_, h)| h.is_none())
            .map(|(n, _)| *n)
            .collect();
        Err(Outcome::missing(scheme, &absent, needs))
    }

    /// Whether `ts` is within the tolerance, in the direction the scheme's rules say.
    pub(crate) fn freshness(&self, scheme: Scheme, ts: i64) -> Freshness {
        let window = scheme
            .replay_window()
            .expect("only schemes that sign a timestamp check one");
        super::freshness::check(&self.clock, ts, window)
    }

    /// Every header called `name`, in received order. HTTP treats repeated list headers as one
    /// comma-joined list, so the list-valued signature headers read all of them.
    pub(crate) fn headers_named<'s>(
        &'s self,
        name: &'s str,
    ) -> impl Iterator<Item = &'s HeaderPair> + 's {
        self.req
            .headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
    }
}

/// A header's value without the optional whitespace around it, which HTTP does not count as part
/// of the value (RFC 9110, section 5.5).
pub(crate) fn value_bytes(header: &HeaderPair) -> &[u8] {
    let value = header.value.as_slice();
    let start = value
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &value[start..end]
}

/// [`value_bytes`] as text (bytes that are not UTF-8 become U+FFFD and then fail to decode).
pub(crate) fn value_text(header: &HeaderPair) -> Cow<'_, str> {
    String::from_utf8_lossy(value_bytes(header))
}

/// Runs the verifier for `scheme`.
pub(crate) fn run(scheme: Scheme, ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    match scheme {
        Scheme::StandardWebhooks | Scheme::Svix => standard::verify(ctx, scheme),
        Scheme::Stripe => stripe::verify(ctx),
        Scheme::Github => github::verify(ctx),
        Scheme::Slack => slack::verify(ctx),
        Scheme::Shopify => shopify::verify(ctx),
        Scheme::Twilio => twilio::verify(ctx),
        Scheme::Botix => botix::verify(ctx),
        Scheme::HmacSha256 => generic::verify(ctx),
    }
}

/// A verifier's answer before it becomes a [`Verification`].
#[derive(Debug)]
pub(crate) struct Outcome {
    pub reason: Reason,
    pub timestamp_ok: Option<bool>,
    pub detail: String,
    pub signed: Option<String>,
    pub signature_header: Option<String>,
}

impl Outcome {
    /// Some headers the scheme needs are absent. `names` are spelled as the provider documents
    /// them; `needs` says what the scheme expects there.
    pub(crate) fn missing(scheme: Scheme, names: &[&str], needs: &str) -> Outcome {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let what = match names.len() {
            1 => format!("header {} is missing", names[0]),
            _ => format!("headers {} are missing", text::and_list(&names)),
        };
        Outcome::cannot_check(scheme, Reason::MissingHeader, &what, needs)
    }

    /// A timestamp header that is not an integer number of seconds.
    pub(crate) fn malformed_timestamp(scheme: Scheme, header: &str, value: &str) -> Outcome {
        let what = format!(
            "the {header} value {:?} is not a Unix time in seconds",
            text::shorten(value, 40)
        );
        Outcome {
            timestamp_ok: Some(false),
            ..Outcome::cannot_check(scheme, Reason::MalformedHeader, &what, "")
        }
    }

    /// The request lacks something the scheme needs, so no signature was computed.
    pub(crate) fn cannot_check(scheme: Scheme, reason: Reason, what: &str, needs: &str) -> Outcome {
        Outcome {
            reason,
            timestamp_ok: None,
            detail: format!("{} cannot be checked: {what}. {needs}", scheme.label())
                .trim_end()
                .to_owned(),
            signed: None,
            signature_header: None,
        }
    }

    /// The public answer. `note` (e.g. how the scheme was detected) goes in front of `detail`.
    pub(crate) fn finish(self, scheme: Option<Scheme>, note: Option<String>) -> Verification {
        Verification {
            scheme: scheme.map(|s| s.name().to_owned()),
            valid: self.reason == Reason::Ok,
            timestamp_ok: self.timestamp_ok,
            detail: format!("{}{}", note.unwrap_or_default(), self.detail),
            reason: self.reason,
            signed: self.signed,
            signature_header: self.signature_header,
        }
    }
}

/// What a verifier found, in the terms every scheme shares.
pub(crate) struct Finding {
    pub scheme: Scheme,
    /// What matched, as a noun phrase ("the v1 signature", "v1 entry 2 of 3"), or `None`.
    pub matched: Option<String>,
    /// On a mismatch, the likely cause when one was found.
    pub hint: Option<String>,
    /// How the signature is computed, e.g. "HMAC-SHA256 with the secret as text".
    pub method: String,
    /// What the signature covers for this request.
    pub signed: String,
    /// `None` for schemes without a timestamp.
    pub freshness: Option<Freshness>,
    /// The signature header, spelled as sent.
    pub header: String,
}

impl Finding {
    /// Turns the finding into an outcome. A wrong signature wins over a stale timestamp: a
    /// stale but authentic request is a replay, a wrong signature means it is not authentic.
    pub(crate) fn into_outcome(self) -> Outcome {
        let label = self.scheme.label();
        let timestamp = self
            .freshness
            .as_ref()
            .map(|f| format!(" {}", capitalise(&f.sentence)))
            .unwrap_or_default();
        let computed = format!("Computed {} over {}.", self.method, self.signed);
        let (reason, detail) = match (&self.matched, &self.freshness) {
            (Some(entry), Some(stale)) if !stale.ok => (
                Reason::TimestampOutOfTolerance,
                format!(
                    "The {label} signature is correct ({entry} matches), but the {} {computed}",
                    stale.sentence
                ),
            ),
            (Some(entry), _) => (
                Reason::Ok,
                format!("Valid {label} signature: {entry} matches. {computed}{timestamp}"),
            ),
            (None, _) => {
                let why = self.hint.clone().unwrap_or_else(|| {
                    format!(
                        "no signature in {} was made with this secret over these bytes; either \
                         the secret is wrong or the request changed after it was signed",
                        self.header
                    )
                });
                (
                    Reason::SignatureMismatch,
                    format!(
                        "{label} signature does not match. {}. {computed}{timestamp}",
                        capitalise(&why)
                    ),
                )
            }
        };
        Outcome {
            reason,
            timestamp_ok: self.freshness.as_ref().map(|f| f.ok),
            detail,
            signed: Some(self.signed),
            signature_header: Some(self.header),
        }
    }
}

fn capitalise(sentence: &str) -> String {
    let mut chars = sentence.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// "the v1 signature" for a single entry, "v1 entry 2 of 3" for a list.
pub(crate) fn entry_note(label: &str, index: usize, total: usize) -> String {
    if total == 1 {
        format!("the {label} signature")
    } else {
        format!("{label} entry {} of {total}", index + 1)
    }
}

/// An HMAC scheme's check: the key, the signed bytes, the signatures that count, and what to try
/// when none matches.
pub(crate) struct HmacCheck<'a> {
    pub algo: Algo,
    pub key: Vec<u8>,
    pub signed: Signed<'a>,
    /// Decoded signatures the scheme trusts (any may match: key rotation).
    pub trusted: Vec<Vec<u8>>,
    /// Decoded values that do not count (wrong label, wrong encoding), each with the hint to
    /// give when it carries the right MAC.
    pub mislabeled: Vec<Alt>,
    /// Other prefixes for the same body (e.g. the body without the timestamp).
    pub formats: Vec<Alt>,
    /// Other keys a sender may have derived from the same secret.
    pub keys: Vec<Alt>,
}

impl<'a> HmacCheck<'a> {
    /// A check keyed by the secret as text, as most providers do, with the other keys a sender
    /// may have derived from that secret; no mislabeled values or other formats (a scheme adds
    /// its own with struct update syntax).
    pub(crate) fn text_key(
        algo: Algo,
        secret: &str,
        signed: Signed<'a>,
        trusted: Vec<Vec<u8>>,
    ) -> Self {
        HmacCheck {
            algo,
            key: keys::text_key(secret),
            signed,
            trusted,
            mislabeled: Vec::new(),
            formats: Vec::new(),
            keys: super::keys::alternatives_to_text_key(secret),
        }
    }

    /// Index of the trusted signature that matches.
    pub(crate) fn matching_entry(&self) -> Option<usize> {
        first_match(&self.mac(&self.key, &self.signed.parts()), &self.trusted)
    }

    /// Why nothing matched, when one of the usual mistakes explains it. The MAC under a wrong
    /// label comes first (the most precise answer), then changed bytes, then a different key.
    pub(crate) fn explain(&self) -> Option<String> {
        let mac = self.mac(&self.key, &self.signed.parts());
        if let Some(alt) = self.mislabeled.iter().find(|a| tags_equal(&mac, &a.bytes)) {
            return Some(alt.hint.clone());
        }
        let matches_trusted = |key: &[u8], parts: &[&[u8]]| {
            first_match(&self.mac(key, parts), &self.trusted).is_some()
        };
        explain_signed_bytes(&self.signed, &self.formats, |parts| {
            matches_trusted(&self.key, parts)
        })
        .or_else(|| {
            self.keys
                .iter()
                .find(|k| matches_trusted(&k.bytes, &self.signed.parts()))
                .map(|k| k.hint.clone())
        })
    }

    fn mac(&self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        hmac(self.algo, key, parts)
    }
}

/// `"<prefix>" followed by the raw body (N bytes)`, or just the raw body for an empty prefix.
pub(crate) fn describe_signed(signed: &Signed<'_>) -> String {
    if signed.prefix.is_empty() {
        text::raw_body(signed.body)
    } else {
        format!(
            "{} followed by {}",
            text::quoted(&signed.prefix),
            text::raw_body(signed.body)
        )
    }
}

/// Parses a timestamp header (integer Unix seconds).
pub(crate) fn parse_timestamp(header: &HeaderPair) -> Option<i64> {
    value_text(header).parse().ok()
}

/// The Unix time in a scheme's timestamp header, or the outcome that says it is not one.
pub(crate) fn timestamp_of(scheme: Scheme, header: &HeaderPair) -> Result<i64, Outcome> {
    parse_timestamp(header)
        .ok_or_else(|| Outcome::malformed_timestamp(scheme, &header.name, &value_text(header)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_lose_surrounding_whitespace_only() {
        let h = HeaderPair::new("X", &b" \t a b \t"[..]);
        assert_eq!(value_bytes(&h), b"a b");
        let empty = HeaderPair::new("X", &b"  "[..]);
        assert_eq!(value_bytes(&empty), b"");
    }

    #[test]
    fn entry_notes() {
        assert_eq!(entry_note("v1", 0, 1), "the v1 signature");
        assert_eq!(entry_note("v1", 1, 2), "v1 entry 2 of 2");
    }
}
