//! Small wording helpers for `detail` and `signed`: captured values are shown shortened and
//! quoted, counts get the right plural.

/// `text` cut to at most `max` characters, with an ellipsis when cut. Header values can be tens of
/// kilobytes; a sentence only needs enough to recognise them.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// Captured bytes as a quoted, shortened string (non-UTF-8 bytes become U+FFFD).
pub(crate) fn quoted(bytes: &[u8]) -> String {
    format!("{:?}", shorten(&String::from_utf8_lossy(bytes), 120))
}

/// "1 byte", "482 bytes".
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// "the raw body (482 bytes)".
pub(crate) fn raw_body(body: &[u8]) -> String {
    format!("the raw body ({})", count(body.len(), "byte"))
}

/// "a", "a and b", "a, b and c".
pub(crate) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("äöüß", 2), "äö…");
    }

    #[test]
    fn lists_and_counts() {
        assert_eq!(and_list(&["a".into()]), "a");
        assert_eq!(
            and_list(&["a".into(), "b".into(), "c".into()]),
            "a, b and c"
        );
        assert_eq!(count(1, "byte"), "1 byte");
        assert_eq!(count(0, "byte"), "0 bytes");
    }
}
