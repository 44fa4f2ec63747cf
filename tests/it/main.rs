//! Integration tests: each starts the real `hookbin` binary on 127.0.0.1:0 with a temporary
//! database and talks HTTP to it (see `util.rs`).

mod browser;
mod ui_browser;
mod ui_pages;
mod util;
