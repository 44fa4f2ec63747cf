//! The pages in English, Russian and Ukrainian (API.md, "Turn 2 additions" > Documents).
//!
//! - Messages live in Fluent catalogs, `locales/{en,ru,uk}/*.ftl`, compiled into the binary
//!   ([`FILES`]) and parsed once, on first use. Templates never hold UI text: they ask their
//!   [`Ui`] (`ui.t("key")`, `ui.t1("key", "arg", value)`). The unit tests fail when a catalog
//!   lacks a message another has, when a message does not parse, and when a template or a page
//!   module names a key that no catalog has.
//! - The language: the `lang` cookie (`en`, `ru`, `uk`), else `Accept-Language` (q-values
//!   honoured), else English ([`negotiate`]). `GET /lang/{code}?back=/path` sets the cookie and
//!   sends the browser back to `back`, a path on this server only ([`safe_back`]).
//! - Numbers and dates are written the language's way here ([`Lang::int`], [`Lang::decimal`]);
//!   the page's JavaScript gets its strings as JSON in `<body data-i18n>` ([`Ui::js_json`]) and
//!   formats times with `Intl` in the page's language.
//! - API error messages stay English: this module is only for `pages`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use hyper::HeaderMap;
use hyper::header::{ACCEPT_LANGUAGE, COOKIE};

/// A language the pages are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    Ru,
    Uk,
}

impl Lang {
    pub const ALL: [Lang; 3] = [Lang::En, Lang::Ru, Lang::Uk];

    /// The BCP 47 tag: `<html lang>`, the cookie's value, `/lang/{code}`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ru => "ru",
            Lang::Uk => "uk",
        }
    }

    /// The language's name in itself, for the switcher.
    pub fn native_name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Ru => "Русский",
            Lang::Uk => "Українська",
        }
    }

    /// An exact code (`ru`), as the cookie and the switcher write it.
    pub fn from_code(code: &str) -> Option<Lang> {
        Lang::ALL.into_iter().find(|l| l.code() == code)
    }

    fn index(self) -> usize {
        self as usize
    }

    /// `1,234,567` in English; `1 234 567` (no-break spaces) in Russian and Ukrainian.
    pub fn int(self, n: u64) -> String {
        let digits = n.to_string();
        // Russian and Ukrainian leave four-digit numbers ungrouped (CLDR's minimumGroupingDigits).
        let sep = match self {
            Lang::En => ",",
            Lang::Ru | Lang::Uk if digits.len() <= 4 => "",
            Lang::Ru | Lang::Uk => "\u{a0}",
        };
        let mut out = String::with_capacity(digits.len() * 2);
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push_str(sep);
            }
            out.push(c);
        }
        out
    }

    /// `value` with `places` decimals: `1.5` in English, `1,5` in Russian and Ukrainian.
    pub fn decimal(self, value: f64, places: usize) -> String {
        let text = format!("{value:.places$}");
        match self {
            Lang::En => text,
            Lang::Ru | Lang::Uk => text.replace('.', ","),
        }
    }
}

/// The catalog files of each language, in `locales/<code>/`. Every language has every file.
pub const FILES: [&str; 4] = ["common.ftl", "home.ftl", "bin.ftl", "request.ftl"];

macro_rules! catalog {
    ($code:literal) => {
        [
            include_str!(concat!("../../locales/", $code, "/common.ftl")),
            include_str!(concat!("../../locales/", $code, "/home.ftl")),
            include_str!(concat!("../../locales/", $code, "/bin.ftl")),
            include_str!(concat!("../../locales/", $code, "/request.ftl")),
        ]
    };
}

/// The catalogs' text, by [`Lang`] then by [`FILES`].
const SOURCES: [[&str; FILES.len()]; 3] = [catalog!("en"), catalog!("ru"), catalog!("uk")];

struct Catalog {
    bundle: FluentBundle<FluentResource>,
    /// The `js-*` messages as JSON, for `<body data-i18n>`.
    js: String,
}

fn catalogs() -> &'static [Catalog; 3] {
    static CATALOGS: OnceLock<[Catalog; 3]> = OnceLock::new();
    CATALOGS.get_or_init(|| Lang::ALL.map(build))
}

/// One language's bundle. A catalog that does not parse is a bug the unit tests catch; here the
/// messages that did parse are kept (a missing one shows as its key).
fn build(lang: Lang) -> Catalog {
    let id: unic_langid::LanguageIdentifier = lang.code().parse().expect("a valid language tag");
    let mut bundle = FluentBundle::new_concurrent(vec![id]);
    // No Unicode isolation marks around arguments: every page is left-to-right, and the marks
    // would end up in copied text (and in the tests' comparisons).
    bundle.set_use_isolating(false);
    for source in SOURCES[lang.index()] {
        let resource = FluentResource::try_new(source.to_owned()).unwrap_or_else(|(r, _)| r);
        // A message defined twice keeps its first text.
        let _ = bundle.add_resource(resource);
    }
    let js = js_messages(&bundle, lang);
    Catalog { bundle, js }
}

/// Every `js-*` message of `bundle`, keyed without the prefix. A message with a `$category`
/// selector (plural forms for the script: `{ $category -> [one] … *[other] … }`) becomes an
/// object of its forms by CLDR category, each with `{$n}` where the script puts the number.
fn js_messages(bundle: &FluentBundle<FluentResource>, lang: Lang) -> String {
    let mut out = BTreeMap::new();
    let keys = SOURCES[lang.index()]
        .iter()
        .flat_map(|source| ids_in(source));
    for key in keys {
        let Some(short) = key.strip_prefix("js-") else {
            continue;
        };
        let Some(pattern) = bundle.get_message(&key).and_then(|m| m.value()) else {
            continue;
        };
        // Arguments the script fills in are left out, and Fluent writes them as `{$name}`.
        let forms: Vec<(&str, String)> = ["zero", "one", "two", "few", "many", "other"]
            .into_iter()
            .map(|category| {
                let mut args = FluentArgs::new();
                args.set("category", category);
                let text = bundle.format_pattern(pattern, Some(&args), &mut Vec::new());
                (category, text.into_owned())
            })
            .collect();
        let value = if forms.iter().all(|(_, text)| *text == forms[0].1) {
            serde_json::Value::from(forms[0].1.clone())
        } else {
            let forms = forms.into_iter().map(|(c, t)| (c.to_owned(), t.into()));
            serde_json::Value::Object(forms.collect())
        };
        out.insert(short.to_owned(), value);
    }
    serde_json::to_string(&out).unwrap_or_else(|_| "{}".into())
}

/// The message ids defined in one FTL source (terms, starting with `-`, are not messages).
pub fn ids_in(source: &str) -> Vec<String> {
    let resource = match FluentResource::try_new(source.to_owned()) {
        Ok(r) => r,
        Err((r, _)) => r,
    };
    resource
        .entries()
        .filter_map(|entry| match entry {
            fluent_syntax::ast::Entry::Message(m) => Some(m.id.name.to_owned()),
            _ => None,
        })
        .collect()
}

/// What a page needs to speak its language: the language, and the path the switcher's links
/// come back to.
#[derive(Debug, Clone)]
pub struct Ui {
    pub lang: Lang,
    /// This page's own path and query (or the page a form's answer belongs to).
    pub back: String,
}

/// A link of the language switcher.
pub struct LangLink {
    pub code: &'static str,
    pub name: &'static str,
    pub href: String,
    pub current: bool,
}

impl Ui {
    pub fn new(lang: Lang, back: impl Into<String>) -> Self {
        Ui {
            lang,
            back: back.into(),
        }
    }

    fn format(&self, key: &str, args: Option<&FluentArgs<'_>>) -> String {
        let bundle = &catalogs()[self.lang.index()].bundle;
        match bundle.get_message(key).and_then(|m| m.value()) {
            Some(pattern) => {
                let mut errors = Vec::new();
                bundle
                    .format_pattern(pattern, args, &mut errors)
                    .into_owned()
            }
            // The tests make this unreachable; the key on the page beats an error page.
            None => key.to_owned(),
        }
    }

    /// The message `key`.
    pub fn t(&self, key: &str) -> String {
        self.format(key, None)
    }

    /// The message `key` with one argument.
    pub fn t1<'a>(&self, key: &str, name: &'a str, value: impl Into<FluentValue<'a>>) -> String {
        let mut args = FluentArgs::new();
        args.set(name, value);
        self.format(key, Some(&args))
    }

    /// The message `key` with two arguments.
    pub fn t2<'a>(
        &self,
        key: &str,
        a: &'a str,
        a_value: impl Into<FluentValue<'a>>,
        b: &'a str,
        b_value: impl Into<FluentValue<'a>>,
    ) -> String {
        let mut args = FluentArgs::new();
        args.set(a, a_value);
        args.set(b, b_value);
        self.format(key, Some(&args))
    }

    /// The message `key` with any number of (text) arguments.
    pub fn tn(&self, key: &str, args: &[(&str, &str)]) -> String {
        let mut fluent = FluentArgs::new();
        for (name, value) in args {
            fluent.set(*name, *value);
        }
        self.format(key, Some(&fluent))
    }

    /// A count with its noun: the message `key` with `$count` (the number, which picks the
    /// plural form) and `$n` (the number written the language's way).
    pub fn count(&self, key: &str, count: u64) -> String {
        let mut args = FluentArgs::new();
        args.set("count", count);
        args.set("n", self.lang.int(count));
        self.format(key, Some(&args))
    }

    /// The BCP 47 tag of the page's language.
    pub fn code(&self) -> &'static str {
        self.lang.code()
    }

    /// The script's strings as JSON (escaped by the template like any attribute value).
    pub fn js_json(&self) -> &'static str {
        &catalogs()[self.lang.index()].js
    }

    /// The switcher's links, each back to this page.
    pub fn links(&self) -> Vec<LangLink> {
        let back = encode(&self.back);
        Lang::ALL
            .into_iter()
            .map(|l| LangLink {
                code: l.code(),
                name: l.native_name(),
                href: format!("/lang/{}?back={back}", l.code()),
                current: l == self.lang,
            })
            .collect()
    }
}

fn encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The language of a request: the `lang` cookie, else `Accept-Language`, else English.
pub fn negotiate(headers: &HeaderMap) -> Lang {
    from_cookie(headers)
        .or_else(|| from_accept_language(headers))
        .unwrap_or_default()
}

fn from_cookie(headers: &HeaderMap) -> Option<Lang> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix("lang="))
        .find_map(|v| Lang::from_code(v.trim().trim_matches('"')))
}

/// The best of our languages by the header's q-values (RFC 9110 §12.5.4): the highest q wins,
/// the earlier entry on a tie; `q=0` means "not this"; `ru-RU` counts as `ru`.
fn from_accept_language(headers: &HeaderMap) -> Option<Lang> {
    let mut best: Option<(u16, Lang)> = None;
    let values = headers
        .get_all(ACCEPT_LANGUAGE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    for item in values.flat_map(|v| v.split(',')) {
        let mut parts = item.split(';');
        let tag = parts.next().unwrap_or("").trim();
        let primary = tag.split('-').next().unwrap_or("").to_ascii_lowercase();
        let Some(lang) = Lang::from_code(&primary) else {
            continue;
        };
        let mut q = 1000;
        for param in parts {
            let param = param.trim();
            if let Some(v) = param
                .strip_prefix("q=")
                .or_else(|| param.strip_prefix("Q="))
            {
                q = parse_q(v.trim()).unwrap_or(0);
            }
        }
        if q > 0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, lang));
        }
    }
    best.map(|(_, l)| l)
}

/// A qvalue in thousandths: `0`, `0.5`, `1.000`; anything else is `None`.
fn parse_q(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole = match int {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    let mut thousandths = 0u16;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += u16::from(b - b'0') * [100, 10, 1][i];
    }
    let q = whole + thousandths;
    (q <= 1000).then_some(q)
}

/// `back` if it is a path on this server, else `/`: a relative reference that starts with one
/// `/` (not `//` or `/\`, which browsers take as another host), with no control characters or
/// spaces (a browser drops tabs and newlines, which could turn `/\t/x` into `//x`).
pub fn safe_back(back: Option<&str>) -> &str {
    match back {
        Some(b)
            if b.starts_with('/')
                && !b.starts_with("//")
                && !b.contains('\\')
                && b.len() <= 4096
                && b.bytes().all(|c| c.is_ascii_graphic()) =>
        {
            b
        }
        _ => "/",
    }
}

/// The `Set-Cookie` value that remembers `lang` for a year, for the whole site. Not
/// `HttpOnly`-relevant (it holds no secret) but set so anyway; `SameSite=Lax` so following a
/// link from elsewhere still shows the chosen language.
pub fn cookie(lang: Lang) -> String {
    format!(
        "lang={}; Path=/; Max-Age=31536000; SameSite=Lax; HttpOnly",
        lang.code()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::Path;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                hyper::header::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn negotiation_cookie_then_accept_language_then_english() {
        assert_eq!(negotiate(&headers(&[])), Lang::En);
        assert_eq!(
            negotiate(&headers(&[("accept-language", "uk-UA,uk;q=0.9,en;q=0.5")])),
            Lang::Uk
        );
        assert_eq!(
            negotiate(&headers(&[("accept-language", "de, ru;q=0.3, en;q=0.2")])),
            Lang::Ru
        );
        assert_eq!(
            negotiate(&headers(&[("accept-language", "en;q=0.4, ru;q=0.8")])),
            Lang::Ru
        );
        assert_eq!(
            negotiate(&headers(&[("accept-language", "ru;q=0, en;q=0.1")])),
            Lang::En
        );
        assert_eq!(
            negotiate(&headers(&[("accept-language", "fr, de")])),
            Lang::En
        );
        assert_eq!(
            negotiate(&headers(&[("accept-language", "ru;q=2, uk;q=0.1")])),
            Lang::Uk,
            "a malformed q-value counts as 0"
        );
        assert_eq!(
            negotiate(&headers(&[
                ("cookie", "a=1; lang=uk; b=2"),
                ("accept-language", "ru")
            ])),
            Lang::Uk
        );
        assert_eq!(
            negotiate(&headers(&[
                ("cookie", "lang=xx"),
                ("accept-language", "ru")
            ])),
            Lang::Ru,
            "an unknown cookie value is ignored"
        );
    }

    #[test]
    fn back_is_a_local_path_only() {
        assert_eq!(safe_back(Some("/bins/x?q=a%20b")), "/bins/x?q=a%20b");
        for bad in [
            "//evil.example/",
            "/\\evil.example",
            "https://evil.example/",
            "/\t/evil.example",
            "evil",
            "",
            "/a b",
        ] {
            assert_eq!(safe_back(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_back(None), "/");
    }

    #[test]
    fn numbers_by_language() {
        assert_eq!(Lang::En.int(1_234_567), "1,234,567");
        assert_eq!(Lang::Ru.int(1_234_567), "1\u{a0}234\u{a0}567");
        assert_eq!(Lang::Uk.int(1234), "1234");
        assert_eq!(Lang::En.int(12), "12");
        assert_eq!(Lang::Ru.decimal(1.5, 1), "1,5");
        assert_eq!(Lang::En.decimal(1.5, 1), "1.5");
    }

    #[test]
    fn plurals_follow_each_language() {
        let ui = |l| Ui::new(l, "/");
        assert_eq!(ui(Lang::En).count("bytes", 1), "1 byte");
        assert_eq!(ui(Lang::En).count("bytes", 1234), "1,234 bytes");
        assert_eq!(ui(Lang::Ru).count("bytes", 1), "1 байт");
        assert_eq!(ui(Lang::Ru).count("bytes", 3), "3 байта");
        assert_eq!(ui(Lang::Ru).count("bytes", 11), "11 байт");
        assert_eq!(ui(Lang::Uk).count("bytes", 22), "22 байти");
        assert_eq!(ui(Lang::Uk).count("bytes", 5), "5 байтів");
    }

    fn sources_of(lang: Lang) -> impl Iterator<Item = (&'static str, &'static str)> {
        FILES.into_iter().zip(SOURCES[lang.index()])
    }

    #[test]
    fn every_catalog_parses_and_has_every_key_of_the_others() {
        let mut keys: Vec<(Lang, BTreeSet<String>)> = Vec::new();
        for lang in Lang::ALL {
            let mut set = BTreeSet::new();
            for (file, source) in sources_of(lang) {
                if let Err((_, errors)) = FluentResource::try_new(source.to_owned()) {
                    panic!("locales/{}/{file} does not parse: {errors:?}", lang.code());
                }
                for id in ids_in(source) {
                    assert!(
                        set.insert(id.clone()),
                        "locales/{}/{file}: {id} defined twice",
                        lang.code()
                    );
                }
            }
            keys.push((lang, set));
        }
        for (a, a_keys) in &keys {
            for (b, b_keys) in &keys {
                let missing: Vec<_> = a_keys.difference(b_keys).collect();
                assert!(
                    missing.is_empty(),
                    "locales/{} lacks what locales/{} has: {missing:?}",
                    b.code(),
                    a.code()
                );
            }
        }
    }

    /// Prefixes of the keys, for finding keys that code passes around as string literals
    /// (`PageError::new(status, "err-…")`).
    const PREFIXES: [&str; 9] = [
        "err-",
        "error-",
        "home-",
        "bin-",
        "req-",
        "size-",
        "duration-",
        "time-",
        "js-",
    ];

    /// The keys named in `text` by `.t("…")`, `.t1("…"`, `.t2("…"` and `.count("…"`, and (in
    /// Rust) every string literal that looks like a key.
    fn keys_used(text: &str, rust: bool) -> Vec<String> {
        let mut out = Vec::new();
        if rust {
            for literal in text.split('"').skip(1).step_by(2) {
                let keyish = literal
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
                if keyish && PREFIXES.iter().any(|p| literal.starts_with(p)) {
                    out.push(literal.to_owned());
                }
            }
        }
        for call in ["t(\"", "t1(\"", "t2(\"", "tn(\"", "count(\""] {
            let mut rest = text;
            while let Some(at) = rest.find(call) {
                let before = rest[..at].chars().last();
                rest = &rest[at + call.len()..];
                // `ui.t("`, not `format("` or `print("`.
                if before != Some('.') {
                    continue;
                }
                if let Some(end) = rest.find('"') {
                    out.push(rest[..end].to_owned());
                }
            }
        }
        out
    }

    #[test]
    fn every_key_the_templates_and_pages_use_is_in_the_catalogs() {
        let en: BTreeSet<String> = sources_of(Lang::En).flat_map(|(_, s)| ids_in(s)).collect();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut used = 0;
        for dir in ["templates", "src/pages"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                // This file's own tests name keys, and check them by using them.
                if path.ends_with("i18n.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let rust = path.extension().is_some_and(|e| e == "rs");
                for key in keys_used(&text, rust) {
                    used += 1;
                    assert!(
                        en.contains(&key),
                        "{} uses {key:?}, which no catalog has",
                        path.display()
                    );
                }
            }
        }
        assert!(used > 20, "the key scanner found only {used} keys");
        // The script's `tr('key')` is the catalogs' `js-key`.
        let js = std::fs::read_to_string(root.join("static/app.js")).unwrap();
        let mut rest = js.as_str();
        let mut js_used = 0;
        while let Some(at) = rest.find("tr('") {
            rest = &rest[at + 4..];
            let key = &rest[..rest.find('\'').unwrap()];
            js_used += 1;
            assert!(
                en.contains(&format!("js-{key}")),
                "static/app.js uses tr('{key}'), and no catalog has js-{key}"
            );
        }
        assert!(js_used > 10, "the script scanner found only {js_used} keys");
    }

    #[test]
    fn script_strings_are_json_with_plural_forms() {
        for lang in Lang::ALL {
            let v: serde_json::Value = serde_json::from_str(Ui::new(lang, "/").js_json()).unwrap();
            assert!(v["copied"].is_string(), "{}: {v}", lang.code());
            assert!(v["newer"]["other"].as_str().unwrap().contains("{$n}"));
            assert!(v["new-request"].as_str().unwrap().contains("{$method}"));
        }
        let ru: serde_json::Value = serde_json::from_str(Ui::new(Lang::Ru, "/").js_json()).unwrap();
        assert_ne!(ru["newer"]["one"], ru["newer"]["many"]);
    }

    #[test]
    fn switcher_links_come_back_to_the_page() {
        let ui = Ui::new(Lang::Ru, "/bins/x?q=a&req=1");
        let links = ui.links();
        assert_eq!(links.len(), 3);
        assert_eq!(links[2].href, "/lang/uk?back=%2Fbins%2Fx%3Fq%3Da%26req%3D1");
        assert!(links[1].current);
    }
}
