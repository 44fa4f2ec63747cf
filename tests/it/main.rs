//! Integration tests: each starts the real `hookbin` binary on 127.0.0.1:0 with a temporary
//! database and talks HTTP to it (see `util.rs`).

mod api;
mod architecture;
mod backup;
mod bodies;
mod browser;
mod capture;
mod curl_api;
mod curl_props;
mod curl_roundtrip;
mod docker;
mod durability;
mod export;
mod forward;
mod healthcheck;
mod lifecycle;
mod limits;
mod logs;
mod multinode;
mod nginx;
mod pg;
mod probe;
mod providers;
mod receiver;
mod replay_support;
mod security;
mod send;
mod signing;
mod systemd;
mod ui_browser;
mod ui_pages;
mod upgrade;
mod util;
mod verify_api;
mod verify_vectors;
