//! Bodies made by the real `gzip`, `brotli` and `zstd` command-line tools at test time.

use std::io::Write;
use std::process::{Command, Stdio};

use super::*;

/// `input` piped through `sh -c script`, whose first word is the tool; its output. Outside CI a
/// missing tool skips the test with a loud message; under `CI=true` it fails the test.
fn made_by(script: &str, input: &[u8]) -> Option<Vec<u8>> {
    made_with(script.split_whitespace().next().unwrap(), script, input)
}

/// As [`made_by`], for a script that uses `tool` further along a pipeline.
fn made_with(tool: &str, script: &str, input: &[u8]) -> Option<Vec<u8>> {
    let present = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        let msg = format!("`{tool}` is not installed (apt-get install {tool})");
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("SKIPPED: {msg}");
        return None;
    }
    let mut child = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run sh");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A separate writer: the tool may fill its output pipe before it has read all its input.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("tool output");
    writer.join().unwrap().expect("write to the tool");
    assert!(out.status.success(), "{script} failed");
    Some(out.stdout)
}

fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    made_by("gzip -c -n", data)
}

fn brotli(data: &[u8]) -> Option<Vec<u8>> {
    made_by("brotli -c", data)
}

fn zstd(data: &[u8]) -> Option<Vec<u8>> {
    made_by("zstd -c -q", data)
}

/// Raw deflate as `gzip` makes it: its member without the 10-byte header (`-n` and stdin: no
/// name, no time) and the 8-byte trailer.
fn raw_deflate(data: &[u8]) -> Option<Vec<u8>> {
    let gz = gzip(data)?;
    assert_eq!(gz[3], 0, "no optional gzip fields");
    Some(gz[10..gz.len() - 8].to_vec())
}

/// The same deflate data wrapped as zlib (RFC 1950): header, data, Adler-32 of the content.
fn zlib(data: &[u8]) -> Option<Vec<u8>> {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    let mut out = vec![0x78, 0x9c];
    out.extend(raw_deflate(data)?);
    out.extend(((b << 16) | a).to_be_bytes());
    Some(out)
}

/// Text and binary content: every byte value, and some length.
fn sample() -> Vec<u8> {
    let mut data =
        b"{\"event\": \"invoice.paid\", \"note\": \"gr\xc3\xbc\xc3\x9fe\"}\n".repeat(200);
    data.extend((0..=255u8).cycle().take(70_000).map(|b| b.wrapping_mul(31)));
    data
}

const LIMIT: usize = 64 * 1024 * 1024;

fn complete(body: &[u8], encoding: &str) -> Vec<u8> {
    let d = decode(body, Some(encoding), LIMIT);
    assert_eq!(d.outcome, Outcome::Complete, "{encoding}");
    d.bytes.into_owned()
}

fn failure(body: &[u8], encoding: &str) -> DecodeError {
    match decode(body, Some(encoding), LIMIT).outcome {
        Outcome::Failed(e) => e,
        other => panic!("{encoding}: expected a failure, got {other:?}"),
    }
}

#[test]
fn each_coding_made_by_its_tool_is_undone() {
    let data = sample();
    let (Some(gz), Some(br), Some(zst), Some(raw), Some(z)) = (
        gzip(&data),
        brotli(&data),
        zstd(&data),
        raw_deflate(&data),
        zlib(&data),
    ) else {
        return;
    };
    assert_eq!(complete(&gz, "gzip"), data);
    assert_eq!(complete(&gz, "x-gzip"), data);
    assert_eq!(complete(&gz, " GZip "), data, "names in any case");
    assert_eq!(complete(&br, "br"), data);
    assert_eq!(complete(&zst, "zstd"), data);
    assert_eq!(
        complete(&z, "deflate"),
        data,
        "zlib-wrapped, as RFC 9110 says"
    );
    assert_eq!(complete(&raw, "deflate"), data, "raw, as some servers send");
    let d = decode(&br, Some("identity, br"), LIMIT);
    assert_eq!(d.codings, [Coding::Brotli]);
    assert!(d.was_encoded());
}

#[test]
fn chained_codings_are_undone_last_applied_first() {
    let data = sample();
    // `gzip, br`: gzip was applied first, then br (RFC 9110 §8.4).
    let Some(gz_br) = gzip(&data).and_then(|gz| brotli(&gz)) else {
        return;
    };
    let d = decode(&gz_br, Some("gzip, br"), LIMIT);
    assert_eq!(d.outcome, Outcome::Complete);
    assert_eq!(d.codings, [Coding::Gzip, Coding::Brotli]);
    assert_eq!(d.bytes, data);
    // The same as two header lines (joined by the caller) and with `identity` in between.
    assert_eq!(complete(&gz_br, "gzip,identity,  br"), data);
    // Three deep, with every kind of stage.
    let Some(three) = zlib(&data)
        .and_then(|z| zstd(&z))
        .and_then(|zz| made_by("gzip -c", &zz))
    else {
        return;
    };
    assert_eq!(complete(&three, "deflate, zstd, x-gzip"), data);
    // Raw deflate inside another coding: the zlib check sees bytes from the stage before.
    let Some(raw_br) = raw_deflate(&data).and_then(|r| brotli(&r)) else {
        return;
    };
    assert_eq!(complete(&raw_br, "deflate, br"), data);
    // Listed in the wrong order: br is tried on gzip bytes (the outermost coding fails).
    assert_eq!(failure(&gz_br, "br, gzip").coding, "gzip");
}

#[test]
fn errors_name_the_coding_that_failed() {
    let data = sample();
    let (Some(gz), Some(br), Some(zst)) = (gzip(&data), brotli(&data), zstd(&data)) else {
        return;
    };
    let junk = b"this is plain text, not compressed at all".as_slice();
    for coding in ["gzip", "x-gzip", "deflate", "br", "zstd"] {
        let e = failure(junk, coding);
        let named = if coding == "x-gzip" { "gzip" } else { coding };
        assert_eq!(e.coding, named, "{e}");
        assert!(e.to_string().starts_with(&format!("{named}: ")), "{e}");
    }
    assert!(
        failure(junk, "zstd").reason.contains("magic number"),
        "{}",
        failure(junk, "zstd")
    );
    let e = failure(&gz, "gzip, compress");
    assert_eq!(e.coding, "compress");
    assert!(
        e.reason.contains("gzip, x-gzip, deflate, br and zstd"),
        "{e}"
    );
    assert_eq!(failure(&gz, "x-foo").coding, "x-foo");

    // Damage inside the inner coding of a chain is named as the inner coding, even though the
    // outer decoder (br) is the one the caller reads from.
    let mut bad_gz = gz.clone();
    let mid = bad_gz.len() / 2;
    bad_gz[mid] ^= 0xff;
    bad_gz[mid + 1] ^= 0x55;
    let Some(wrapped) = brotli(&bad_gz) else {
        return;
    };
    assert_eq!(failure(&wrapped, "gzip, br").coding, "gzip");
    // And the other way round: damaged br around good gzip.
    let Some(mut gz_br) = brotli(&gz) else {
        return;
    };
    let mid = gz_br.len() / 2;
    gz_br.truncate(mid);
    assert_eq!(failure(&gz_br, "gzip, br").coding, "br");
    // A zstd frame whose checksum does not match.
    let mut bad = zst.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(failure(&bad, "zstd").reason.contains("checksum"));
    let _ = br;
}

#[test]
fn a_body_cut_at_capture_decodes_up_to_the_cut() {
    let data = sample();
    let (Some(gz), Some(br), Some(zst)) = (gzip(&data), brotli(&data), zstd(&data)) else {
        return;
    };
    for (body, coding) in [(gz, "gzip"), (br, "br"), (zst, "zstd")] {
        let cut = &body[..body.len() * 3 / 4];
        let d = decode(cut, Some(coding), LIMIT);
        let Outcome::Failed(e) = &d.outcome else {
            panic!("{coding}: {:?}", d.outcome)
        };
        assert_eq!(e.coding, coding);
        assert!(
            data.starts_with(&d.bytes),
            "{coding}: a prefix of the content"
        );
        // ruzstd hands out bytes only once they leave the window (2 MiB here) or the frame
        // ends, so a cut zstd body of this size gives nothing; gzip and br give their start.
        assert_eq!(d.bytes.is_empty(), coding == "zstd", "{coding}");
    }
}

#[test]
fn several_gzip_members_and_zstd_frames_are_one_body() {
    let (Some(mut gz), Some(gz2), Some(mut zst), Some(zst2)) = (
        gzip(b"first "),
        gzip(b"second"),
        zstd(b"first "),
        zstd(b"second"),
    ) else {
        return;
    };
    gz.extend(gz2);
    assert_eq!(complete(&gz, "gzip"), b"first second");
    // A skippable frame (RFC 8878 §3.1.2) between the two content frames.
    zst.extend(0x184D_2A53u32.to_le_bytes());
    zst.extend(5u32.to_le_bytes());
    zst.extend(b"skip!");
    zst.extend(zst2);
    assert_eq!(complete(&zst, "zstd"), b"first second");
    // Garbage after the last gzip member is damage, not more content.
    gz.extend(b"trailing junk");
    let d = decode(&gz, Some("gzip"), LIMIT);
    assert!(matches!(d.outcome, Outcome::Failed(_)), "{:?}", d.outcome);
    assert_eq!(&d.bytes[..], b"first second");
}

#[test]
fn zstd_windows_beyond_rfc_9659_are_refused() {
    let Some(long) = made_by("zstd -c -q --long=27", b"hello") else {
        return;
    };
    let e = failure(&long, "zstd");
    assert!(e.reason.contains("RFC 9659"), "{e}");
}

#[test]
fn nothing_to_undo_borrows_the_body() {
    let d = decode(b"plain", None, 3);
    assert_eq!(
        d.outcome,
        Outcome::Complete,
        "the limit is for decoding only"
    );
    assert!(matches!(d.bytes, Cow::Borrowed(b"plain")));
    assert!(!d.was_encoded());
    let d = decode(b"plain", Some("identity"), LIMIT);
    assert!(matches!(d.bytes, Cow::Borrowed(_)));
    assert!(!d.was_encoded());
    // A header on an empty body: nothing to decode, not an error.
    let d = decode(b"", Some("gzip"), LIMIT);
    assert_eq!(d.outcome, Outcome::Complete);
    assert!(d.bytes.is_empty());
    // An unknown coding: nothing decoded, and it says so.
    let d = decode(b"x", Some("compress"), LIMIT);
    assert!(d.was_encoded());
    assert!(d.bytes.is_empty());
}

#[test]
fn the_limit_is_exact() {
    let data = vec![b'a'; 10_000];
    let Some(gz) = gzip(&data) else {
        return;
    };
    assert_eq!(decode(&gz, Some("gzip"), 10_000).outcome, Outcome::Complete);
    let d = decode(&gz, Some("gzip"), 9_999);
    assert_eq!(d.outcome, Outcome::Cut { limit: 9_999 });
    assert_eq!(d.bytes.len(), 9_999);
}

/// 1 GiB of zeros, compressed by each tool (gzip as 16 members of 64 MiB: the same bytes as
/// one member would decode to, made in a sixteenth of the time), is cut at the limit.
#[test]
fn decompression_bombs_are_cut_at_the_limit() {
    const GIB: &str = "1073741824";
    let (Some(zst), Some(br), Some(gz64)) = (
        made_with(
            "zstd",
            &format!("head -c {GIB} /dev/zero | zstd -c -q"),
            b"",
        ),
        made_with(
            "brotli",
            &format!("head -c {GIB} /dev/zero | brotli -c -q 1"),
            b"",
        ),
        made_with("gzip", "head -c 67108864 /dev/zero | gzip -c -1", b""),
    ) else {
        return;
    };
    let gz = gz64.repeat(16);
    let limit = 1024 * 1024;
    for (body, coding) in [(&zst, "zstd"), (&br, "br"), (&gz, "gzip")] {
        assert!(body.len() < 5 * 1024 * 1024, "{coding}: a capturable body");
        let d = decode(body, Some(coding), limit);
        assert_eq!(d.outcome, Outcome::Cut { limit }, "{coding}");
        assert_eq!(d.bytes.len(), limit);
        assert!(d.bytes.iter().all(|&b| b == 0));
    }
}

#[test]
fn coding_names() {
    assert_eq!(
        parse_codings("gzip, x-gzip, deflate, br, zstd, identity").unwrap(),
        [
            Coding::Gzip,
            Coding::Gzip,
            Coding::Deflate,
            Coding::Brotli,
            Coding::Zstd
        ]
    );
    assert_eq!(parse_codings("").unwrap(), []);
    assert_eq!(Coding::Brotli.to_string(), "br");
    assert_eq!(parse_codings("gzip, lzma").unwrap_err().coding, "lzma");
}
