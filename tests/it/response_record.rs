//! What hookbin answered, recorded with each request (issue 12, API.md "What hookbin
//! answered"): the default `200 ok`, a custom response as it was then, a `413`; the same lines
//! the client received; shown on the request page and filled into HAR.

use serde_json::{Value, json};

use crate::util::{Response, Server};

/// The header lines the client received, as `[[name, value]...]`, without hyper's own `date`
/// and the `connection: close` it echoes to this client's `Connection: close`.
fn received(res: &Response) -> Value {
    let lines: Vec<[String; 2]> = res
        .headers
        .iter()
        .filter(|(n, v)| {
            let hypers_own = n.eq_ignore_ascii_case("date")
                || (n.eq_ignore_ascii_case("connection") && v == "close");
            !hypers_own
        })
        .map(|(n, v)| [n.to_ascii_lowercase(), v.clone()])
        .collect();
    json!(lines)
}

fn recorded(server: &Server, bin: &str, res: &Response) -> Value {
    let id = res.header("x-request-id").expect("x-request-id");
    server.stored(bin, id)["response"].clone()
}

#[test]
fn each_request_records_the_answer_exactly_as_sent() {
    let server = Server::start(&["--max-body-bytes", "64"]);

    // The default.
    let bin = server.create_bin();
    let res = server.request("POST", &format!("/r/{bin}"), &[], b"hello");
    assert_eq!(res.status, 200);
    let r = recorded(&server, &bin, &res);
    assert_eq!(r["status"], 200);
    assert_eq!(r["body_size"], 2);
    assert_eq!(r["delay_ms"], 0);
    assert_eq!(r["headers"], received(&res), "the lines the client got");

    // A custom response, with a delay; then changed: the old record stays as it was.
    let custom = server.create_bin_with(
        r#"{"response": {"status": 201, "headers": [["X-Custom", "yes"]], "body": "created!", "delay_ms": 50}}"#,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = server.request(
        "POST",
        &format!("/r/{custom}"),
        &[("Origin", "https://a.example")],
        b"x",
    );
    assert_eq!(res.status, 201);
    let first = recorded(&server, &custom, &res);
    assert_eq!(first["status"], 201);
    assert_eq!(first["body_size"], 8);
    assert_eq!(first["delay_ms"], 50);
    assert_eq!(first["headers"], received(&res));
    assert!(
        first["headers"]
            .as_array()
            .unwrap()
            .contains(&json!(["x-custom", "yes"]))
    );
    let put = server.request(
        "PUT",
        &format!("/api/bins/{custom}/response"),
        &[("Content-Type", "application/json")],
        br#"{"status": 202}"#,
    );
    assert_eq!(put.status, 200, "{}", put.text());
    let again = server.request("POST", &format!("/r/{custom}"), &[], b"y");
    assert_eq!(recorded(&server, &custom, &again)["status"], 202);
    let first_id = res.header("x-request-id").unwrap();
    assert_eq!(server.stored(&custom, first_id)["response"], first);

    // An error after recording: a body over --max-body-bytes is kept cut, and answered 413.
    let big = vec![b'z'; 100];
    let res = server.request("POST", &format!("/r/{bin}"), &[], &big);
    assert_eq!(res.status, 413);
    let r = recorded(&server, &bin, &res);
    assert_eq!(r["status"], 413);
    assert_eq!(r["body_size"], res.body.len());
    assert_eq!(r["headers"], received(&res));

    // HAR carries it.
    let har = server
        .get(&format!("/api/bins/{custom}/export?format=har"))
        .json();
    let entry = &har["log"]["entries"][0];
    assert_eq!(entry["response"]["status"], 201);
    assert_eq!(entry["response"]["statusText"], "Created");
    assert_eq!(entry["response"]["bodySize"], 8);
    assert_eq!(entry["timings"]["wait"], 50);
    assert!(
        entry["response"]["headers"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "x-custom", "value": "yes"}))
    );

    // The request page shows it.
    let page = server
        .get(&format!("/bins/{custom}/requests/{first_id}"))
        .text();
    assert!(page.contains("id=\"answer\""));
    assert!(page.contains(">201</span> Created"), "{page}");
    assert!(page.contains("after a 50 ms delay"));
}
