//! The pages in English, Russian and Ukrainian (API.md, "Turn 2 additions" > Documents): the
//! language from the `lang` cookie, else `Accept-Language`, else English; the switcher's
//! endpoint, which never sends a browser off the site; `<html lang>`; API errors in English.

use crate::util::Server;

/// The `lang` attribute of the page's `<html>`.
fn html_lang(html: &str) -> &str {
    let at = html.find("<html lang=\"").expect("<html lang>") + "<html lang=\"".len();
    &html[at..at + html[at..].find('"').unwrap()]
}

/// Request headers, the language expected, a text the page must then contain.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);

fn get_with(server: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let res = server.request("GET", path, headers, b"");
    (res.status, res.text())
}

#[test]
fn the_language_comes_from_the_cookie_then_accept_language_then_english() {
    let server = Server::start(&[]);
    let cases: &[Case<'_>] = &[
        (&[], "en", "Create new URL"),
        (
            &[("Accept-Language", "ru-RU,ru;q=0.9,en;q=0.8")],
            "ru",
            "Создать новый URL",
        ),
        (
            &[("Accept-Language", "en;q=0.5, uk;q=0.9")],
            "uk",
            "Створити нову URL-адресу",
        ),
        (
            &[("Accept-Language", "de, fr;q=0.8")],
            "en",
            "Create new URL",
        ),
        (
            &[("Accept-Language", "ru;q=0, en;q=0.1")],
            "en",
            "Create new URL",
        ),
        (
            &[("Cookie", "lang=uk"), ("Accept-Language", "ru")],
            "uk",
            "Створити нову URL-адресу",
        ),
        (
            &[("Cookie", "other=1; lang=ru"), ("Accept-Language", "uk")],
            "ru",
            "Создать новый URL",
        ),
        (
            &[("Cookie", "lang=fr"), ("Accept-Language", "uk")],
            "uk",
            "Створити нову URL-адресу",
        ),
    ];
    for (headers, lang, text) in cases {
        let (status, html) = get_with(&server, "/", headers);
        assert_eq!(status, 200);
        assert_eq!(html_lang(&html), *lang, "{headers:?}");
        assert!(html.contains(text), "{headers:?}: {text:?} missing");
        // The switcher: one link per language, the current one marked, each back to this page.
        for code in ["en", "ru", "uk"] {
            assert!(
                html.contains(&format!("href=\"/lang/{code}?back=%2F\"")),
                "{headers:?}: no switcher link to {code}"
            );
        }
        assert!(html.contains(&format!("hreflang=\"{lang}\" lang=\"{lang}\" title=\"")));
    }

    // Error pages speak the language too, with the right status; the API's errors stay English.
    let bin = "0123456789abcdefghij";
    let (status, html) = get_with(&server, &format!("/bins/{bin}"), &[("Cookie", "lang=ru")]);
    assert_eq!(status, 404);
    assert_eq!(html_lang(&html), "ru");
    assert!(html.contains("Такого бина нет"), "{html}");
    let (status, html) = get_with(&server, "/no/such/page", &[("Accept-Language", "uk")]);
    assert_eq!(status, 404);
    assert!(html.contains("За цією адресою немає сторінки."), "{html}");
    let res = server.request(
        "GET",
        &format!("/api/bins/{bin}"),
        &[("Cookie", "lang=ru"), ("Accept-Language", "ru")],
        b"",
    );
    res.assert_error(404, "bin_not_found");
    assert!(
        res.text().is_ascii(),
        "API errors stay English: {}",
        res.text()
    );
}

#[test]
fn the_switcher_sets_the_cookie_and_goes_back_to_this_site_only() {
    let server = Server::start(&[]);
    let bin = server.create_bin();
    let back = format!("/bins/{bin}?q=method%3Apost");
    let encoded: String = form_urlencoded::byte_serialize(back.as_bytes()).collect();
    let res = server.request("GET", &format!("/lang/uk?back={encoded}"), &[], b"");
    assert_eq!(res.status, 303);
    assert_eq!(res.header("location"), Some(back.as_str()));
    let cookie = res.header("set-cookie").expect("set-cookie");
    assert!(cookie.starts_with("lang=uk; Path=/;"), "{cookie}");

    // The page it comes back to, with that cookie, is Ukrainian.
    let (status, html) = get_with(&server, &back, &[("Cookie", "lang=uk")]);
    assert_eq!(status, 200);
    assert_eq!(html_lang(&html), "uk");

    // Anything but a path on this server goes to the start page: no open redirect.
    for evil in [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "%2F%2Fevil.example",
        "%2F%09%2Fevil.example",
        "javascript:alert(1)",
        "",
    ] {
        let res = server.request("GET", &format!("/lang/ru?back={evil}"), &[], b"");
        assert_eq!(res.status, 303, "{evil}");
        assert_eq!(res.header("location"), Some("/"), "{evil}");
    }
    let res = server.request("GET", "/lang/ru", &[], b"");
    assert_eq!(res.header("location"), Some("/"));

    // An unknown language is a 404 page, and sets nothing.
    let res = server.request("GET", "/lang/fr?back=/", &[], b"");
    assert_eq!(res.status, 404);
    assert_eq!(res.header("set-cookie"), None);
    let res = server.request("POST", "/lang/ru", &[], b"");
    assert_eq!(res.status, 405);
}
