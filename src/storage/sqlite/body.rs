//! Bodies stored compressed: the `body_codec` column says how `body` holds the bytes.
//!
//! Under load the writer's cost follows the pages it writes, and a 1 KiB JSON body was 3/4 of a
//! row: three rows filled a 4 KiB page. LZ4 (block format) packs a body in about a microsecond,
//! on the capture's own task rather than on the writer, and gives the exact bytes back. A body is
//! stored packed only when that saves at least an eighth of it; otherwise, and for truncated
//! bodies, it stays raw. So `body_size` is always the length of a packed body once unpacked, and
//! `--max-bin-bytes` keeps counting the bytes that were received, whatever their stored form.

/// `body` holds the bytes as received.
pub const RAW: i64 = 0;
/// `body` is one LZ4 block; unpacked, it is `body_size` bytes.
pub const LZ4: i64 = 1;

/// Shorter bodies gain too little to be worth a codec.
const MIN_LEN: usize = 128;

/// The packed form of a body worth packing, `None` to store it raw. A truncated body is never
/// packed: its `body_size` is the full size, not the length of what is stored.
pub fn pack(body: &[u8], truncated: bool) -> Option<Vec<u8>> {
    if truncated || body.len() < MIN_LEN {
        return None;
    }
    let packed = lz4_flex::block::compress(body);
    (packed.len() <= body.len() - body.len() / 8).then_some(packed)
}

/// The body as received, from its stored form; `None` when the stored bytes are not what
/// `codec` says (a damaged row, or a codec this hookbin does not know).
pub fn unpack(codec: i64, stored: Vec<u8>, size: u64) -> Option<Vec<u8>> {
    match codec {
        RAW => Some(stored),
        LZ4 => {
            let size = usize::try_from(size).ok()?;
            let body = lz4_flex::block::decompress(&stored, size).ok()?;
            (body.len() == size).then_some(body)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_bodies_unpack_to_the_exact_bytes() {
        let json = format!(r#"{{"type":"invoice.paid","note":"{}"}}"#, "x".repeat(900));
        let mut binary: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        binary.extend_from_slice(&[0, 0xff, b'\r', b'\n']);
        for body in [json.as_bytes(), &binary] {
            let packed = pack(body, false).expect("a repetitive body is packed");
            assert!(
                packed.len() < body.len() / 2,
                "{} -> {}",
                body.len(),
                packed.len()
            );
            assert_eq!(unpack(LZ4, packed, body.len() as u64).unwrap(), body);
        }
    }

    #[test]
    fn short_incompressible_and_truncated_bodies_stay_raw() {
        assert_eq!(pack(b"{}", false), None);
        // Bytes without repeats do not shrink by an eighth.
        let mut x = 0x2545_f491_u32;
        let noise: Vec<u8> = (0..1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        assert_eq!(pack(&noise, false), None);
        assert_eq!(pack(&[b'x'; 4096], true), None);
        assert_eq!(unpack(RAW, b"as is".to_vec(), 99).unwrap(), b"as is");
    }

    #[test]
    fn damaged_or_unknown_stored_bodies_are_refused() {
        let packed = pack(&[b'a'; 1000], false).unwrap();
        // A size that does not match what the block holds.
        assert_eq!(unpack(LZ4, packed.clone(), 999), None);
        assert_eq!(unpack(LZ4, packed[..packed.len() - 1].to_vec(), 1000), None);
        assert_eq!(unpack(LZ4, b"\xff\xff\xff".to_vec(), 1000), None);
        assert_eq!(unpack(7, packed, 1000), None);
    }
}
