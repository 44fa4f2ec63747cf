//! A minimal headless-Chromium driver for the UI tests: the Chrome DevTools Protocol over
//! `--remote-debugging-pipe` (JSON messages separated by NUL bytes on file descriptors 3 and 4).
//!
//! Using the pipe instead of a WebSocket needs no extra crate and no port: `sh` maps the child's
//! stdin/stdout pipes onto fds 3/4 before it execs Chromium. Each test starts its own browser
//! with a fresh profile directory; dropping the [`Browser`] closes it.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::PATIENCE;

/// Where Chromium may be; `HOOKBIN_CHROMIUM` overrides.
const CANDIDATES: &[&str] = &[
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
];

/// The flags this machine needs: no sandbox (root), and no background traffic (no network).
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--password-store=basic",
    "--remote-debugging-pipe",
];

type Pending = Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>>;

pub struct Browser {
    child: Option<Child>,
    input: Mutex<ChildStdin>,
    pending: Pending,
    /// Every event received (messages without an `id`), in order.
    events: Arc<Mutex<Vec<Value>>>,
    next_id: AtomicU64,
    log: Arc<Mutex<String>>,
    _profile: tempfile::TempDir,
}

fn chromium_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("HOOKBIN_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    CANDIDATES.iter().map(PathBuf::from).find(|p| p.exists())
}

impl Browser {
    /// Starts headless Chromium. Without Chromium: under `CI=true` the test fails; elsewhere this
    /// prints a loud notice and returns `None`, and the test skips.
    pub fn launch() -> Option<Browser> {
        let Some(path) = chromium_path() else {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!(
                    "Chromium is required for the UI tests under CI=true: \
                     install the Debian package (apt-get install chromium)"
                );
            }
            eprintln!(
                "\n==================================================================\n\
                 SKIPPING browser test: Chromium not found.\n\
                 Install it with: apt-get install chromium   (Debian package `chromium`)\n\
                 ==================================================================\n"
            );
            return None;
        };
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>&2"#)
            .arg(&path)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let stderr_log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = stderr_log.lock().unwrap();
                if log.len() < 200_000 {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let pending: Pending = Arc::default();
        let events = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().unwrap();
        let (p, e) = (pending.clone(), events.clone());
        std::thread::spawn(move || read_messages(stdout, p, e));
        let browser = Browser {
            input: Mutex::new(child.stdin.take().unwrap()),
            child: Some(child),
            pending,
            events,
            next_id: AtomicU64::new(1),
            log,
            _profile: profile,
        };
        // The first answer proves the pipe works.
        browser.call(None, "Browser.getVersion", json!({}));
        Some(browser)
    }

    /// Sends a command (to a page session, or to the browser) and waits for its result.
    pub fn call(&self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.try_call(session, method, params)
            .unwrap_or_else(|e| panic!("{method}: {e}\n--- chromium log ---\n{}", self.log()))
    }

    pub fn try_call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let (tx, rx) = mpsc::channel();
        self.pending.lock().unwrap().insert(id, tx);
        {
            let mut input = self.input.lock().unwrap();
            let mut bytes = serde_json::to_vec(&message).unwrap();
            bytes.push(0);
            input
                .write_all(&bytes)
                .and_then(|()| input.flush())
                .map_err(|e| format!("browser pipe closed: {e}"))?;
        }
        let answer = rx
            .recv_timeout(PATIENCE)
            .map_err(|_| "no answer from the browser".to_owned())?;
        match answer.get("error") {
            Some(err) => Err(err.to_string()),
            None => Ok(answer["result"].clone()),
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A new tab with the given viewport.
    pub fn new_page(&self, width: u32, height: u32) -> Page<'_> {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().unwrap().to_owned();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        let session = attached["sessionId"].as_str().unwrap().to_owned();
        let page = Page {
            browser: self,
            session,
        };
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            page.call(domain, json!({}));
        }
        // A tab in the background gets no frames, so CSS animations would never finish.
        page.call("Page.bringToFront", json!({}));
        page.viewport(width, height);
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Ask politely (Chromium then removes its processes), then insist.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut input) = self.input.lock() {
            let mut bytes =
                serde_json::to_vec(&json!({"id": id, "method": "Browser.close"})).unwrap();
            bytes.push(0);
            let _ = input.write_all(&bytes);
            let _ = input.flush();
        }
        // Cleanup only: give Chromium a bounded moment to exit on its own, asking as it goes.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Splits the pipe on NUL bytes: answers go to their waiting caller, events to the list.
fn read_messages(stdout: impl Read, pending: Pending, events: Arc<Mutex<Vec<Value>>>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut raw = Vec::new();
        match reader.read_until(0, &mut raw) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if raw.last() == Some(&0) {
            raw.pop();
        }
        let Ok(message) = serde_json::from_slice::<Value>(&raw) else {
            continue;
        };
        match message.get("id").and_then(Value::as_u64) {
            Some(id) => {
                if let Some(tx) = pending.lock().unwrap().remove(&id) {
                    let _ = tx.send(message);
                }
            }
            None => events.lock().unwrap().push(message),
        }
    }
}

/// One tab, attached in flat mode (commands carry its `sessionId`).
pub struct Page<'a> {
    browser: &'a Browser,
    session: String,
}

impl Page<'_> {
    pub fn call(&self, method: &str, params: Value) -> Value {
        self.browser.call(Some(&self.session), method, params)
    }

    /// Sets the viewport; widths under 600 px emulate a phone (touch, mobile metrics).
    pub fn viewport(&self, width: u32, height: u32) {
        let mobile = width < 600;
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": if mobile { 2 } else { 1 }, "mobile": mobile}),
        );
    }

    /// `light` or `dark` for `prefers-color-scheme`.
    pub fn color_scheme(&self, scheme: &str) {
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        );
    }

    /// Evaluates `expression` (awaiting a promise) and returns its JSON value.
    pub fn try_eval(&self, expression: &str) -> Result<Value, String> {
        let result = self.browser.try_call(
            Some(&self.session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(details) = result.get("exceptionDetails") {
            return Err(format!("{expression}: {details}"));
        }
        Ok(result["result"]["value"].clone())
    }

    pub fn eval(&self, expression: &str) -> Value {
        self.try_eval(expression).unwrap_or_else(|e| {
            panic!(
                "evaluate failed: {e}\n--- page events ---\n{}",
                self.problems().join("\n")
            )
        })
    }

    /// Waits until `expression` is truthy; fails the test after [`PATIENCE`].
    pub fn wait_for(&self, expression: &str, what: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(v) = self.try_eval(&format!("!!({expression})"))
                && v == json!(true)
            {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what} ({expression})\nlocation: {}\n--- page events ---\n{}",
                    self.try_eval("location.href").unwrap_or_default(),
                    self.problems().join("\n")
                );
            }
            // The page announces no event for an arbitrary expression: ask again soon.
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Navigates and waits for the new document to finish loading.
    pub fn goto(&self, url: &str) {
        self.eval("window.__oldDocument = true");
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for_new_document();
    }

    /// Clicks the element and waits for the navigation it causes.
    pub fn click_and_wait(&self, selector: &str) {
        self.eval("window.__oldDocument = true");
        self.click(selector);
        self.wait_for_new_document();
    }

    fn wait_for_new_document(&self) {
        self.wait_for(
            "!window.__oldDocument && document.readyState === 'complete'",
            "the page to load",
        );
    }

    pub fn click(&self, selector: &str) {
        let sel = serde_json::to_string(selector).unwrap();
        let found = self.eval(&format!(
            "(() => {{ const el = document.querySelector({sel}); if (!el) return false; el.click(); return true; }})()"
        ));
        assert_eq!(found, json!(true), "no element matches {selector}");
    }

    /// A key press as a user makes it (keydown, char, keyup), to the focused element.
    pub fn press(&self, key: &str) {
        let text = if key.chars().count() == 1 { key } else { "" };
        let code = match key {
            "ArrowDown" => 40,
            "ArrowUp" => 38,
            k => k
                .to_ascii_uppercase()
                .chars()
                .next()
                .map_or(0, |c| c as u32),
        };
        for kind in ["keyDown", "keyUp"] {
            let mut params = json!({"type": kind, "key": key, "windowsVirtualKeyCode": code});
            if kind == "keyDown" && !text.is_empty() {
                params["text"] = json!(text);
            }
            self.call("Input.dispatchKeyEvent", params);
        }
    }

    /// Moves the mouse pointer to viewport coordinates (fires pointerenter/leave as a user would).
    pub fn mouse_move(&self, x: f64, y: f64) {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        );
    }

    /// The viewport rectangle of the first match: `{x, y, width, height}`.
    pub fn rect(&self, selector: &str) -> Value {
        let sel = serde_json::to_string(selector).unwrap();
        self.eval(&format!(
            "(() => {{ const r = document.querySelector({sel}).getBoundingClientRect(); return {{x: r.x, y: r.y, width: r.width, height: r.height}}; }})()"
        ))
    }

    /// Waits (at most 2 s) for running CSS animations to finish, so geometry and screenshots
    /// show the settled page.
    pub fn settle(&self) {
        self.eval(
            "Promise.race([Promise.all(document.getAnimations().filter(a => a.playState === 'running' && a.effect && a.effect.getTiming().iterations !== Infinity).map(a => a.finished)), new Promise(r => setTimeout(r, 2000))]).then(() => true)",
        );
    }

    /// `innerText` of the first match, or `None`.
    pub fn text(&self, selector: &str) -> Option<String> {
        let sel = serde_json::to_string(selector).unwrap();
        self.eval(&format!(
            "(() => {{ const el = document.querySelector({sel}); return el ? el.innerText : null; }})()"
        ))
        .as_str()
        .map(str::to_owned)
    }

    /// Rows of a table as `[[cell, cell], ...]` (body rows only).
    pub fn table(&self, selector: &str) -> Vec<Vec<String>> {
        let sel = serde_json::to_string(&format!("{selector} tbody tr")).unwrap();
        let rows = self.eval(&format!(
            "Array.from(document.querySelectorAll({sel})).map(tr => Array.from(tr.cells).map(td => td.innerText))"
        ));
        serde_json::from_value(rows).unwrap()
    }

    /// Saves a PNG of the viewport under `target/ui-artifacts/` and returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let data = crate::util::b64(shot["data"].as_str().unwrap());
        let dir = artifacts_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, data).unwrap();
        println!("screenshot: {}", path.display());
        eprintln!("screenshot: {}", path.display());
        path
    }

    /// Events of this tab that point at a problem: script exceptions, console errors, CSP
    /// violations, failed loads.
    pub fn problems(&self) -> Vec<String> {
        let events = self.browser.events.lock().unwrap();
        events
            .iter()
            .filter(|e| e["sessionId"] == json!(self.session))
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => {
                    Some(format!("exception: {}", e["params"]["exceptionDetails"]))
                }
                "Log.entryAdded" if e["params"]["entry"]["level"] != json!("verbose") => {
                    Some(format!(
                        "log {} {}: {}",
                        e["params"]["entry"]["source"],
                        e["params"]["entry"]["level"],
                        e["params"]["entry"]["text"]
                    ))
                }
                "Runtime.consoleAPICalled" if e["params"]["type"] == json!("error") => {
                    Some(format!("console.error: {}", e["params"]["args"]))
                }
                _ => None,
            })
            .collect()
    }
}

/// `target/ui-artifacts` of this crate (or of `CARGO_TARGET_DIR`).
pub fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("ui-artifacts")
}
