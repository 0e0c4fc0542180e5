//! Keeps the layers of `src/` honest: every file imports only from its own room or from rooms
//! below it, so the import graph has no circle and no arrow back up. The order is the table
//! below, which ARCHITECTURE.md's code map draws; a `crate::<room>` path that names a room
//! above the file's own fails here with the file, the line and both rooms.

use std::{fs, path::Path};

use regex::Regex;

/// The rooms of `src/`, lowest first. A room may use any room before it, and itself.
const LAYERS: &[&[&str]] = &[
    // Leaves: configuration, the one error type, build facts, traces.
    &["config", "error", "build_info", "trace", "keda_pb", "pb", "client"],
    // The store core: connection, typed script calls, breakers, keys, wake-ups.
    &["store"],
    // What every service shares: auth and scopes, validation, admission, observing a call.
    &["rpc"],
    // Domains that others build on.
    &["flows", "pools", "elections"],
    &["queues"],
    &["receivers"],
    // The operator's calls on any source.
    &["admin"],
    // What runs beside the calls: sweeps, the monitor, background leadership.
    &["runtime"],
    // How callers reach Baton beyond the services (and /metrics), and the operator's tools.
    &["edge", "tools", "telemetry"],
    // The assembly of a replica.
    &["server", "lib", "main", "bin"],
    // Test code only: the crate's harness of real redis-servers (`#[cfg(test)]`).
    &["testing"],
];

fn layer_of(room: &str) -> Option<usize> {
    LAYERS.iter().position(|rooms| rooms.contains(&room))
}

/// The room of a file under `src/`: its folder, or its own name for a file at the top.
fn room_of(path: &Path) -> String {
    let rel = path.strip_prefix("src").unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_file_imports_only_from_its_room_or_below() {
    // `crate::room`, also inside a `use crate::{room::…, room2}` tree.
    let path_re = Regex::new(r"crate::([a-z_]+)").unwrap();
    let tree_re = Regex::new(r"(?s)use crate::\{(.*?)\};").unwrap();
    let tree_item_re = Regex::new(r"(?m)(?:^|[{,]\s*)([a-z_]+)(?:::|\s*[,}]|$)").unwrap();
    let mut files = Vec::new();
    walk(Path::new("src"), &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in files {
        // A room's test file (`<room>/tests.rs`, `#[cfg(test)]`) may reach any room too.
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let room = room_of(&file);
        let own = layer_of(&room).unwrap_or_else(|| panic!("{}: room {room} is in no layer", file.display()));
        let text = fs::read_to_string(&file).unwrap();
        // A file's unit tests (its `#[cfg(test)] mod tests`, at the end by convention) may reach
        // any room: they are not part of the build that ships.
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(at) => text[..at].to_string(),
            None => text,
        };
        let mut named: Vec<(usize, String)> = Vec::new();
        for m in path_re.captures_iter(&text) {
            let at = m.get(0).unwrap().start();
            named.push((at, m[1].to_string()));
        }
        for t in tree_re.captures_iter(&text) {
            let at = t.get(0).unwrap().start();
            // Only the top level of the tree names rooms.
            let mut depth = 0;
            let mut top = String::new();
            for c in t[1].chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ if depth == 0 => top.push(c),
                    _ => {}
                }
            }
            for m in tree_item_re.captures_iter(&top) {
                named.push((at, m[1].to_string()));
            }
        }
        for (at, used) in named {
            let Some(theirs) = layer_of(&used) else { continue };
            checked += 1;
            if theirs > own {
                let line = text[..at].lines().count().max(1);
                violations
                    .push(format!("{}:{line}: {room} (layer {own}) uses {used} (layer {theirs})", file.display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} imports checked: the pattern no longer finds them");
    violations.sort();
    violations.dedup();
    assert!(violations.is_empty(), "{} imports run back up:\n{}", violations.len(), violations.join("\n"));
}
