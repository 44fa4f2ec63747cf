//! The `q` search language of API.md ("Search"), pure: [`parse`] turns a query string into
//! [`Query`] terms, or a [`QueryError`] naming the bad term (the API's `400 invalid_query`);
//! [`Query::matches`] evaluates it against one stored request.
//!
//! ```text
//! q      = term *( spaces term )        every term must match
//! term   = [ "-" ] [ field ":" ] text   "-" negates
//! field  = method | path | header | body      (any case)
//! text   = ( word | "quoted text" )...  \" and \\ inside quotes
//! ```
//!
//! | term | matches a request when |
//! |---|---|
//! | `method:post` | its method is `POST` (equal, any case) |
//! | `path:/hooks` | `/hooks` is in its path or query as received (`path?query`) |
//! | `header:X-Sig` | it has a header `X-Sig` (name in any case) |
//! | `header:X-Sig=abc` | one of its `X-Sig` values contains `abc` |
//! | `body:"paid invoice"` | its body contains `paid invoice`, after undoing `Content-Encoding` |
//! | `invoice` | any of the above: method, path and query, a header name or value, the body |
//!
//! Text is compared ASCII case-insensitively; other bytes must be equal. A term whose field
//! prefix is quoted (`"path:x"`) is plain text.

mod matcher;
mod query;

pub use matcher::searchable_body;
pub use query::{Field, Needle, Query, QueryError, Term, parse};
