//! Private bins (issue 18): the capture URL stays open, every read and change of the bin needs
//! its view token, and without it the bin is exactly an unknown bin (same status, same body).

use serde_json::Value;

use crate::util::{Response, Server};

/// A private bin: (id, token, view_url).
fn private_bin(s: &Server) -> (String, String, String) {
    let bin = s.create_bin_with(r#"{"private": true}"#);
    assert_eq!(bin["private"], true, "{bin}");
    let field = |k: &str| {
        bin[k]
            .as_str()
            .unwrap_or_else(|| panic!("{k}: {bin}"))
            .to_owned()
    };
    (field("id"), field("view_token"), field("view_url"))
}

fn with_token(s: &Server, method: &str, path: &str, token: &str, body: &[u8]) -> Response {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json"));
    }
    s.request(method, path, &headers, body)
}

/// Every bin endpoint of the API, with the method that reads or changes it.
fn endpoints(bin: &str, req: &str) -> Vec<(&'static str, String, &'static [u8])> {
    vec![
        ("GET", format!("/api/bins/{bin}"), b""),
        ("GET", format!("/api/bins/{bin}/requests"), b""),
        (
            "GET",
            format!("/api/bins/{bin}/requests?q=method:post"),
            b"",
        ),
        ("GET", format!("/api/bins/{bin}/requests/{req}"), b""),
        ("GET", format!("/api/bins/{bin}/requests/{req}/body"), b""),
        ("GET", format!("/api/bins/{bin}/requests/{req}/curl"), b""),
        (
            "POST",
            format!("/api/bins/{bin}/requests/{req}/verify"),
            br#"{"secret": "s", "scheme": "github"}"#,
        ),
        ("GET", format!("/api/bins/{bin}/export?format=har"), b""),
        ("GET", format!("/api/bins/{bin}/export?format=json"), b""),
        (
            "PUT",
            format!("/api/bins/{bin}/response"),
            br#"{"status": 202}"#,
        ),
        ("DELETE", format!("/api/bins/{bin}/response"), b""),
    ]
}

#[test]
fn a_private_bin_is_an_unknown_bin_to_anyone_without_its_token() {
    let s = Server::start(&[]);
    let (bin, token, view_url) = private_bin(&s);
    assert_eq!(token.len(), 43, "32 random bytes, base64url");
    assert!(view_url.ends_with(&format!("/bins/{bin}?token={token}")));
    // Capture stays open to whoever holds the capture URL.
    let req = s.capture(&bin, br#"{"event":"paid"}"#);
    // An unknown bin of the same shape, for the reference answers.
    let unknown = "zzzzzzzzzzzzzzzzzzzz";
    let unknown_req = req.as_str();
    for ((method, path, body), (_, unknown_path, _)) in endpoints(&bin, &req)
        .into_iter()
        .zip(endpoints(unknown, unknown_req))
    {
        let reference = s.request(method, &unknown_path, &[], body);
        for presented in [None, Some("wrong"), Some(&token[..42])] {
            let res = match presented {
                None => s.request(method, &path, &[], body),
                Some(t) => with_token(&s, method, &path, t, body),
            };
            assert_eq!(
                (res.status, res.text()),
                (reference.status, reference.text()),
                "{method} {path} with {presented:?} must look like an unknown bin"
            );
            assert_eq!(res.status, 404, "{method} {path}");
        }
        let ok = with_token(&s, method, &path, &token, body);
        assert!(
            (200..300).contains(&ok.status),
            "{method} {path} with the token: {} {}",
            ok.status,
            ok.text()
        );
    }
    // The event stream, too.
    let stream = format!("/api/bins/{bin}/stream");
    assert_eq!(s.get(&stream).status, 404);
    let mut conn = s.connect();
    use std::io::Write as _;
    write!(
        conn,
        "GET {stream} HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let head = crate::util::read_head(&mut std::io::BufReader::new(conn)).unwrap();
    assert_eq!(head.status, 200);
    // Deleting: refused without, done with.
    assert_eq!(
        s.delete(&format!("/api/bins/{bin}/requests/{req}")).status,
        404
    );
    assert_eq!(s.delete(&format!("/api/bins/{bin}")).status, 404);
    let bearer = with_token(&s, "GET", &format!("/api/bins/{bin}"), &token, b"");
    assert_eq!(bearer.json()["request_count"], 1);
    assert_eq!(
        with_token(&s, "DELETE", &format!("/api/bins/{bin}"), &token, b"").status,
        204
    );
}

#[test]
fn private_is_a_boolean_and_private_bins_makes_it_the_default() {
    let s = Server::start(&[]);
    for bad in [
        r#"{"private": "yes"}"#,
        r#"{"private": 1}"#,
        r#"{"private": {}}"#,
    ] {
        s.post_json("/api/bins", bad)
            .assert_error(422, "invalid_bin");
    }
    let public = s.create_bin_with(r#"{"private": false}"#);
    assert_eq!(public["private"], false);
    assert!(public.get("view_token").is_none(), "{public}");
    assert_eq!(s.create_bin_with("")["private"], false);

    let s = Server::start(&["--private-bins"]);
    let bin = s.create_bin_with("");
    assert_eq!(bin["private"], true);
    assert!(bin["view_token"].is_string());
    let id = bin["id"].as_str().unwrap();
    assert_eq!(s.get(&format!("/api/bins/{id}")).status, 404);
    let opted_out = s.create_bin_with(r#"{"private": false}"#);
    assert_eq!(opted_out["private"], false);
    let id = opted_out["id"].as_str().unwrap();
    assert_eq!(s.get(&format!("/api/bins/{id}")).status, 200);
}

/// The cookies of a response, as (name=value, attributes) text.
fn set_cookies(res: &Response) -> Vec<String> {
    res.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.clone())
        .collect()
}

#[test]
fn pages_open_with_the_token_link_which_sets_a_strict_http_only_cookie() {
    let s = Server::start(&[]);
    let (bin, token, _) = private_bin(&s);
    let req = s.capture(&bin, b"hello");
    let page = format!("/bins/{bin}");
    let unknown = s.get("/bins/zzzzzzzzzzzzzzzzzzzz");
    for path in [page.clone(), format!("/bins/{bin}/requests/{req}")] {
        let res = s.get(&path);
        assert_eq!(
            (res.status, res.text()),
            (unknown.status, unknown.text()),
            "{path}"
        );
    }
    assert_eq!(s.get(&format!("{page}?token=wrong")).status, 404);

    // The link: 303 to the same page without the token, with the bin's cookies.
    let res = s.get(&format!("{page}?token={token}&req={req}"));
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some(format!("{page}?req={req}").as_str())
    );
    let cookies = set_cookies(&res);
    assert_eq!(cookies.len(), 2, "{cookies:?}");
    for (cookie, path) in cookies
        .iter()
        .zip([page.clone(), format!("/api/bins/{bin}")])
    {
        assert!(
            cookie.starts_with(&format!("hookbin_view={token};")),
            "{cookie}"
        );
        assert!(cookie.contains(&format!("; Path={path};")), "{cookie}");
        assert!(
            cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict"),
            "{cookie}"
        );
    }
    // With the cookie: the bin page (showing the view link), the request page, the API.
    let cookie = format!("hookbin_view={token}");
    let headers = [("Cookie", cookie.as_str())];
    let bin_page = s.request("GET", &page, &headers, b"");
    assert_eq!(bin_page.status, 200);
    assert!(bin_page.text().contains(&format!("?token={token}")));
    let request_page = s.request("GET", &format!("/bins/{bin}/requests/{req}"), &headers, b"");
    assert_eq!(request_page.status, 200);
    let api = s.request("GET", &format!("/api/bins/{bin}/requests"), &headers, b"");
    assert_eq!(api.status, 200);
    // A page form (clear) works with the cookie, and not without.
    let form = |h: &[(&str, &str)]| {
        let mut all = vec![("Content-Type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(h);
        s.request("POST", &format!("/bins/{bin}/clear"), &all, b"")
    };
    assert_eq!(form(&[]).status, 404);
    assert_eq!(form(&headers).status, 303);
}

#[test]
fn the_home_page_offers_the_choice_and_a_private_bin_opens_through_its_link() {
    let s = Server::start(&[]);
    let home = s.get("/").text();
    assert!(
        home.contains(r#"name="visibility" value="private""#),
        "{home}"
    );
    let res = s.request(
        "POST",
        "/bins",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"visibility=private",
    );
    assert_eq!(res.status, 303);
    let location = res.header("location").unwrap().to_owned();
    let (path, token) = location.split_once("?token=").expect(&location);
    let bin = path.strip_prefix("/bins/").unwrap();
    assert_eq!(s.get(path).status, 404);
    let opened = s.get(&location);
    assert_eq!(opened.status, 303);
    assert_eq!(set_cookies(&opened).len(), 2);
    let bin_json = with_token(&s, "GET", &format!("/api/bins/{bin}"), token, b"");
    assert_eq!(bin_json.json()["private"], true);
    // Public by default.
    let res = s.request(
        "POST",
        "/bins",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"",
    );
    let location = res.header("location").unwrap();
    assert!(!location.contains("token"), "{location}");
    assert_eq!(s.get(location).status, 200);
}

#[test]
fn only_a_hash_of_the_token_is_stored_and_it_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hookbin.db");
    let mut s = Server::start_on(&db, &[]);
    let (bin, token, _) = private_bin(&s);
    s.capture(&bin, b"x");
    s.stop();
    let raw: Vec<u8> = std::fs::read(&db).unwrap();
    assert!(
        !raw.windows(token.len()).any(|w| w == token.as_bytes()),
        "the token itself is in the database file"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let hash: Vec<u8> = conn
        .query_row(
            "SELECT view_token_hash FROM bins WHERE id = ?1",
            [&bin],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hash.len(), 32);
    drop(conn);
    let s = Server::start_on(&db, &[]);
    assert_eq!(s.get(&format!("/api/bins/{bin}")).status, 404);
    let res = with_token(&s, "GET", &format!("/api/bins/{bin}"), &token, b"");
    assert_eq!(res.status, 200);
    let json: Value = res.json();
    assert_eq!(
        (json["private"].clone(), json["request_count"].clone()),
        (true.into(), 1.into())
    );
}
