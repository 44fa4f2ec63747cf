//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...][,v0=<hex>]`, HMAC-SHA256 over
//! `{t}.{body}` keyed by the endpoint secret *as is* (the `whsec_` prefix included, not decoded).
//!
//! Only `v1` entries are trusted; `v0` (test mode) and any other scheme are ignored, which
//! prevents downgrade attacks. The timestamp is checked in the past only, as Stripe's library
//! does (see [`crate::signing::Window::PastOnly`]).

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, entry_note};
use crate::signing::crypto::Algo;
use crate::signing::stripe::{HEADER, TIMESTAMP, V1, decode_signature, signed_prefix};
use crate::verify::diagnose::{Alt, Signed};
use crate::verify::{Reason, Scheme, VerifyError, text};

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    let Some(header) = ctx.header(HEADER) else {
        return Ok(Outcome::missing(
            Scheme::Stripe,
            &[HEADER],
            "Stripe sends t=<timestamp>,v1=<hex HMAC-SHA256 of timestamp.body> there.",
        ));
    };
    let items = parse_items(ctx);
    let Some(t) = items
        .iter()
        .find(|(k, _)| k == TIMESTAMP)
        .map(|(_, v)| v.as_str())
    else {
        let mut outcome = Outcome::cannot_check(
            Scheme::Stripe,
            Reason::MissingHeader,
            &format!("{} has no t= timestamp element", header.name),
            "Stripe always sends t=<timestamp> first.",
        );
        outcome.signature_header = Some(header.name.clone());
        return Ok(outcome);
    };
    let Ok(ts) = t.parse::<i64>() else {
        return Ok(Outcome::malformed_timestamp(
            Scheme::Stripe,
            &format!("{} t=", header.name),
            t,
        ));
    };
    let signed = Signed {
        prefix: signed_prefix(ts),
        body: &ctx.req.body,
    };
    let trusted = items
        .iter()
        .filter(|(k, _)| k == V1)
        .filter_map(|(_, v)| decode_signature(v))
        .collect();
    let check = HmacCheck {
        mislabeled: mislabeled(&items),
        formats: vec![Alt::new(
            "signature is over the body without the timestamp (Stripe signs timestamp.body)",
            Vec::new(),
        )],
        ..HmacCheck::text_key(Algo::Sha256, ctx.secret, signed.clone(), trusted)
    };
    let matched = check
        .matching_entry()
        .map(|i| entry_note("v1", i, check.trusted.len()));
    let hint = match matched {
        Some(_) => None,
        None => check.explain().or_else(|| {
            check.trusted.is_empty().then(|| {
                format!(
                    "{} has no v1 entry; Stripe's library trusts only v1 and ignores v0 and \
                     every other scheme",
                    header.name
                )
            })
        }),
    };
    Ok(Finding {
        scheme: Scheme::Stripe,
        matched,
        hint,
        method: "HMAC-SHA256 (v1) with the endpoint secret as text (whsec_ included)".to_owned(),
        signed: describe_signed(&signed),
        freshness: Some(ctx.freshness(Scheme::Stripe, ts)),
        header: header.name.clone(),
    }
    .into_outcome())
}

/// The `key=value` items of every Stripe-Signature header, in order.
fn parse_items(ctx: &Context<'_>) -> Vec<(String, String)> {
    ctx.headers_named(HEADER)
        .flat_map(|h| crate::signing::stripe::parse_items(&super::value_text(h)))
        .collect()
}

/// Signatures under any scheme other than v1: never trusted, but worth naming when one of them
/// carries the right MAC.
fn mislabeled(items: &[(String, String)]) -> Vec<Alt> {
    items
        .iter()
        .filter(|(k, _)| k != TIMESTAMP && k != V1)
        .filter_map(|(k, v)| {
            let hint = format!(
                "the {} entry carries the matching signature, but Stripe trusts only v1: v0 \
                 and other schemes are ignored to prevent downgrade attacks",
                text::shorten(k, 20)
            );
            Some(Alt::new(hint, decode_signature(v)?))
        })
        .collect()
}
