//! The `headers` column: ordered (name, value) pairs as one BLOB.
//!
//! Layout, repeated per header: name length (u32 LE), name bytes, value length (u32 LE), value
//! bytes. Bytes, not JSON, because a header value may legally contain bytes that are not UTF-8,
//! and order and duplicates must survive exactly.

use crate::model::{HeaderPair, header_lines};

pub fn encode(headers: &[HeaderPair]) -> Vec<u8> {
    header_lines::encode(
        || {
            headers
                .iter()
                .map(|h| (h.name.as_bytes(), h.value.as_slice()))
        },
        0,
    )
}

/// `None` when the blob is not in the layout above (a damaged database).
pub fn decode(mut blob: &[u8]) -> Option<Vec<HeaderPair>> {
    let mut headers = Vec::new();
    while !blob.is_empty() {
        let (name, value) = header_lines::next(&mut blob)?;
        let name = String::from_utf8(name.to_vec()).ok()?;
        headers.push(HeaderPair {
            name,
            value: value.to_vec(),
        });
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
