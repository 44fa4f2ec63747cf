//! The module layering of docs/ARCHITECTURE.md, checked on the source: which top-level modules of
//! `src/` (a file `src/x.rs` or a folder `src/x/`) each one names as `crate::x`, outside comments
//! and unit tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn imports() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel.iter().next().unwrap().to_str().unwrap();
            let module = first.trim_end_matches(".rs").to_owned();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            let used = graph.entry(module.clone()).or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for name in crate_paths(line) {
                    if name != module {
                        used.insert(name);
                    }
                }
            }
        }
    }
    graph
}

/// The first segment of every `crate::` path on a line (`crate::{a, b::c}` counts both).
fn crate_paths(line: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in line.match_indices("crate::") {
        let rest = &line[i + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or_default();
                out.extend(group.split(',').map(ident).filter(|s| !s.is_empty()));
            }
            None => out.push(ident(rest)),
        }
    }
    out
}

#[test]
fn the_parser_finds_plain_and_grouped_paths() {
    assert_eq!(crate_paths("use crate::wire::url::HttpUrl;"), ["wire"]);
    assert_eq!(
        crate_paths("use crate::{model::X, clock};  crate::ids::f()"),
        ["model", "clock", "ids"]
    );
}

#[test]
fn storage_and_the_pure_modules_import_nothing_above_them() {
    let graph = imports();
    let above = [
        "cli", "config", "state", "server", "router", "http", "pages", "web", "bins", "forward",
        "send",
    ];
    for module in [
        "storage", "model", "wire", "render", "verify", "signing", "client", "rawhead", "clock",
    ] {
        let used = graph
            .get(module)
            .unwrap_or_else(|| panic!("no module {module}"));
        for upper in above {
            assert!(!used.contains(upper), "{module} imports {upper}: {used:?}");
        }
    }
}

#[test]
fn only_config_and_the_client_subcommands_see_cli_types() {
    let graph = imports();
    let users: Vec<&String> = graph
        .iter()
        .filter(|(_, used)| used.contains("cli"))
        .map(|(module, _)| module)
        .collect();
    // `send` and `probe` (in `send`) are clients run by hand; their flags are their input.
    // (`forward` takes `forward::Options`, converted from its flags in `cli`.)
    assert_eq!(users, ["config", "send"]);
}

#[test]
fn http_and_pages_meet_only_in_the_router_and_in_bins() {
    let graph = imports();
    // Each side runs its use cases through `bins` and shares plumbing through `web`; only the
    // router (above both) names them both.
    assert!(!graph["http"].contains("pages"), "{:?}", graph["http"]);
    assert!(!graph["pages"].contains("http"), "{:?}", graph["pages"]);
    for lower in ["bins", "web", "storage", "state"] {
        for upper in ["http", "pages", "router", "server"] {
            assert!(
                !graph[lower].contains(upper),
                "{lower} imports {upper}: {:?}",
                graph[lower]
            );
        }
    }
    // The service layer hands back its own errors; the HTTP shapes of them are `web`'s.
    assert!(!graph["bins"].contains("web"), "{:?}", graph["bins"]);
}

#[test]
fn no_import_cycles() {
    let graph = imports();
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    // Groups of modules that all reach each other (strongly connected), of more than one.
    let mut groups: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for a in graph.keys() {
        let from_a = reach(a);
        let group: BTreeSet<String> = from_a
            .iter()
            .filter(|b| reach(b).contains(a))
            .cloned()
            .chain([a.clone()])
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    assert_eq!(
        groups,
        BTreeSet::new(),
        "modules that import each other (an arrow must point one way)\n{graph:#?}"
    );
}
