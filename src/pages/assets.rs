//! The static assets, embedded in the binary so that one file deploys.
//!
//! Pages link them as `/static/{name}?v={hash of the content}`: a new build with changed assets
//! changes the URL, so browsers may cache each URL forever (`immutable`).

use std::sync::LazyLock;

pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

static ASSETS: &[Asset] = &[
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../static/app.css"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../static/app.js"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("../../static/icon.svg"),
    },
];

/// FNV-1a, 64 bit: stable across builds and Rust versions (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The version tag of an asset: the first 12 hex digits of its content hash.
pub fn version(asset: &Asset) -> String {
    format!("{:016x}", fnv1a(asset.bytes))[..12].to_owned()
}

pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

fn url(name: &str) -> String {
    let asset = find(name).expect("asset is embedded");
    format!("/static/{}?v={}", asset.name, version(asset))
}

static CSS: LazyLock<String> = LazyLock::new(|| url("app.css"));
static JS: LazyLock<String> = LazyLock::new(|| url("app.js"));
static ICON: LazyLock<String> = LazyLock::new(|| url("icon.svg"));

/// The versioned URLs the layout links to.
pub fn css_url() -> &'static str {
    &CSS
}

pub fn js_url() -> &'static str {
    &JS
}

pub fn icon_url() -> &'static str {
    &ICON
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_the_content() {
        let css = find("app.css").unwrap();
        assert_eq!(version(css).len(), 12);
        assert!(css_url().starts_with("/static/app.css?v="));
        assert_ne!(version(css), version(find("app.js").unwrap()));
        assert!(find("../Cargo.toml").is_none());
    }
}
