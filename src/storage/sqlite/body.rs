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

/// Bodies up to this size are packed with the calling thread's [`Packer`]; larger ones (rare,
/// and their compression outweighs a table) get a table and buffer of their own, so that no
/// thread keeps a buffer the size of the largest body it ever saw.
const REUSED_UP_TO: usize = 64 * 1024;

/// What packing a body needs, kept per thread (the tokio workers that run captures) and reused:
/// `lz4_flex::block::compress` allocates and zeroes a fresh 8 KiB hash table for every body,
/// which was a third of a capture task's instructions (callgrind, bench/RESULTS.md).
struct Packer {
    /// The 16-bit table: only bodies under 64 KiB come here, so it never grows.
    table: lz4_flex::block::CompressTable,
    /// Room for the packed form of any body up to `REUSED_UP_TO`.
    out: Vec<u8>,
}

thread_local! {
    static PACKER: std::cell::RefCell<Packer> = std::cell::RefCell::new(Packer {
        table: lz4_flex::block::CompressTable::small(),
        out: vec![0; lz4_flex::block::get_maximum_output_size(REUSED_UP_TO)],
    });
}

/// The packed form of a body worth packing, `None` to store it raw. A truncated body is never
/// packed: its `body_size` is the full size, not the length of what is stored. The form is one
/// LZ4 block whatever produced it, so rows packed by older versions unpack the same way.
pub fn pack(body: &[u8], truncated: bool) -> Option<Vec<u8>> {
    if truncated || body.len() < MIN_LEN {
        return None;
    }
    let worth = |len: usize| len <= body.len() - body.len() / 8;
    if body.len() > REUSED_UP_TO {
        let packed = lz4_flex::block::compress(body);
        return worth(packed.len()).then_some(packed);
    }
    PACKER.with_borrow_mut(|p| {
        // Cannot fail: `out` has room for the worst case of a body this size.
        let len = lz4_flex::block::compress_into_with_table(body, &mut p.out, &mut p.table).ok()?;
        worth(len).then(|| p.out[..len].to_vec())
    })
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

    /// A row packed by lz4_flex 0.11 (hookbin before the per-thread table): the stored form is
    /// a plain LZ4 block, and rows already in a database must still read back.
    #[test]
    fn bodies_packed_by_earlier_versions_unpack() {
        let body: &[u8] = br#"{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1","amount_due":4200,"amount_paid":4200,"currency":"usd","customer":"cus_42","lines":[{"amount":4200,"currency":"usd"},{"amount":4200,"currency":"usd"}]}}}"#;
        let old = "f0247b226964223a226576745f31222c2274797065223a22696e766f6963652e70616964222c\
                   2264617461223a7b226f626a6563740a0001350021696e3400f501616d6f756e745f64756522\
                   3a343230301200013e00031300d063757272656e6379223a2275735400f30e637573746f6d65\
                   72223a226375735f3432222c226c696e6573223a5b7b54000450000b3d002f7d2c21000b6022\
                   7d5d7d7d7d";
        let old: Vec<u8> = (0..old.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&old[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(unpack(LZ4, old, body.len() as u64).unwrap(), body);
        // And what this version packs reads back too.
        let packed = pack(body, false).expect("the event is packed");
        assert_eq!(unpack(LZ4, packed, body.len() as u64).unwrap(), body);
    }

    /// The reused table and buffer carry nothing from one body to the next, and bodies past
    /// the reused buffer's size take the other path.
    #[test]
    fn packing_many_bodies_on_one_thread_keeps_each_exact() {
        let mut bodies: Vec<Vec<u8>> = (0..20u32)
            .map(|n| {
                format!(
                    r#"{{"n":{n},"pad":"{}"}}"#,
                    "ab".repeat(100 + n as usize * 37)
                )
                .into_bytes()
            })
            .collect();
        bodies.push(b"0123456789".repeat(REUSED_UP_TO / 10 + 7));
        bodies.push(b"short again, but long enough to be packed; ".repeat(4));
        for body in &bodies {
            let packed = pack(body, false).expect("a repetitive body is packed");
            assert_eq!(unpack(LZ4, packed, body.len() as u64).unwrap(), *body);
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
