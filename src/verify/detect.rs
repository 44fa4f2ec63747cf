//! Telling the scheme from the headers, for requests verified without a `scheme`.
//!
//! Signature headers are looked for first, in a fixed order, then the companion headers
//! (timestamps, ids), so that a request missing its signature header is still recognised and
//! answered with "header ... is missing" rather than "unknown scheme". Names are compared
//! without regard to case.

use super::Scheme;
use crate::model::HeaderPair;

/// Headers that identify a scheme, strongest evidence first.
const MARKERS: [(&str, Scheme); 15] = [
    ("Stripe-Signature", Scheme::Stripe),
    ("X-Hub-Signature-256", Scheme::Github),
    ("X-Hub-Signature", Scheme::Github),
    ("X-Slack-Signature", Scheme::Slack),
    ("X-Shopify-Hmac-Sha256", Scheme::Shopify),
    ("X-Twilio-Signature", Scheme::Twilio),
    ("X-BOTIX-Signature", Scheme::Botix),
    ("svix-signature", Scheme::Svix),
    ("webhook-signature", Scheme::StandardWebhooks),
    ("X-Slack-Request-Timestamp", Scheme::Slack),
    ("X-BOTIX-Timestamp", Scheme::Botix),
    ("svix-id", Scheme::Svix),
    ("svix-timestamp", Scheme::Svix),
    ("webhook-id", Scheme::StandardWebhooks),
    ("webhook-timestamp", Scheme::StandardWebhooks),
];

/// The signature headers of the known schemes, for the "nothing found" message.
pub(crate) const SIGNATURE_HEADERS: [&str; 9] = [
    "Stripe-Signature",
    "X-Hub-Signature-256",
    "X-Hub-Signature",
    "X-Slack-Signature",
    "X-Shopify-Hmac-Sha256",
    "X-Twilio-Signature",
    "X-BOTIX-Signature",
    "svix-signature",
    "webhook-signature",
];

/// A detected scheme and the header that gave it away, spelled as the sender sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Detected {
    pub scheme: Scheme,
    pub header: String,
}

/// The scheme whose headers the request carries, if any.
pub(crate) fn detect(headers: &[HeaderPair]) -> Option<Detected> {
    MARKERS.iter().find_map(|(name, scheme)| {
        headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| Detected {
                scheme: *scheme,
                header: h.name.clone(),
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detected(names: &[&str]) -> Option<Scheme> {
        let headers: Vec<HeaderPair> = names.iter().map(|n| HeaderPair::new(*n, "x")).collect();
        detect(&headers).map(|d| d.scheme)
    }

    #[test]
    fn signature_headers_identify_their_scheme_in_any_case() {
        assert_eq!(detected(&["stripe-signature"]), Some(Scheme::Stripe));
        assert_eq!(detected(&["X-HUB-SIGNATURE-256"]), Some(Scheme::Github));
        assert_eq!(detected(&["x-hub-signature"]), Some(Scheme::Github));
        assert_eq!(detected(&["X-Shopify-Hmac-SHA256"]), Some(Scheme::Shopify));
        assert_eq!(detected(&["x-twilio-signature"]), Some(Scheme::Twilio));
        assert_eq!(detected(&["X-Botix-Signature"]), Some(Scheme::Botix));
        assert_eq!(detected(&["Svix-Signature"]), Some(Scheme::Svix));
        assert_eq!(
            detected(&["Webhook-Signature"]),
            Some(Scheme::StandardWebhooks)
        );
    }

    #[test]
    fn companion_headers_identify_a_request_missing_its_signature() {
        assert_eq!(
            detected(&["X-Slack-Request-Timestamp"]),
            Some(Scheme::Slack)
        );
        assert_eq!(detected(&["svix-id"]), Some(Scheme::Svix));
        assert_eq!(
            detected(&["webhook-timestamp"]),
            Some(Scheme::StandardWebhooks)
        );
        assert_eq!(detected(&["Content-Type", "User-Agent"]), None);
    }

    #[test]
    fn a_signature_header_outranks_companion_headers() {
        assert_eq!(
            detected(&["webhook-id", "webhook-timestamp", "Stripe-Signature"]),
            Some(Scheme::Stripe)
        );
        assert_eq!(
            detected(&["svix-id", "webhook-signature"]),
            Some(Scheme::StandardWebhooks)
        );
    }

    #[test]
    fn reports_the_header_as_spelled() {
        let headers = [HeaderPair::new("x-HUB-signature-256", "sha256=00")];
        assert_eq!(detect(&headers).unwrap().header, "x-HUB-signature-256");
    }
}
