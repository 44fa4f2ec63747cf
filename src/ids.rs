//! Identifiers: unguessable bin ids, request ids, and list cursors.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::TryRng as _;
use rand::rngs::SysRng;

/// Characters at the front of a new bin id that say when it was made (see [`new_bin_id`]).
const TIME_CHARS: usize = 5;
/// Random characters after them: 17 * log2(36) ≈ 87.9 bits (API.md asks for at least 80).
const RANDOM_CHARS: usize = 17;
/// Length of a new bin id.
pub const BIN_ID_LEN: usize = TIME_CHARS + RANDOM_CHARS;
const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// A fresh bin id: the second it was made, then random characters from the operating system's
/// CSPRNG.
///
/// The time goes first so that bins made close together sort close together. Every table keyed
/// by a bin id (`bins`, the requests' index `(bin_id, slot)`, `bin_responses`) then keeps the bins
/// in use, the recent ones, on a few adjacent pages, instead of spread over all of them: each
/// capture updates its bin's row, and with random ids a commit of captures to a dozen bins wrote
/// a page of `bins` for almost each of them, more as the table grew (bench/RESULTS.md,
/// 2026-12-04 19:00). The time is public (whoever has the URL learns when the bin was made); the
/// random part alone is what makes the id unguessable.
pub fn new_bin_id() -> String {
    new_bin_id_at(u64::try_from(crate::clock::now_ms() / 1000).unwrap_or(0))
}

/// [`new_bin_id`] made at `secs` since the Unix epoch. The time is written in base 36, modulo
/// 36^5 seconds (about 699 days): at the wrap new ids sort before old ones for a while, which only
/// costs locality.
fn new_bin_id_at(secs: u64) -> String {
    let mut id = String::with_capacity(BIN_ID_LEN);
    let mut t = secs % 36u64.pow(TIME_CHARS as u32);
    let mut time = [0u8; TIME_CHARS];
    for c in time.iter_mut().rev() {
        *c = ALPHABET[(t % 36) as usize];
        t /= 36;
    }
    id.extend(time.iter().map(|&c| c as char));
    let mut buf = [0u8; 32];
    // Bytes of 252 and above are rejected so that `byte % 36` is uniform (252 = 7 * 36).
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

/// A private bin's view token: 32 bytes from the operating system's CSPRNG, base64url (43
/// characters), and the SHA-256 that is stored in its place.
pub fn new_view_token() -> (String, [u8; 32]) {
    let mut bytes = [0u8; 32];
    SysRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random number generator failed");
    let token = URL_SAFE_NO_PAD.encode(bytes);
    let hash = hash_view_token(&token);
    (token, hash)
}

/// What is stored of a view token, and what a presented one is compared by.
pub fn hash_view_token(token: &str) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(token.as_bytes()).into()
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

/// A bin id that passed [`BinId::parse`] (or a fresh [`BinId::new`]): the handlers parse the
/// path once, and everything past them (the use cases in `bins`, capture) takes this type, never
/// a bare string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BinId(String);

impl BinId {
    /// A fresh, unguessable bin id ([`new_bin_id`]).
    #[allow(clippy::new_without_default)] // a default would hide the randomness
    pub fn new() -> Self {
        Self(new_bin_id())
    }

    /// `s` if it can be a bin id at all ([`is_valid_bin_id`]); whether the bin exists is the
    /// store's business.
    pub fn parse(s: &str) -> Option<Self> {
        is_valid_bin_id(s).then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for BinId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for BinId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A request id: the row id the writer assigned (unique, increasing with arrival). Written as
/// its decimal text in URLs, JSON and headers, and parsed from it once ([`RequestId::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(i64);

impl RequestId {
    /// The id of a capture not committed yet: the writer assigns the real one.
    pub const PENDING: RequestId = RequestId(0);

    /// A request id as issued (`"42"`), see [`parse_request_id`].
    pub fn parse(s: &str) -> Option<Self> {
        parse_request_id(s).map(Self)
    }

    /// The id of a stored row, as the database numbers it.
    pub fn from_row(id: i64) -> Self {
        Self(id)
    }

    /// The row id, for the database and for arithmetic (stream and export positions).
    pub fn get(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// As the API has always written it: a JSON string (`"42"`), opaque to clients.
impl serde::Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const CURSOR_PREFIX: &str = "before:";

/// An opaque cursor for "requests older than `id`".
pub fn encode_cursor(id: RequestId) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{id}"))
}

/// The request id inside a cursor this server issued, or `None` for anything else.
pub fn decode_cursor(cursor: &str) -> Option<RequestId> {
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&raw).ok()?;
    RequestId::parse(text.strip_prefix(CURSOR_PREFIX)?)
}

/// A cursor for "requests older than `id` that match `q`": the query's fingerprint rides
/// along, so a cursor handed out for one `q` is refused with another (it would skip requests
/// silently). Without a query it is the plain [`encode_cursor`].
pub fn encode_search_cursor(id: RequestId, q: &str) -> String {
    if q.is_empty() {
        return encode_cursor(id);
    }
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{id};q={:016x}", fingerprint(q)))
}

/// The request id inside a cursor issued for `q` by [`encode_search_cursor`]; `None` for a
/// forgery or a cursor of another query.
pub fn decode_search_cursor(cursor: &str, q: &str) -> Option<RequestId> {
    if q.is_empty() {
        return decode_cursor(cursor);
    }
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&raw).ok()?;
    let (id, print) = text.strip_prefix(CURSOR_PREFIX)?.split_once(";q=")?;
    (print == format!("{:016x}", fingerprint(q)))
        .then(|| RequestId::parse(id))
        .flatten()
}

/// FNV-1a over the query text: stable across builds and processes (std's hasher is not),
/// and a cursor is no secret, so no keyed hash is needed.
fn fingerprint(q: &str) -> u64 {
    q.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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
        for _ in 0..2353 {
            for b in new_bin_id().bytes().skip(TIME_CHARS) {
                counts[ALPHABET.iter().position(|&a| a == b).unwrap()] += 1;
            }
        }
        // 40_001 draws of the random part: about 1111 per symbol; a biased generator would be
        // far off.
        for (i, &c) in counts.iter().enumerate() {
            assert!((850..1400).contains(&c), "symbol {i} drawn {c} times");
        }
    }

    #[test]
    fn bin_ids_sort_by_the_second_they_were_made() {
        let at = 1_796_000_000; // 2026-11-30
        let ids: Vec<String> = [at, at, at + 1, at + 59, at + 3600, at + 86_400 * 30]
            .iter()
            .map(|&s| new_bin_id_at(s))
            .collect();
        for pair in ids.windows(2) {
            let (a, b) = (&pair[0][..TIME_CHARS], &pair[1][..TIME_CHARS]);
            assert!(a <= b, "{} then {}", pair[0], pair[1]);
        }
        assert_eq!(ids[0][..TIME_CHARS], ids[1][..TIME_CHARS]);
        assert_ne!(ids[0], ids[1], "the random part differs");
        for id in &ids {
            assert_eq!(id.len(), BIN_ID_LEN);
            assert!(is_valid_bin_id(id), "{id}");
        }
        // Base 36, most significant first, modulo 36^5 seconds.
        assert!(new_bin_id_at(0).starts_with("00000"));
        assert!(new_bin_id_at(36 * 36 + 35).starts_with("0010z"));
        assert!(new_bin_id_at(36u64.pow(5) + 1).starts_with("00001"));
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
    fn typed_ids_parse_once_and_print_as_issued() {
        let bin = BinId::parse("0123456789abcdefghij").unwrap();
        assert_eq!(bin.to_string(), "0123456789abcdefghij");
        assert_eq!(BinId::parse("Not-A-Bin"), None);
        assert!(is_valid_bin_id(BinId::new().as_str()));
        assert_eq!(RequestId::parse("42").map(RequestId::get), Some(42));
        assert_eq!(RequestId::parse("42").unwrap().to_string(), "42");
        assert_eq!(RequestId::parse("042"), None);
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
        let id = RequestId::from_row(1234);
        assert_eq!(decode_cursor(&encode_cursor(id)), Some(id));
        assert_eq!(decode_cursor("1234"), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("after:5")), None);
        assert_eq!(decode_cursor("!!!"), None);
    }

    #[test]
    fn search_cursors_belong_to_their_query() {
        let c = encode_search_cursor(RequestId(77), "method:post body:paid");
        assert_eq!(
            decode_search_cursor(&c, "method:post body:paid"),
            Some(RequestId(77))
        );
        assert_eq!(decode_search_cursor(&c, "method:post"), None);
        assert_eq!(decode_search_cursor(&c, ""), None);
        assert_eq!(decode_cursor(&c), None);
        // Without a query the cursor is the list's own.
        assert_eq!(
            encode_search_cursor(RequestId(5), ""),
            encode_cursor(RequestId(5))
        );
        assert_eq!(
            decode_search_cursor(&encode_cursor(RequestId(5)), "x"),
            None
        );
    }
}
