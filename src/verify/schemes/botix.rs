//! BOTIX (this project's own scheme): `X-BOTIX-Timestamp` and `X-BOTIX-Signature`, HMAC-SHA256
//! over `{timestamp}.{body}` keyed by the secret as text, lowercase hex. The value is documented
//! as `sha256=<hex>` and shown as bare `<hex>` elsewhere, so both are accepted. The timestamp must
//! be within the tolerance in both directions.

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, value_bytes, value_text};
use crate::signing::botix::{
    SIGNATURE_HEADER as SIGNATURE, TIMESTAMP_HEADER as TIMESTAMP, decode_signature, signed_prefix,
};
use crate::signing::crypto::Algo;
use crate::verify::diagnose::{Alt, Signed};
use crate::verify::{Scheme, VerifyError};

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    let [timestamp, signature] = match ctx.required(
        Scheme::Botix,
        [TIMESTAMP, SIGNATURE],
        "BOTIX signs timestamp.body and sends sha256=<hex> in X-BOTIX-Signature.",
    ) {
        Ok(headers) => headers,
        Err(outcome) => return Ok(outcome),
    };
    let ts = match super::timestamp_of(Scheme::Botix, timestamp) {
        Ok(ts) => ts,
        Err(outcome) => return Ok(outcome),
    };
    let signed = Signed {
        prefix: signed_prefix(value_bytes(timestamp)),
        body: &ctx.req.body,
    };
    let trusted = decode_signature(&value_text(signature))
        .into_iter()
        .collect();
    let check = HmacCheck {
        formats: vec![Alt::new(
            "signature is over the body without the timestamp (BOTIX signs timestamp.body)",
            Vec::new(),
        )],
        ..HmacCheck::text_key(Algo::Sha256, ctx.secret, signed.clone(), trusted)
    };
    let matched = check
        .matching_entry()
        .map(|_| "the hex signature".to_owned());
    let hint = match matched {
        Some(_) => None,
        None => check.explain(),
    };
    Ok(Finding {
        scheme: Scheme::Botix,
        matched,
        hint,
        method: "HMAC-SHA256 with the secret as text".to_owned(),
        signed: describe_signed(&signed),
        freshness: Some(ctx.freshness(Scheme::Botix, ts)),
        header: signature.name.clone(),
    }
    .into_outcome())
}
