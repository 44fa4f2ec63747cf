//! Slack: `X-Slack-Request-Timestamp` and `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 over
//! `v0:{timestamp}:{body}` keyed by the signing secret as text. The timestamp must be within the
//! tolerance in both directions (slack_sdk: `abs(now - ts) > 300` is rejected).

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, value_bytes, value_text};
use crate::signing::crypto::{Algo, decode_hex};
use crate::signing::slack::{
    SIGNATURE_HEADER as SIGNATURE, TIMESTAMP_HEADER as TIMESTAMP, decode_signature, signed_prefix,
};
use crate::verify::diagnose::{Alt, Signed};
use crate::verify::{Scheme, VerifyError};

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    let [timestamp, signature] = match ctx.required(
        Scheme::Slack,
        [TIMESTAMP, SIGNATURE],
        "Slack signs v0:timestamp:body and sends v0=<hex> in X-Slack-Signature.",
    ) {
        Ok(headers) => headers,
        Err(outcome) => return Ok(outcome),
    };
    let ts = match super::timestamp_of(Scheme::Slack, timestamp) {
        Ok(ts) => ts,
        Err(outcome) => return Ok(outcome),
    };
    let value = value_text(signature);
    let (trusted, mislabeled) = match value.starts_with("v0=") {
        true => (decode_signature(&value).into_iter().collect(), Vec::new()),
        false => (Vec::new(), unprefixed(&value, &signature.name)),
    };
    let signed = Signed {
        prefix: signed_prefix(value_bytes(timestamp)),
        body: &ctx.req.body,
    };
    let check = HmacCheck {
        mislabeled,
        formats: vec![
            Alt::new(
                "signature is over the body without the timestamp (Slack signs \
                 v0:timestamp:body)",
                Vec::new(),
            ),
            Alt::new(
                "signature is over timestamp.body (the Stripe layout) instead of \
                 v0:timestamp:body",
                [value_bytes(timestamp), b"."].concat(),
            ),
        ],
        ..HmacCheck::text_key(Algo::Sha256, ctx.secret, signed.clone(), trusted)
    };
    let matched = check
        .matching_entry()
        .map(|_| "the v0= signature".to_owned());
    let hint = match matched {
        Some(_) => None,
        None => check.explain(),
    };
    Ok(Finding {
        scheme: Scheme::Slack,
        matched,
        hint,
        method: "HMAC-SHA256 with the signing secret as text".to_owned(),
        signed: describe_signed(&signed),
        freshness: Some(ctx.freshness(Scheme::Slack, ts)),
        header: signature.name.clone(),
    }
    .into_outcome())
}

/// slack_sdk compares the whole `v0=<hex>` string, so a digest without the prefix fails; this
/// only recognises it for the hint.
fn unprefixed(value: &str, header: &str) -> Vec<Alt> {
    let hex = value.split_once('=').map_or(value, |(_, hex)| hex);
    decode_hex(hex)
        .map(|digest| {
            Alt::new(
                format!(
                    "{header} carries the right digest but not as v0=<hex>, which is what \
                     Slack's check compares"
                ),
                digest,
            )
        })
        .into_iter()
        .collect()
}
