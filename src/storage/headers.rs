//! The `headers` column: ordered (name, value) pairs as one BLOB.
//!
//! Layout, repeated per header: name length (u32 LE), name bytes, value length (u32 LE), value
//! bytes. Bytes, not JSON, because a header value may legally contain bytes that are not UTF-8,
//! and order and duplicates must survive exactly.

use crate::model::HeaderPair;

pub fn encode(headers: &[HeaderPair]) -> Vec<u8> {
    let size = headers
        .iter()
        .map(|h| 8 + h.name.len() + h.value.len())
        .sum();
    let mut out = Vec::with_capacity(size);
    for h in headers {
        out.extend_from_slice(&(h.name.len() as u32).to_le_bytes());
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(&(h.value.len() as u32).to_le_bytes());
        out.extend_from_slice(&h.value);
    }
    out
}

/// `None` when the blob is not in the layout above (a damaged database).
pub fn decode(mut blob: &[u8]) -> Option<Vec<HeaderPair>> {
    fn take<'a>(blob: &mut &'a [u8]) -> Option<&'a [u8]> {
        let (len, rest) = blob.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return None;
        }
        let (field, rest) = rest.split_at(len);
        *blob = rest;
        Some(field)
    }
    let mut headers = Vec::new();
    while !blob.is_empty() {
        let name = String::from_utf8(take(&mut blob)?.to_vec()).ok()?;
        let value = take(&mut blob)?.to_vec();
        headers.push(HeaderPair { name, value });
    }
    Some(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_order_duplicates_and_bytes() {
        let headers = vec![
            HeaderPair::new("X-A", b"1".to_vec()),
            HeaderPair::new("x-a", b"".to_vec()),
            HeaderPair::new("Bin", vec![0xff, 0x00, b'\n']),
        ];
        assert_eq!(decode(&encode(&headers)).unwrap(), headers);
        assert_eq!(decode(&[]).unwrap(), vec![]);
        assert!(decode(&[5, 0, 0, 0, b'a']).is_none());
    }
}
