//! Generic `hmac-sha256`: the HMAC-SHA256 of the raw body, keyed by the secret as text, found in
//! any header value: hex or base64, bare or after a `name=` label (`sha256=...`, `v1=...`), alone
//! or in a list separated by commas, semicolons or spaces. Also the last resort when no known
//! scheme's headers are present.

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, value_text};
use crate::signing::crypto::{Algo, decode_base64, decode_hex};
use crate::verify::detect::SIGNATURE_HEADERS;
use crate::verify::diagnose::Signed;
use crate::verify::{Reason, Scheme, Verification, VerifyError, text};

/// A header value that decodes to something the size of an HMAC-SHA256.
struct Candidate {
    header: String,
    /// "hex", or "base64"; with the label when it came after `label=`.
    form: String,
    tag: Vec<u8>,
}

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    Ok(check(ctx).into_outcome_or_mismatch())
}

/// No known scheme was detected: a matching header makes the request valid under
/// `hmac-sha256`; otherwise the answer is "no signature header", with no scheme.
pub(crate) fn verify_undetected(ctx: &Context<'_>) -> Verification {
    let found = check(ctx);
    if found.matched.is_some() {
        let note = "No header of a known scheme was found; the generic HMAC-SHA256 check found \
                    one. "
            .to_owned();
        return found
            .into_outcome_or_mismatch()
            .finish(Some(Scheme::HmacSha256), Some(note));
    }
    Outcome {
        reason: Reason::MissingHeader,
        timestamp_ok: None,
        detail: format!(
            "No signature header found: the request has none of the known signature headers \
             ({}), and no header value holds the HMAC-SHA256 of the raw body with this secret. \
             If the sender renamed its headers, name the scheme explicitly.",
            SIGNATURE_HEADERS.join(", ")
        ),
        signed: None,
        signature_header: None,
    }
    .finish(None, None)
}

/// The generic check's finding (never fails: the secret is used as text).
struct Found {
    finding: Finding,
    matched: Option<usize>,
}

impl Found {
    fn into_outcome_or_mismatch(self) -> Outcome {
        let mut outcome = self.finding.into_outcome();
        if self.matched.is_none() {
            outcome.signature_header = None;
        }
        outcome
    }
}

fn check(ctx: &Context<'_>) -> Found {
    let candidates: Vec<Candidate> = ctx.req.headers.iter().flat_map(candidates_in).collect();
    let signed = Signed {
        prefix: Vec::new(),
        body: &ctx.req.body,
    };
    let check = HmacCheck::text_key(
        Algo::Sha256,
        ctx.secret,
        signed.clone(),
        candidates.iter().map(|c| c.tag.clone()).collect(),
    );
    let matched = check.matching_entry();
    let hit = matched.map(|i| &candidates[i]);
    let hint = match hit {
        Some(_) => None,
        None => Some(match check.explain() {
            Some(hint) => hint,
            None => format!(
                "no header value holds the HMAC-SHA256 of the raw body with this secret \
                 ({} checked: hex or base64, bare or after a name= label)",
                text::count(candidates.len(), "candidate value")
            ),
        }),
    };
    let finding = Finding {
        scheme: Scheme::HmacSha256,
        matched: hit.map(|c| format!("the value in header {} ({})", c.header, c.form)),
        hint,
        method: "HMAC-SHA256 with the secret as text".to_owned(),
        signed: describe_signed(&signed),
        freshness: None,
        header: hit.map_or_else(|| "any header".to_owned(), |c| c.header.clone()),
    };
    Found { finding, matched }
}

/// Every way `header`'s value may hold a 32-byte tag.
fn candidates_in(header: &crate::model::HeaderPair) -> Vec<Candidate> {
    let value = value_text(header);
    let mut found = Vec::new();
    for token in value.split([',', ';', ' ', '\t']).filter(|t| !t.is_empty()) {
        let mut forms = vec![(None, token)];
        if let Some((label, rest)) = token.split_once('=')
            && is_label(label)
            && !rest.is_empty()
        {
            forms.push((Some(label), rest));
        }
        for (label, encoded) in forms {
            let Some((encoding, tag)) = decode_tag(encoded) else {
                continue;
            };
            let form = match label {
                Some(label) => format!("{encoding} after {}=", text::shorten(label, 20)),
                None => encoding.to_owned(),
            };
            found.push(Candidate {
                header: header.name.clone(),
                form,
                tag,
            });
        }
    }
    found
}

/// `sha256`, `v1`, `hmac-sha256`: short words, not base64 data that happens to hold a `=`.
fn is_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 32
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Hex first: 64 hex digits are also valid base64, but of the wrong length.
fn decode_tag(encoded: &str) -> Option<(&'static str, Vec<u8>)> {
    const MAC_LEN: usize = 32;
    if let Some(tag) = decode_hex(encoded).filter(|t| t.len() == MAC_LEN) {
        return Some(("hex", tag));
    }
    decode_base64(encoded)
        .filter(|t| t.len() == MAC_LEN)
        .map(|tag| ("base64", tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HeaderPair;

    fn forms(value: &str) -> Vec<String> {
        candidates_in(&HeaderPair::new("X-Sig", value))
            .into_iter()
            .map(|c| c.form)
            .collect()
    }

    #[test]
    fn finds_tags_bare_labelled_and_in_lists() {
        let hex = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        let b64 = "dXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc=";
        assert_eq!(forms(hex), ["hex"]);
        assert_eq!(forms(b64), ["base64"]);
        assert_eq!(forms(&format!("sha256={hex}")), ["hex after sha256="]);
        assert_eq!(
            forms(&format!("t=1,v1={hex}, v1,{b64}")),
            ["hex after v1=", "base64"]
        );
        assert!(forms("application/json").is_empty());
    }
}
