//! Standard Webhooks (v1 HMAC-SHA256, v1a Ed25519) and Svix, which is the same algorithm under
//! `svix-*` header names.
//!
//! Signed bytes: `{id}.{timestamp}.{body}`, id and timestamp exactly as sent. The signature
//! header is a space-separated list of `version,base64` entries; any trusted entry may match
//! (secret rotation). Which entries are trusted depends on the key the user gave: a `whsec_`
//! secret checks only `v1` entries (the reference library skips every other version), a `whpk_`
//! public key checks only `v1a` entries.

use ed25519_dalek::VerifyingKey;

use super::{Context, Finding, HmacCheck, Outcome, describe_signed, entry_note, value_bytes};
use crate::signing::crypto::{Algo, ed25519_verifies};
use crate::signing::keys::{self, StandardKey};
use crate::signing::standard::{
    Entry, Names, SVIX, V1, V1A, WEBHOOK, parse_entries, signed_prefix,
};
use crate::verify::diagnose::{Alt, Signed, explain_signed_bytes};
use crate::verify::{Scheme, VerifyError, text};

pub(super) fn verify(ctx: &Context<'_>, scheme: Scheme) -> Result<Outcome, VerifyError> {
    let key = keys::standard_webhooks(ctx.secret, scheme.name())?;
    let names = header_names(ctx, scheme);
    let (Some(id), Some(timestamp), Some(signature)) = (
        ctx.header(names.id),
        ctx.header(names.timestamp),
        ctx.header(names.signature),
    ) else {
        return Ok(missing(ctx, scheme, names));
    };
    let ts = match super::timestamp_of(scheme, timestamp) {
        Ok(ts) => ts,
        Err(outcome) => return Ok(outcome),
    };
    let signed = Signed {
        prefix: signed_prefix(value_bytes(id), value_bytes(timestamp)),
        body: &ctx.req.body,
    };
    // HTTP treats repeated list headers as one list: read the entries of every one.
    let entries: Vec<Entry> = ctx
        .headers_named(names.signature)
        .flat_map(|h| parse_entries(&super::value_text(h)))
        .collect();
    let found = Found {
        scheme,
        names,
        signed: &signed,
        timestamp: value_bytes(timestamp),
        entries: &entries,
        header: signature.name.clone(),
    };
    let mut finding = match key {
        StandardKey::Hmac(key) => found.check_hmac(key, ctx.secret),
        StandardKey::Public(key) => found.check_ed25519(&key),
        StandardKey::Secret(key) => found.check_ed25519(&key.verifying_key()),
    };
    finding.freshness = Some(ctx.freshness(scheme, ts));
    Ok(finding.into_outcome())
}

/// Svix's libraries accept the `webhook-*` names too (white-label accounts get those), so a
/// request without any `svix-*` header is read under the `webhook-*` names.
fn header_names(ctx: &Context<'_>, scheme: Scheme) -> &'static Names {
    let has_any = |names: &Names| names.all().iter().any(|n| ctx.header(n).is_some());
    match scheme {
        Scheme::Svix if !has_any(&SVIX) && has_any(&WEBHOOK) => &WEBHOOK,
        Scheme::Svix => &SVIX,
        _ => &WEBHOOK,
    }
}

fn missing(ctx: &Context<'_>, scheme: Scheme, names: &Names) -> Outcome {
    let absent: Vec<&str> = names
        .all()
        .into_iter()
        .filter(|n| ctx.header(n).is_none())
        .collect();
    let mut needs = format!(
        "{} signs {}.{}.body and sends the signature in {}.",
        scheme.label(),
        names.id,
        names.timestamp,
        names.signature
    );
    if scheme == Scheme::StandardWebhooks && SVIX.all().iter().any(|n| ctx.header(n).is_some()) {
        needs.push_str(" This request carries svix-* headers: check it with scheme svix.");
    }
    Outcome::missing(scheme, &absent, &needs)
}

/// The parsed request, shared by the v1 and v1a checks.
struct Found<'a> {
    scheme: Scheme,
    names: &'static Names,
    signed: &'a Signed<'a>,
    /// The timestamp header's value as sent.
    timestamp: &'a [u8],
    entries: &'a [Entry],
    header: String,
}

impl Found<'_> {
    /// Decoded signatures of the entries labelled `version`.
    fn signatures(&self, version: &str) -> Vec<Vec<u8>> {
        self.entries
            .iter()
            .filter(|e| e.version == version)
            .filter_map(|e| e.signature.clone())
            .collect()
    }

    /// "the header has no v1 entries (versions present: v2)".
    fn no_entries(&self, version: &str) -> String {
        let mut present: Vec<String> = Vec::new();
        for entry in self.entries {
            if !present.contains(&entry.version) {
                present.push(text::shorten(&entry.version, 20));
            }
        }
        if present.is_empty() {
            format!("{} has no version,signature entries", self.header)
        } else {
            format!(
                "{} has no {version} entries (versions present: {})",
                self.header,
                text::and_list(&present)
            )
        }
    }

    fn finding(&self, matched: Option<String>, hint: Option<String>, method: &str) -> Finding {
        Finding {
            scheme: self.scheme,
            matched,
            hint,
            method: method.to_owned(),
            signed: format!(
                "{}.{}.body = {}",
                self.names.id,
                self.names.timestamp,
                describe_signed(self.signed)
            ),
            freshness: None,
            header: self.header.clone(),
        }
    }

    /// v1: HMAC-SHA256 with the decoded `whsec_` key.
    fn check_hmac(&self, key: Vec<u8>, secret: &str) -> Finding {
        let trusted = self.signatures(V1);
        let check = HmacCheck {
            algo: Algo::Sha256,
            key,
            signed: self.signed.clone(),
            mislabeled: self.mislabeled_entries(),
            formats: self.formats(),
            keys: crate::verify::keys::alternatives_to_whsec_key(secret),
            trusted,
        };
        let matched = check
            .matching_entry()
            .map(|i| entry_note(V1, i, check.trusted.len()));
        let hint = match matched {
            Some(_) => None,
            None => check
                .explain()
                .or_else(|| check.trusted.is_empty().then(|| self.no_entries(V1))),
        };
        self.finding(
            matched,
            hint,
            "HMAC-SHA256 (v1) with the base64-decoded whsec_ key",
        )
    }

    /// Entries under another version label that may carry the right HMAC.
    fn mislabeled_entries(&self) -> Vec<Alt> {
        self.entries
            .iter()
            .filter(|e| e.version != V1)
            .filter_map(|e| {
                let hint = format!(
                    "an entry labelled {:?} carries the matching signature, but only v1 entries \
                     are HMAC signatures (the reference library skips every other version)",
                    text::shorten(&e.version, 20)
                );
                Some(Alt::new(hint, e.signature.clone()?))
            })
            .collect()
    }

    /// Other layouts of the signed bytes that senders get wrong.
    fn formats(&self) -> Vec<Alt> {
        let timestamp_dot = [self.timestamp, b"."].concat();
        vec![
            Alt::new(
                format!(
                    "signature is over the body without the id and timestamp (it must cover \
                     {}.{}.body)",
                    self.names.id, self.names.timestamp
                ),
                Vec::new(),
            ),
            Alt::new(
                format!(
                    "signature is over timestamp.body without the message id (it must cover \
                     {}.{}.body)",
                    self.names.id, self.names.timestamp
                ),
                timestamp_dot,
            ),
        ]
    }

    /// v1a: Ed25519 with the `whpk_` public key.
    fn check_ed25519(&self, key: &VerifyingKey) -> Finding {
        let trusted = self.signatures(V1A);
        let verifies = |parts: &[&[u8]]| {
            let message = parts.concat();
            trusted.iter().any(|s| ed25519_verifies(key, &message, s))
        };
        let message = self.signed.parts().concat();
        let matched = trusted
            .iter()
            .position(|s| ed25519_verifies(key, &message, s))
            .map(|i| entry_note(V1A, i, trusted.len()));
        let hint = match matched {
            Some(_) => None,
            None if trusted.is_empty() => Some(format!(
                "{}; a whpk_ public key checks only Ed25519 (v1a) signatures, v1 entries need \
                 the whsec_ secret",
                self.no_entries(V1A)
            )),
            None => explain_signed_bytes(self.signed, &self.formats(), verifies),
        };
        let skipped = self.entries.iter().filter(|e| e.version == V1).count();
        let mut method = "Ed25519 (v1a) with the whpk_ public key".to_owned();
        if skipped > 0 {
            let entries = if skipped == 1 { "entry" } else { "entries" };
            method.push_str(&format!(
                " ({skipped} v1 {entries} skipped: HMAC entries need the whsec_ secret)"
            ));
        }
        self.finding(matched, hint, &method)
    }
}
