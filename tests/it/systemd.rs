//! The README's systemd unit: it names real settings and passes `systemd-analyze verify`.
//!
//! Without `systemd-analyze` (package `systemd`) the verify step is skipped with a loud message;
//! the checks against hookbin's own flags run everywhere.

use std::path::Path;
use std::process::Command;

/// The `[Unit]`...`[Install]` block of the README's systemd section.
fn readme_unit() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = &readme[readme.find("### systemd").expect("a systemd section")..];
    let start = section.find("```ini\n").expect("an ini block") + "```ini\n".len();
    let end = start + section[start..].find("```").unwrap();
    section[start..end].to_owned()
}

fn setting<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn readme_systemd_unit_uses_real_settings_and_stops_gracefully() {
    let unit = readme_unit();
    // Every HOOKBIN_* variable the unit sets is one `hookbin serve` reads.
    let help = Command::new(env!("CARGO_BIN_EXE_hookbin"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let vars: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.trim_start_matches('#').strip_prefix("Environment="))
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
        .filter(|k| k.starts_with("HOOKBIN_"))
        .collect();
    assert!(vars.contains(&"HOOKBIN_TRUST_PROXY") && vars.contains(&"HOOKBIN_DB"));
    for var in vars {
        assert!(help.contains(var), "{var} is not a hookbin setting");
    }
    assert!(setting(&unit, "Environment").contains(&"HOOKBIN_LISTEN=127.0.0.1:8080"));
    // The database lives in the unit's state directory.
    let state = setting(&unit, "StateDirectory");
    assert_eq!(state, ["hookbin"]);
    assert!(setting(&unit, "Environment").contains(&"HOOKBIN_DB=/var/lib/hookbin/hookbin.db"));
    // SIGTERM, and more time than hookbin's 30 s grace for in-flight requests.
    assert_eq!(setting(&unit, "KillSignal"), ["SIGTERM"]);
    let timeout: u64 = setting(&unit, "TimeoutStopSec")[0].parse().unwrap();
    assert!(timeout > hookbin::server::GRACE.as_secs(), "{timeout}");
    for hardening in [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
    ] {
        assert!(unit.lines().any(|l| l == hardening), "{hardening}");
    }
}

#[test]
fn readme_systemd_unit_passes_systemd_analyze_verify() {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!(
            "\n*** SKIPPED: systemd-analyze is not installed; install the `systemd` package to \
             verify the README's unit (tests/it/systemd.rs) ***\n"
        );
        return;
    };
    assert!(version.status.success());
    let dir = tempfile::tempdir().unwrap();
    // verify checks that ExecStart's binary exists: point it at the one under test.
    let unit = readme_unit().replace(
        "ExecStart=/usr/local/bin/hookbin",
        &format!("ExecStart={}", env!("CARGO_BIN_EXE_hookbin")),
    );
    let file = dir.path().join("hookbin.service");
    std::fs::write(&file, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Unknown or misspelt settings are warnings, not errors: there must be none.
    assert!(
        !stderr.contains("hookbin.service"),
        "systemd-analyze complains:\n{stderr}"
    );
}
