//! Tools the tests install from PyPI or npm into `target/tmp`, once per build directory: a
//! virtual environment per purpose, reused while its package list is unchanged.
//!
//! Under `CI=true` a failed install fails the test; elsewhere the test is skipped with a message
//! naming what to install (see [`available`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/tmp/{name}`: where one purpose's tools live.
pub fn tools_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

pub fn run_ok(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The python of the venv `target/tmp/{name}/venv` with `packages` (pinned `name==version`
/// requirements) installed; made again when the list changes. Call it from one `OnceLock` per
/// venv, so that tests running at once never install into the same directory together.
pub fn venv(name: &str, packages: &[&str]) -> Result<PathBuf, String> {
    let venv = tools_dir(name).join("venv");
    let python = venv.join("bin/python");
    let marker = venv.join("installed.txt");
    let wanted = packages.join("\n");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(python);
    }
    std::fs::create_dir_all(tools_dir(name)).map_err(|e| e.to_string())?;
    run_ok(
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv),
        "python3 -m venv",
    )?;
    run_ok(
        Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(packages),
        "pip install",
    )?;
    std::fs::write(&marker, wanted).map_err(|e| e.to_string())?;
    Ok(python)
}

/// The path when the tool is there; `None` (the test skips, saying why) when it is not, or a
/// panic under `CI=true`, where every tool must be installed.
pub fn available<'a>(result: &'a Result<PathBuf, String>, what: &str) -> Option<&'a Path> {
    match result {
        Ok(path) => Some(path),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true and {what} could not be installed: {e}")
        }
        Err(e) => {
            eprintln!(
                "\n*** SKIPPED: needs {what} ({e}).\n*** Install python3-venv, nodejs and npm to \
                 run this test.\n"
            );
            None
        }
    }
}
