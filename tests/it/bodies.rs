//! Decoded bodies and multipart parts through the real server: `?decode=1` on bodies made by the
//! real `gzip`, `brotli` and `zstd` tools, its errors, a decompression bomb, and a `curl -F`
//! upload whose parts download byte-exact.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::replay_support::noise;
use crate::util::{Response, Server};

/// `input` piped through `sh -c script`, which runs `tool`; its output. A missing tool skips
/// the test with a loud message, and fails it under `CI=true`.
pub fn made_with(tool: &str, script: &str, input: &[u8]) -> Option<Vec<u8>> {
    let present = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        let msg = format!("`{tool}` is not installed (apt-get install {tool})");
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("\n!!!!! SKIPPED: {msg} !!!!!\n");
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
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("tool output");
    writer.join().unwrap().expect("write to the tool");
    assert!(out.status.success(), "{script} failed");
    Some(out.stdout)
}

fn send(server: &Server, bin: &str, headers: &[(&str, &str)], body: &[u8]) -> String {
    let res = server.request("POST", &format!("/r/{bin}/in"), headers, body);
    assert_eq!(res.status, 200, "{}", res.text());
    res.header("x-request-id").unwrap().to_owned()
}

fn assert_download(res: &Response) {
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.header("content-type"), Some("application/octet-stream"));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        res.header("content-security-policy"),
        Some("sandbox; default-src 'none'")
    );
    assert!(
        res.header("content-disposition")
            .is_some_and(|d| d.starts_with("attachment; filename=\"")),
        "{:?}",
        res.headers
    );
}

fn content() -> Vec<u8> {
    let mut data = "{\"event\": \"paid\", \"who\": \"J\u{fc}rgen\"}\n"
        .repeat(300)
        .into_bytes();
    data.extend(noise(50_000, 7));
    data
}

#[test]
fn decode_undoes_each_coding_and_chains_of_them() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let data = content();
    let made = |tool: &str, script: &str, input: &[u8]| made_with(tool, script, input);
    let Some(gz) = made("gzip", "gzip -c", &data) else {
        return;
    };
    let Some(br) = made("brotli", "brotli -c", &data) else {
        return;
    };
    let Some(zst) = made("zstd", "zstd -c -q", &data) else {
        return;
    };
    let Some(gz_br) = made("brotli", "brotli -c", &gz) else {
        return;
    };
    let Some(zst_gz) = made("gzip", "gzip -c", &zst) else {
        return;
    };
    for (body, encoding) in [
        (&gz, "gzip"),
        (&gz, "x-gzip"),
        (&br, "br"),
        (&zst, "zstd"),
        (&gz_br, "gzip, br"),
        (&zst_gz, "zstd, gzip"),
    ] {
        let id = send(
            &server,
            &bin,
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", encoding),
            ],
            body,
        );
        let path = format!("/api/bins/{bin}/requests/{id}");
        let stored = server.stored(&bin, &id);
        assert_eq!(stored["content_encoding"], encoding);
        assert!(stored.get("parts").is_none());
        let raw = server.get(&format!("{path}/body"));
        assert_download(&raw);
        assert_eq!(
            &raw.body, body,
            "{encoding}: without decode, the bytes as sent"
        );
        let decoded = server.get(&format!("{path}/body?decode=1"));
        assert_download(&decoded);
        assert_eq!(decoded.body, data, "{encoding}: decoded");
        assert_eq!(
            decoded.header("content-disposition"),
            Some(format!("attachment; filename=\"request-{id}.decoded.bin\"").as_str())
        );
    }
    // Two Content-Encoding lines are one list.
    let id = send(
        &server,
        &bin,
        &[("Content-Encoding", "gzip"), ("Content-Encoding", "br")],
        &gz_br,
    );
    assert_eq!(server.stored(&bin, &id)["content_encoding"], "gzip, br");
    let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body?decode=1"));
    assert_eq!(res.body, data);
    // No Content-Encoding: decode=1 gives the bytes as sent.
    let id = send(&server, &bin, &[], b"plain");
    assert_eq!(server.stored(&bin, &id)["content_encoding"], Value::Null);
    let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body?decode=1"));
    assert_download(&res);
    assert_eq!(res.body, b"plain");
}

#[test]
fn bodies_that_do_not_decode_are_422_naming_the_coding() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let body =
        |id: &str, query: &str| server.get(&format!("/api/bins/{bin}/requests/{id}/body{query}"));
    let id = send(
        &server,
        &bin,
        &[("Content-Encoding", "gzip")],
        b"not gzip at all",
    );
    let res = body(&id, "?decode=1");
    res.assert_error(422, "undecodable_body");
    assert!(
        res.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gzip:")
    );
    assert_eq!(
        body(&id, "").body,
        b"not gzip at all",
        "the raw bytes are still there"
    );
    let id = send(&server, &bin, &[("Content-Encoding", "compress")], b"x");
    let res = body(&id, "?decode=1");
    res.assert_error(422, "undecodable_body");
    assert!(res.text().contains("compress:"), "{}", res.text());
    let Some(gz) = made_with("gzip", "gzip -c", &content()) else {
        return;
    };
    // Listed in the wrong order: br is undone first and fails.
    let id = send(&server, &bin, &[("Content-Encoding", "br, gzip")], &gz);
    let res = body(&id, "?decode=true");
    res.assert_error(422, "undecodable_body");
    body(&id, "?decode=maybe").assert_error(400, "invalid_decode");
    assert_eq!(body(&id, "?decode=0").body, gz);
    server
        .get(&format!("/api/bins/{bin}/requests/999999/body?decode=1"))
        .assert_error(404, "request_not_found");
}

/// 1 GiB of zeros, zstd-compressed to about 33 KiB: with `HOOKBIN_MAX_DECODED_BYTES` at 1 MiB
/// the decoded download is refused, the raw one is not, and search-side readers are bounded.
#[test]
fn a_decompression_bomb_is_413_at_the_decode_limit() {
    let Some(bomb) = made_with("zstd", "head -c 1073741824 /dev/zero | zstd -c -q", b"") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::try_start(
        &dir.path().join("hookbin.db"),
        &[],
        &[("HOOKBIN_MAX_DECODED_BYTES", "1048576")],
    )
    .unwrap();
    let bin = server.create_bin();
    let id = send(&server, &bin, &[("Content-Encoding", "zstd")], &bomb);
    let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body?decode=1"));
    res.assert_error(413, "decoded_too_large");
    assert!(res.text().contains("1048576"), "{}", res.text());
    assert_eq!(
        server
            .get(&format!("/api/bins/{bin}/requests/{id}/body"))
            .body,
        bomb
    );
    // The flag wins over the variable.
    let flagged = Server::start(&["--max-decoded-bytes", "2000000000"]);
    let bin = flagged.create_bin();
    let small = made_with("zstd", "head -c 3000000 /dev/zero | zstd -c -q", b"").unwrap();
    let id = send(&flagged, &bin, &[("Content-Encoding", "zstd")], &small);
    let res = flagged.get(&format!("/api/bins/{bin}/requests/{id}/body?decode=1"));
    assert_eq!(res.body.len(), 3_000_000);
    let out = Command::new(env!("CARGO_BIN_EXE_hookbin"))
        .args(["--max-decoded-bytes", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-decoded-bytes"));
}

#[test]
fn a_curl_form_upload_lists_its_parts_and_each_downloads_byte_exact() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let dir = tempfile::tempdir().unwrap();
    // A PNG signature, then random bytes: CR, LF, NUL and dashes all occur.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(noise(200_000, 42));
    std::fs::write(dir.path().join("pixel map.png"), &png).unwrap();
    let notes = "line one\r\n--not a boundary\r\nJ\u{fc}rgen <b>bold</b>\n";
    std::fs::write(dir.path().join("notes.txt"), notes).unwrap();
    let out = Command::new("curl")
        .current_dir(dir.path())
        .args([
            "-sS",
            "--fail",
            "-F",
            "title=Hello <world> & \"friends\"",
            "-F",
            "upload=@pixel map.png;type=image/png",
            "-F",
            "notes=@notes.txt",
            "-F",
            "empty=",
        ])
        .arg(server.url(&format!("/r/{bin}/upload")))
        .output()
        .expect("run curl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"ok");
    let id = server.list_all(&bin, 10)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored = server.stored(&bin, &id);
    assert!(
        stored["content_type"]
            .as_str()
            .unwrap()
            .starts_with("multipart/form-data; boundary="),
        "{stored}"
    );
    let parts = stored["parts"].as_array().expect("parts").clone();
    let summary: Vec<Value> = parts
        .iter()
        .map(|p| {
            json!([
                p["name"],
                p["filename"],
                p["content_type"],
                p["size"],
                p["complete"]
            ])
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!(["title", null, null, 25, true]),
            json!(["upload", "pixel map.png", "image/png", png.len(), true]),
            json!(["notes", "notes.txt", "text/plain", notes.len(), true]),
            json!(["empty", null, null, 0, true]),
        ]
    );
    assert_eq!(parts[1]["headers"][0][0], "Content-Disposition");
    assert_eq!(
        parts[1]["headers"][0][1],
        "form-data; name=\"upload\"; filename=\"pixel map.png\""
    );
    assert_eq!(parts[1]["headers"][1], json!(["Content-Type", "image/png"]));
    let expected: [&[u8]; 4] = [b"Hello <world> & \"friends\"", &png, notes.as_bytes(), b""];
    for (n, want) in expected.iter().enumerate() {
        let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body/parts/{n}"));
        assert_download(&res);
        assert_eq!(&res.body, want, "part {n}");
    }
    let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body/parts/1"));
    assert_eq!(
        res.header("content-disposition"),
        Some("attachment; filename=\"pixel_map.png\"; filename*=UTF-8''pixel%20map.png")
    );
    let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body/parts/0"));
    assert_eq!(
        res.header("content-disposition"),
        Some(format!("attachment; filename=\"request-{id}-part-0.bin\"").as_str())
    );
    for n in ["4", "-1", "x", "99999999999999999999999"] {
        server
            .get(&format!("/api/bins/{bin}/requests/{id}/body/parts/{n}"))
            .assert_error(404, "part_not_found");
    }
    let plain = send(&server, &bin, &[("Content-Type", "text/plain")], b"x");
    server
        .get(&format!("/api/bins/{bin}/requests/{plain}/body/parts/0"))
        .assert_error(404, "part_not_found");
    let res = server.request(
        "POST",
        &format!("/api/bins/{bin}/requests/{id}/body/parts/0"),
        &[],
        b"",
    );
    res.assert_error(405, "method_not_allowed");
    // The export's JSON carries the same parts.
    let export = server
        .get(&format!("/api/bins/{bin}/export?format=json"))
        .json();
    assert_eq!(export[0]["parts"], Value::Array(parts));
}

#[test]
fn parts_of_a_gzipped_multipart_body_come_from_the_decoded_body() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let multipart = b"--zz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nfirst\r\n\
                      --zz\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\nsecond\r\n--zz--\r\n";
    let Some(gz) = made_with("gzip", "gzip -c", multipart) else {
        return;
    };
    let id = send(
        &server,
        &bin,
        &[
            ("Content-Type", "multipart/form-data; boundary=zz"),
            ("Content-Encoding", "gzip"),
        ],
        &gz,
    );
    let stored = server.stored(&bin, &id);
    assert_eq!(stored["parts"][1]["name"], "b");
    assert_eq!(stored["parts"][1]["size"], 6);
    let res = server.get(&format!("/api/bins/{bin}/requests/{id}/body/parts/1"));
    assert_eq!(res.body, b"second");
    // A cut body (here: a multipart body without its close delimiter) keeps its last part.
    let id = send(
        &server,
        &bin,
        &[("Content-Type", "multipart/form-data; boundary=zz")],
        &multipart[..multipart.len() - 12],
    );
    let parts = server.stored(&bin, &id)["parts"].clone();
    assert_eq!(parts[1]["complete"], false);
    assert_eq!(parts[1]["size"], 4, "\"seco\": up to the end of the body");
}
