//! Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body keyed by the app's
//! client secret as text. No timestamp.

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, value_text};
use crate::signing::crypto::{Algo, decode_hex};
use crate::signing::shopify::{HEADER, decode_signature};
use crate::verify::diagnose::{Alt, Signed};
use crate::verify::{Scheme, VerifyError};

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    let Some(header) = ctx.header(HEADER) else {
        return Ok(Outcome::missing(
            Scheme::Shopify,
            &[HEADER],
            "Shopify sends the base64 HMAC-SHA256 of the body there.",
        ));
    };
    let value = value_text(header);
    let signed = Signed {
        prefix: Vec::new(),
        body: &ctx.req.body,
    };
    let trusted = decode_signature(&value).into_iter().collect();
    let check = HmacCheck {
        // Hex digits are also base64 characters, so a hex digest decodes as (wrong) base64 too;
        // it is recognised here only to explain the mismatch.
        mislabeled: decode_hex(&value)
            .map(|digest| {
                Alt::new(
                    format!(
                        "{} carries the right HMAC but hex-encoded; Shopify sends base64 and its \
                         check compares base64, so it fails",
                        header.name
                    ),
                    digest,
                )
            })
            .into_iter()
            .collect(),
        ..HmacCheck::text_key(Algo::Sha256, ctx.secret, signed.clone(), trusted)
    };
    let matched = check.matching_entry().map(|_| "the base64 HMAC".to_owned());
    let hint = match matched {
        Some(_) => None,
        None => check.explain(),
    };
    Ok(Finding {
        scheme: Scheme::Shopify,
        matched,
        hint,
        method: "HMAC-SHA256 with the client secret as text".to_owned(),
        signed: describe_signed(&signed),
        freshness: None,
        header: header.name.clone(),
    }
    .into_outcome())
}
