//! Identifiers: unguessable bin ids, request ids, and list cursors.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::TryRng as _;
use rand::rngs::SysRng;

/// Length of a new bin id. 20 characters of `[0-9a-z]` carry 20 * log2(36) ≈ 103 bits.
pub const BIN_ID_LEN: usize = 20;
const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// A fresh bin id from the operating system's CSPRNG.
///
/// Bytes of 252 and above are rejected so that `byte % 36` is uniform (252 = 7 * 36).
pub fn new_bin_id() -> String {
    let mut id = String::with_capacity(BIN_ID_LEN);
    let mut buf = [0u8; 32];
    while id.len() < BIN_ID_LEN {
        SysRng
            .try_fill_bytes(&mut buf)
            .expect("the operating system's random number generator failed");
        for &b in buf.iter().filter(|&&b| b < 252) {
            if id.len() == BIN_ID_LEN {
                break;
            }
            id.push(ALPHABET[usize::from(b % 36)] as char);
        }
    }
    id
}

/// Whether `s` can be a bin id at all (cheap check before touching storage).
pub fn is_valid_bin_id(s: &str) -> bool {
    (16..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

/// Parses a request id as issued (`"42"`): a positive decimal row id without sign or zeros in front.
pub fn parse_request_id(s: &str) -> Option<i64> {
    if s.is_empty() || s.len() > 19 || s.starts_with('0') || !s.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    s.parse().ok().filter(|&n| n > 0)
}

const CURSOR_PREFIX: &str = "before:";

/// An opaque cursor for "requests older than `id`".
pub fn encode_cursor(id: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{id}"))
}

/// The request id inside a cursor this server issued, or `None` for anything else.
pub fn decode_cursor(cursor: &str) -> Option<i64> {
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&raw).ok()?;
    parse_request_id(text.strip_prefix(CURSOR_PREFIX)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_ids_are_long_lowercase_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..2000).map(|_| new_bin_id()).collect();
        assert_eq!(ids.len(), 2000);
        for id in &ids {
            assert_eq!(id.len(), BIN_ID_LEN);
            assert!(is_valid_bin_id(id), "{id}");
        }
    }

    #[test]
    fn bin_id_characters_are_roughly_uniform() {
        let mut counts = [0usize; 36];
        for _ in 0..2000 {
            for b in new_bin_id().bytes() {
                counts[ALPHABET.iter().position(|&a| a == b).unwrap()] += 1;
            }
        }
        // 40_000 draws: about 1111 per symbol; a biased generator would be far off.
        for (i, &c) in counts.iter().enumerate() {
            assert!((850..1400).contains(&c), "symbol {i} drawn {c} times");
        }
    }

    #[test]
    fn invalid_bin_ids() {
        for s in [
            "",
            "short",
            "UPPERCASE0123456789",
            "with-dash-0123456789",
            "ümlaut0123456789",
        ] {
            assert!(!is_valid_bin_id(s), "{s}");
        }
    }

    #[test]
    fn request_ids() {
        assert_eq!(parse_request_id("42"), Some(42));
        for s in ["", "0", "042", "-1", "+1", "1e3", "99999999999999999999"] {
            assert_eq!(parse_request_id(s), None, "{s}");
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_forgeries() {
        assert_eq!(decode_cursor(&encode_cursor(1234)), Some(1234));
        assert_eq!(decode_cursor("1234"), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("after:5")), None);
        assert_eq!(decode_cursor("!!!"), None);
    }
}
