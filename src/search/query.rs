//! Parsing `q` into terms.

use std::str::FromStr;

/// A parsed query: a request matches when every term does. No terms match everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub terms: Vec<Term>,
}

/// One term of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The term as written in `q`, for messages.
    pub raw: String,
    /// Written with a leading `-`: the request must not match it.
    pub negated: bool,
    pub field: Field,
}

/// What a term looks at, and for what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// A bare term: the method (equal), path and query, header names and values, or the body.
    Any(Needle),
    /// `method:NAME`: the method equals `NAME` in any case.
    Method(String),
    /// `path:TEXT`: in the path or query as received.
    Path(Needle),
    /// `header:NAME` (present) or `header:NAME=TEXT` (in one of its values).
    Header { name: String, value: Option<Needle> },
    /// `body:TEXT`: in the body after undoing `Content-Encoding`.
    Body(Needle),
}

impl Term {
    /// Whether evaluating this term may need the (decoded) body.
    pub fn reads_body(&self) -> bool {
        matches!(self.field, Field::Any(_) | Field::Body(_))
    }
}

impl Query {
    /// No terms: matches every request.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether some term may need the body (so a caller can skip loading bodies otherwise).
    pub fn reads_body(&self) -> bool {
        self.terms.iter().any(Term::reads_body)
    }
}

/// Text to find, ASCII case-insensitively. Built once per query: the folded bytes and a
/// substring finder over them are ready for every request searched.
#[derive(Clone)]
pub struct Needle {
    text: String,
    pub(super) folded: Vec<u8>,
    pub(super) finder: memchr::memmem::Finder<'static>,
}

impl Needle {
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let folded = text.as_bytes().to_ascii_lowercase();
        let finder = memchr::memmem::Finder::new(&folded).into_owned();
        Self {
            text,
            folded,
            finder,
        }
    }

    /// The text as written (quotes and escapes undone).
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl PartialEq for Needle {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Needle {}

impl std::fmt::Debug for Needle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Needle({:?})", self.text)
    }
}

/// A query that cannot be parsed; the message names the term. Shown to API clients as
/// `400 invalid_query`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("unbalanced quote in `{term}`: a \" opens text that no \" closes")]
    UnbalancedQuote { term: String },
    #[error(
        "unknown field `{field}:` in `{term}`: the fields are method:, path:, header: and \
         body: (put the term in quotes to search for it as text)"
    )]
    UnknownField { term: String, field: String },
    #[error("`{term}` names no header: write header:NAME or header:NAME=TEXT")]
    MissingHeaderName { term: String },
    #[error("`{term}` has nothing to search for")]
    EmptyTerm { term: String },
}

impl QueryError {
    /// The term at fault, as written.
    pub fn term(&self) -> &str {
        match self {
            QueryError::UnbalancedQuote { term }
            | QueryError::UnknownField { term, .. }
            | QueryError::MissingHeaderName { term }
            | QueryError::EmptyTerm { term } => term,
        }
    }
}

impl FromStr for Query {
    type Err = QueryError;

    fn from_str(q: &str) -> Result<Self, QueryError> {
        parse(q)
    }
}

/// Parses `q` (see the module documentation). Blank `q` is the empty query.
pub fn parse(q: &str) -> Result<Query, QueryError> {
    let terms = split_terms(q)?
        .into_iter()
        .map(parse_term)
        .collect::<Result<_, _>>()?;
    Ok(Query { terms })
}

/// Splits at ASCII whitespace outside quotes, keeping each term as written.
fn split_terms(q: &str) -> Result<Vec<&str>, QueryError> {
    let bytes = q.as_bytes();
    let mut terms = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == bytes.len() {
            return Ok(terms);
        }
        let start = i;
        let mut quoted = false;
        while i < bytes.len() {
            match bytes[i] {
                // Inside quotes a backslash takes the next byte with it. (Stepping into the
                // middle of a UTF-8 character is harmless: its bytes are never ASCII.)
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b if b.is_ascii_whitespace() && !quoted => break,
                _ => {}
            }
            i += 1;
        }
        let i_end = i.min(bytes.len());
        if quoted {
            return Err(QueryError::UnbalancedQuote {
                term: q[start..].trim_end().to_owned(),
            });
        }
        terms.push(&q[start..i_end]);
        i = i_end;
    }
}

fn parse_term(raw: &str) -> Result<Term, QueryError> {
    let (negated, rest) = match raw.strip_prefix('-') {
        Some(rest) if !rest.is_empty() => (true, rest),
        _ => (false, raw),
    };
    let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    let field = if letters > 0 && rest.as_bytes().get(letters) == Some(&b':') {
        let name = &rest[..letters];
        let value = &rest[letters + 1..];
        let nonempty = |text: String| {
            if text.is_empty() {
                Err(QueryError::EmptyTerm { term: raw.into() })
            } else {
                Ok(text)
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "method" => Field::Method(nonempty(unquote(value))?),
            "path" => Field::Path(Needle::new(nonempty(unquote(value))?)),
            "body" => Field::Body(Needle::new(nonempty(unquote(value))?)),
            "header" => {
                let (name, value) = match split_unquoted(value, b'=') {
                    Some((name, value)) => (unquote(name), Some(Needle::new(unquote(value)))),
                    None => (unquote(value), None),
                };
                if name.is_empty() {
                    return Err(QueryError::MissingHeaderName { term: raw.into() });
                }
                Field::Header { name, value }
            }
            _ => {
                return Err(QueryError::UnknownField {
                    term: raw.into(),
                    field: name.into(),
                });
            }
        }
    } else {
        let text = unquote(rest);
        if text.is_empty() {
            return Err(QueryError::EmptyTerm { term: raw.into() });
        }
        Field::Any(Needle::new(text))
    };
    Ok(Term {
        raw: raw.to_owned(),
        negated,
        field,
    })
}

/// `s` split at the first `sep` outside quotes.
fn split_unquoted(s: &str, sep: u8) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quoted => i += 1,
            b'"' => quoted = !quoted,
            b if b == sep && !quoted => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The text of a term piece: quotes removed, `\"` and `\\` inside quotes undone (any other
/// backslash is kept as written).
fn unquote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted && matches!(chars.peek(), Some('"' | '\\')) => {
                out.extend(chars.next());
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one(q: &str) -> Term {
        let mut terms = parse(q).unwrap().terms;
        assert_eq!(terms.len(), 1, "{q}");
        terms.pop().unwrap()
    }

    fn any(text: &str) -> Field {
        Field::Any(Needle::new(text))
    }

    #[test]
    fn bare_and_quoted_terms() {
        let q = parse("  invoice \t \"paid in full\"  ").unwrap();
        assert_eq!(
            q.terms.iter().map(|t| &t.field).collect::<Vec<_>>(),
            [&any("invoice"), &any("paid in full")]
        );
        assert_eq!(q.terms[1].raw, "\"paid in full\"");
        assert!(parse("").unwrap().is_empty());
        assert!(parse(" \t\n").unwrap().is_empty());
        // Quotes may sit anywhere in a term and join what they hold.
        assert_eq!(one("a\"b c\"d").field, any("ab cd"));
        assert_eq!(one(r#""say \"hi\" \\ \n""#).field, any(r#"say "hi" \ \n"#));
        // Outside quotes a backslash is text.
        assert_eq!(one(r"a\b").field, any(r"a\b"));
        // Colons that do not follow a field name are text.
        assert_eq!(one("12:30").field, any("12:30"));
        assert_eq!(one(":x").field, any(":x"));
        assert_eq!(
            one("\"path:x\"").field,
            any("path:x"),
            "a quoted field is text"
        );
        assert_eq!(
            one("é:x").field,
            any("é:x"),
            "only ASCII letters name a field"
        );
    }

    #[test]
    fn fields() {
        assert_eq!(one("method:post").field, Field::Method("post".into()));
        assert_eq!(one("METHOD:Get").field, Field::Method("Get".into()));
        assert_eq!(
            one("path:/hooks?a=1").field,
            Field::Path(Needle::new("/hooks?a=1"))
        );
        assert_eq!(one("Body:\"a b\"").field, Field::Body(Needle::new("a b")));
        assert_eq!(one("body:\"\"x").field, Field::Body(Needle::new("x")));
        assert_eq!(
            one("header:X-Sig").field,
            Field::Header {
                name: "X-Sig".into(),
                value: None
            }
        );
        assert_eq!(
            one("header:Authorization=Bearer=x").field,
            Field::Header {
                name: "Authorization".into(),
                value: Some(Needle::new("Bearer=x"))
            }
        );
        assert_eq!(
            one("header:X-A=\"a b=c\"").field,
            Field::Header {
                name: "X-A".into(),
                value: Some(Needle::new("a b=c"))
            }
        );
        assert_eq!(
            one("header:\"X=Y\"=v").field,
            Field::Header {
                name: "X=Y".into(),
                value: Some(Needle::new("v"))
            },
            "an = inside quotes is part of the name"
        );
        assert_eq!(
            one("header:X=").field,
            Field::Header {
                name: "X".into(),
                value: Some(Needle::new(""))
            },
            "an empty value is in every value"
        );
    }

    #[test]
    fn negation() {
        let t = one("-method:GET");
        assert!(t.negated);
        assert_eq!(t.field, Field::Method("GET".into()));
        let t = one("-\"a b\"");
        assert!(t.negated);
        assert_eq!(t.field, any("a b"));
        assert!(!one("\"-x\"").negated, "a quoted dash is text");
        assert_eq!(one("\"-x\"").field, any("-x"));
        let t = one("-");
        assert!(!t.negated, "a lone dash is text");
        assert_eq!(t.field, any("-"));
        let t = one("--x");
        assert!(t.negated);
        assert_eq!(t.field, any("-x"));
    }

    #[test]
    fn errors_name_the_term() {
        let e = parse("ok \"unclosed text").unwrap_err();
        assert_eq!(
            e,
            QueryError::UnbalancedQuote {
                term: "\"unclosed text".into()
            }
        );
        assert_eq!(e.term(), "\"unclosed text");
        assert!(
            e.to_string()
                .contains("unbalanced quote in `\"unclosed text`"),
            "{e}"
        );
        let e = parse("body:\"abc\\\" x").unwrap_err();
        assert_eq!(
            e.term(),
            "body:\"abc\\\" x",
            "an escaped quote does not close"
        );

        let e = parse("method:GET colour:red").unwrap_err();
        assert_eq!(
            e,
            QueryError::UnknownField {
                term: "colour:red".into(),
                field: "colour".into()
            }
        );
        assert!(
            e.to_string()
                .contains("unknown field `colour:` in `colour:red`"),
            "{e}"
        );
        assert_eq!(parse("-https://x").unwrap_err().term(), "-https://x");

        for q in ["header:", "header:=x", "-header:\"\"=x"] {
            assert_eq!(
                parse(q).unwrap_err(),
                QueryError::MissingHeaderName { term: q.into() }
            );
        }
        for q in ["body:", "method:", "path:\"\"", "\"\"", "-\"\""] {
            let e = parse(q).unwrap_err();
            assert_eq!(e, QueryError::EmptyTerm { term: q.into() });
            assert!(e.to_string().contains("nothing to search for"));
        }
    }

    #[test]
    fn reads_body() {
        assert!(!parse("method:GET path:x header:a=b").unwrap().reads_body());
        assert!(parse("method:GET x").unwrap().reads_body());
        assert!(parse("-body:x").unwrap().reads_body());
        assert_eq!("a b".parse::<Query>().unwrap().terms.len(), 2);
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_errors_name_a_term_of_the_input(
            q in proptest::collection::vec(
                prop_oneof![
                    Just("\"".to_owned()), Just("\\".to_owned()), Just("-".to_owned()),
                    Just(":".to_owned()), Just("=".to_owned()), Just(" ".to_owned()),
                    Just("header".to_owned()), Just("body".to_owned()), Just("path:".to_owned()),
                    Just("méthod".to_owned()), "\\PC{0,3}".prop_map(|s| s),
                ],
                0..12,
            ).prop_map(|v| v.concat()),
        ) {
            match parse(&q) {
                Ok(query) => {
                    for t in &query.terms {
                        prop_assert!(q.contains(&t.raw));
                        prop_assert!(!t.raw.is_empty());
                    }
                }
                Err(e) => prop_assert!(q.contains(e.term()), "{e} for {q:?}"),
            }
        }
    }
}
