//! Absolute `http(s)` URLs given by users: checked once, split into origin and path.

/// Why a URL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidUrl(pub &'static str);

/// Splits an `http(s)` URL into origin (`scheme://authority`) and path, after checking the
/// scheme. Returns `None` when the scheme is not http or https.
pub fn split_scheme(url: &str) -> Option<(&str, &str)> {
    let scheme_len = ["http://", "https://"].into_iter().find_map(|s| {
        url.get(..s.len())
            .filter(|p| p.eq_ignore_ascii_case(s))
            .map(|_| s.len())
    })?;
    let authority_end = url[scheme_len..]
        .find('/')
        .map_or(url.len(), |i| scheme_len + i);
    Some(url.split_at(authority_end))
}

/// Checks a user-supplied target and returns (origin, path prefix without trailing slashes).
///
/// Accepted: `http(s)://host[:port][/path]` with a registered name, IPv4 or bracketed IPv6
/// host. Rejected: other schemes, query, fragment, credentials (curl would turn them into an
/// `Authorization` header the original did not have), whitespace, controls and non-ASCII.
pub fn validate_target(target: &str) -> Result<(&str, &str), InvalidUrl> {
    use InvalidUrl as E;
    let (origin, path) =
        split_scheme(target).ok_or(E("must be an absolute http:// or https:// URL"))?;
    if !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(E("contains whitespace, control or non-ASCII characters"));
    }
    if target.contains('?') {
        return Err(E("must not have a query; the captured query is appended"));
    }
    if target.contains('#') {
        return Err(E("must not have a fragment"));
    }
    let authority = &origin[origin.find("://").map_or(0, |i| i + 3)..];
    if authority.contains('@') {
        return Err(E("must not contain credentials"));
    }
    check_authority(authority)?;
    Ok((origin, path.trim_end_matches('/')))
}

/// `host[:port]` where host is a reg-name, IPv4 address or `[IPv6]`.
fn check_authority(authority: &str) -> Result<(), InvalidUrl> {
    use InvalidUrl as E;
    let (host_ok, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or(E("unclosed IPv6 bracket"))?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or(E("junk after IPv6 address"))?,
            ),
        };
        let v6_ok = !v6.is_empty()
            && v6
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        (v6_ok, port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        let reg_name_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b));
        (reg_name_ok, port)
    };
    if !host_ok {
        return Err(E("invalid host"));
    }
    let port_ok = port.is_none_or(|p| {
        p.len() <= 5
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n))
    });
    if !port_ok {
        return Err(E("invalid port"));
    }
    Ok(())
}
