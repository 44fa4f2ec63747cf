//! Big bodies (issue 12): a request page stays under 300 KiB of HTML whatever the body, and
//! copy-as-curl for a big body comes from `/curl` (a download), not inlined in the page.

use crate::bodies::made_with;
use crate::util::Server;

/// The most HTML one request page may weigh.
const PAGE_MAX: usize = 300 * 1024;

/// A JSON body of about 1.9 MB: many small objects with quotes, `<b>` and non-ASCII text (all
/// of which the page must escape), ending in a marker.
fn big_json() -> Vec<u8> {
    let mut out = String::from("{\"data\":[");
    let mut i = 0;
    while out.len() < 1_900_000 {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"id\":\"evt_{i:06}\",\"type\":\"invoice.paid\",\"customer\":{{\"name\":\"J\u{fc}rgen <b>{i}</b>\",\"email\":\"j{i}@example.com\"}},\"tags\":[\"a\",\"b\"],\"ok\":true,\"amount\":{}}}",
            i * 37 % 100_000
        ));
        i += 1;
    }
    out.push_str("],\"marker\":\"THE-VERY-END\"}");
    out.into_bytes()
}

fn capture(server: &Server, bin: &str, headers: &[(&str, &str)], body: &[u8]) -> String {
    let res = server.request("POST", &format!("/r/{bin}/big"), headers, body);
    assert_eq!(res.status, 200, "{}", res.text());
    res.header("x-request-id").unwrap().to_owned()
}

/// Both pages that show the request: its own, and the bin page with it selected.
fn assert_light(server: &Server, bin: &str, id: &str, what: &str) -> String {
    let own = server.get(&format!("/bins/{bin}/requests/{id}"));
    assert_eq!(own.status, 200, "{what}");
    assert!(
        own.body.len() < PAGE_MAX,
        "{what}: the request page is {} bytes",
        own.body.len()
    );
    let pane = server.get(&format!("/bins/{bin}?req={id}"));
    assert_eq!(pane.status, 200, "{what}");
    assert!(
        pane.body.len() < PAGE_MAX,
        "{what}: the bin page is {} bytes",
        pane.body.len()
    );
    println!(
        "{what}: request page {} bytes, bin page {} bytes",
        own.body.len(),
        pane.body.len()
    );
    own.text()
}

#[test]
fn a_1_9_mb_json_body_makes_a_light_page_and_its_curl_is_a_download() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let body = big_json();
    assert!(body.len() > 1_900_000);
    let id = capture(
        &server,
        &bin,
        &[("Content-Type", "application/json")],
        &body,
    );
    let html = assert_light(&server, &bin, &id, "1.9 MB JSON");

    // The start is shown, pretty; the end is not in the page at all.
    assert!(html.contains("evt_000000"));
    assert!(html.contains("J\u{fc}rgen &#60;b&#62;0&#60;/b&#62;"));
    assert!(!html.contains("THE-VERY-END"));
    assert!(
        html.contains("Download the body"),
        "the clip says where the rest is"
    );

    // Copy as curl: not inlined; a download of the whole command, and a copy fetched on demand.
    assert!(!html.contains("id=\"curl-command\""));
    assert!(html.contains("id=\"curl-large\""));
    let href = format!("/api/bins/{bin}/requests/{id}/curl?download=1");
    assert!(
        html.contains(&format!("href=\"{href}\"")),
        "no download link"
    );
    let download = server.get(&href);
    assert_eq!(download.status, 200);
    assert_eq!(
        download.header("content-disposition"),
        Some(format!("attachment; filename=\"request-{id}.curl.sh\"").as_str())
    );
    let inline = server.get(&format!("/api/bins/{bin}/requests/{id}/curl"));
    assert_eq!(download.body, inline.body);
    assert!(download.text().contains("THE-VERY-END"), "the whole body");
    assert!(download.body.len() > body.len());

    // With a target, the link keeps it.
    let aimed = server
        .get(&format!(
            "/bins/{bin}/requests/{id}?target=http%3A%2F%2Flocalhost%3A3000"
        ))
        .text();
    let link = aimed
        .split("id=\"curl-download\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    assert_eq!(
        link,
        format!("{href}&#38;target=http%3A%2F%2Flocalhost%3A3000"),
        "the download follows the target"
    );
}

#[test]
fn bodies_the_page_must_escape_heavily_stay_light_too() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    // Every byte is a character the page writes as five: `"`.
    let quotes = vec![b'"'; 1_900_000];
    let id = capture(&server, &bin, &[("Content-Type", "text/plain")], &quotes);
    assert_light(&server, &bin, &id, "1.9 MB of quotes");

    // XML is mostly markup.
    let mut xml = String::from("<?xml version=\"1.0\"?><root>");
    while xml.len() < 1_900_000 {
        xml.push_str("<item a=\"1\" b='2'><x/><y>&amp;</y></item>");
    }
    xml.push_str("</root>");
    let id = capture(
        &server,
        &bin,
        &[("Content-Type", "application/xml")],
        xml.as_bytes(),
    );
    assert_light(&server, &bin, &id, "1.9 MB XML");

    // A form of many fields full of quotes.
    let form = "q=%22%22%22%22&".repeat(130_000);
    let id = capture(
        &server,
        &bin,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form.as_bytes(),
    );
    assert_light(&server, &bin, &id, "1.9 MB form");

    // Encoded: the decoded views and the bytes as sent.
    if let Some(gz) = made_with("gzip", "gzip -1 -c", &big_json()) {
        let id = capture(
            &server,
            &bin,
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", "gzip"),
            ],
            &gz,
        );
        let html = assert_light(&server, &bin, &id, "gzip JSON");
        assert!(html.contains("As sent (hex)"));
    }
}
