//! The scheme names the API and the CLI accept, and the per-scheme facts both the verifier and
//! the signer need: whether a timestamp is signed, and on which side of "now" it may be off.

/// Which side of "now" a scheme's replay tolerance applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Reject `ts < now - tolerance` and `ts > now + tolerance`.
    BothWays,
    /// Reject only `ts < now - tolerance`. Stripe's official libraries accept any future
    /// timestamp (stripe-python `verify_header`), and the vector file's verdict for
    /// `stripe-valid-future-timestamp-library-behaviour` is "valid". The verifier follows the
    /// library so it answers what the user's Stripe SDK will answer; `hookbin probe` does not
    /// expect a Stripe receiver to reject a future timestamp.
    PastOnly,
}

/// A signature scheme hookbin can check and sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// v1 (HMAC with a `whsec_` secret) or v1a (Ed25519 with a `whpk_` public key).
    StandardWebhooks,
    Svix,
    Stripe,
    Github,
    Slack,
    Shopify,
    Twilio,
    Botix,
    /// Generic: an HMAC-SHA256 of the raw body in any header, hex or base64.
    HmacSha256,
}

impl Scheme {
    /// Every scheme, in the order the API documents them.
    pub const ALL: [Scheme; 9] = [
        Scheme::StandardWebhooks,
        Scheme::Svix,
        Scheme::Stripe,
        Scheme::Github,
        Scheme::Slack,
        Scheme::Shopify,
        Scheme::Twilio,
        Scheme::Botix,
        Scheme::HmacSha256,
    ];

    /// The canonical names, as API.md lists them.
    pub const NAMES: [&'static str; 9] = [
        "standard-webhooks",
        "svix",
        "stripe",
        "github",
        "slack",
        "shopify",
        "twilio",
        "botix",
        "hmac-sha256",
    ];

    /// The canonical name, as it appears in the `scheme` field of a verification and in `--scheme`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::StandardWebhooks => "standard-webhooks",
            Scheme::Svix => "svix",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Slack => "slack",
            Scheme::Shopify => "shopify",
            Scheme::Twilio => "twilio",
            Scheme::Botix => "botix",
            Scheme::HmacSha256 => "hmac-sha256",
        }
    }

    /// Parses a scheme name, ignoring ASCII case. `standard-webhooks-v1a` (the vector file's name
    /// for Ed25519 vectors) is an alias: the key type, not the name, picks v1 or v1a.
    pub fn from_name(name: &str) -> Option<Scheme> {
        if name.eq_ignore_ascii_case("standard-webhooks-v1a") {
            return Some(Scheme::StandardWebhooks);
        }
        Scheme::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// The replay window of a scheme that signs a timestamp; `None` when no timestamp is signed
    /// (GitHub, Shopify, Twilio, generic), so nothing limits a replay but the receiver's own
    /// bookkeeping of delivery ids.
    pub fn replay_window(self) -> Option<Window> {
        match self {
            Scheme::StandardWebhooks | Scheme::Svix | Scheme::Slack | Scheme::Botix => {
                Some(Window::BothWays)
            }
            Scheme::Stripe => Some(Window::PastOnly),
            Scheme::Github | Scheme::Shopify | Scheme::Twilio | Scheme::HmacSha256 => None,
        }
    }

    /// The provider's name for sentences.
    pub fn label(self) -> &'static str {
        match self {
            Scheme::StandardWebhooks => "Standard Webhooks",
            Scheme::Svix => "Svix",
            Scheme::Stripe => "Stripe",
            Scheme::Github => "GitHub",
            Scheme::Slack => "Slack",
            Scheme::Shopify => "Shopify",
            Scheme::Twilio => "Twilio",
            Scheme::Botix => "BOTIX",
            Scheme::HmacSha256 => "Generic HMAC-SHA256",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_the_documented_list() {
        for (scheme, name) in Scheme::ALL.into_iter().zip(Scheme::NAMES) {
            assert_eq!(scheme.name(), name);
            assert_eq!(Scheme::from_name(name), Some(scheme));
        }
    }

    #[test]
    fn v1a_is_an_alias_and_case_is_ignored() {
        assert_eq!(
            Scheme::from_name("standard-webhooks-v1a"),
            Some(Scheme::StandardWebhooks)
        );
        assert_eq!(Scheme::from_name("GitHub"), Some(Scheme::Github));
        assert_eq!(Scheme::from_name("paypal"), None);
    }
}
