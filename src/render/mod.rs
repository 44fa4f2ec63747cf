//! Renderers that turn captured requests into something another tool can consume:
//!
//! - [`curl`]: one shell command line that replays a request byte-exact with curl.
//! - [`mod@har`]: a HAR 1.2 log of a bin, importable into browser devtools, Insomnia and Postman.
//!
//! Both are pure functions over [`crate::model::StoredRequest`]; they do no I/O.

pub mod curl;
pub mod har;

pub use curl::{CurlError, curl_command};
pub use har::har;
