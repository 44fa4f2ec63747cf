//! Integration tests: each starts the real `hookbin` binary on 127.0.0.1:0 with a temporary
//! database and talks HTTP to it (see `util.rs`).

mod api;
mod capture;
mod curl_api;
mod curl_props;
mod curl_roundtrip;
mod export;
mod forward;
mod lifecycle;
mod replay_support;
mod util;
