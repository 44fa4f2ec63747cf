//! GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body keyed by the webhook
//! secret as text. No timestamp: GitHub signs nothing but the body.
//!
//! The `sha256=` prefix is part of the value GitHub's documented check (and octokit) compare, so
//! a bare hex digest is a mismatch, reported with a hint. When only the legacy
//! `X-Hub-Signature: sha1=<hex>` is present, that is checked instead (HMAC-SHA1).

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, value_text};
use crate::signing::crypto::{Algo, decode_hex};
use crate::signing::github::{SHA1_HEADER, SHA256_HEADER, decode_signature, label};
use crate::verify::diagnose::{Alt, Signed};
use crate::verify::{Scheme, VerifyError};

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    let (header, algo) = if let Some(h) = ctx.header(SHA256_HEADER) {
        (h, Algo::Sha256)
    } else if let Some(h) = ctx.header(SHA1_HEADER) {
        (h, Algo::Sha1)
    } else {
        return Ok(Outcome::missing(
            Scheme::Github,
            &[SHA256_HEADER],
            "GitHub sends sha256=<hex HMAC-SHA256 of the body> there.",
        ));
    };
    let value = value_text(header);
    let prefix = label(algo);
    let (trusted, mislabeled) = match value.starts_with(prefix) {
        true => (
            decode_signature(algo, &value).into_iter().collect(),
            Vec::new(),
        ),
        false => (Vec::new(), unprefixed(&value, prefix, &header.name)),
    };
    let signed = Signed {
        prefix: Vec::new(),
        body: &ctx.req.body,
    };
    let check = HmacCheck {
        mislabeled,
        ..HmacCheck::text_key(algo, ctx.secret, signed.clone(), trusted)
    };
    let matched = check
        .matching_entry()
        .map(|_| format!("the {prefix} signature"));
    let hint = match matched {
        Some(_) => None,
        None => check.explain().or_else(|| {
            check
                .trusted
                .is_empty()
                .then(|| format!("{} does not hold {prefix}<hex digest>", header.name))
        }),
    };
    let mut method = format!("{} with the webhook secret as text", algo.name());
    if algo == Algo::Sha1 {
        method.push_str(" (legacy X-Hub-Signature, as X-Hub-Signature-256 is absent)");
    }
    Ok(Finding {
        scheme: Scheme::Github,
        matched,
        hint,
        method,
        signed: describe_signed(&signed),
        freshness: None,
        header: header.name.clone(),
    }
    .into_outcome())
}

/// A value without the expected prefix: the digest it carries, with the hint to give when it is
/// the right one.
fn unprefixed(value: &str, prefix: &str, header: &str) -> Vec<Alt> {
    let (hint, hex) = match value.split_once('=') {
        Some((label, hex)) => (
            format!(
                "the digest in {header} is right but labelled {label}= instead of {prefix}, and \
                 GitHub's check compares the whole value"
            ),
            hex,
        ),
        None => (
            format!(
                "{header} lacks the {prefix} prefix GitHub always sends; the hex digest itself is \
                 right, but GitHub's documented check (and octokit) compare the whole value, so \
                 it fails"
            ),
            value,
        ),
    };
    decode_hex(hex)
        .map(|digest| Alt::new(hint, digest))
        .into_iter()
        .collect()
}
