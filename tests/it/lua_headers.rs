//! Keeps the Lua scripts' header blocks honest: every script documents exactly the KEYS and
//! ARGV it uses, its KEYS count matches its file name (`verbNoun-N.lua`), and it documents its
//! output. A drifted header fails here.

use std::{collections::BTreeSet, fs};

use regex::Regex;

#[test]
fn every_script_header_matches_its_keys_and_argv() {
    let header_re = Regex::new(r"(?s)^--\[\[(.*?)\]\]").unwrap();
    // ARGV[i], ARGV[i..j] (a fixed range) or ARGV[i..] (the rest, read through #ARGV).
    let declared_re = Regex::new(r"(?m)^\s*(KEYS|ARGV)\[(\d+)(\.\.(\d*))?\]").unwrap();
    let used_re = Regex::new(r"(KEYS|ARGV)\[(\d+)\]").unwrap();
    let policy_re = Regex::new(r"readPolicy\((\d+)\)").unwrap();
    let flow_re = Regex::new(r"flowKeys\((\d+),").unwrap();
    let truthy_zero =
        Regex::new(r"not rcall\('(HEXISTS|EXISTS|SISMEMBER|ZREM|HDEL|DEL|ZCARD|HLEN|ZCOUNT|HSETNX)'").unwrap();
    let include_re = Regex::new(r"(?m)^--@include (\w+)").unwrap();
    let built_key_re = Regex::new(r"'[^']*:'\s*\.\.").unwrap();
    let mut checked = 0;
    for entry in fs::read_dir("lua").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "lua") {
            continue;
        }
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&path).unwrap();
        let n: usize = file.trim_end_matches(".lua").rsplit_once('-').expect("verbNoun-N.lua").1.parse().expect("N");
        let header =
            header_re.captures(&text).unwrap_or_else(|| panic!("{file}: no --[[ header ]] block"))[1].to_string();
        let body = &text[header_re.find(&text).unwrap().end()..];
        assert!(header.contains("Input:"), "{file}: header has no Input: section");
        assert!(header.contains("Output:"), "{file}: header has no Output: section");

        let mut declared_keys = BTreeSet::new();
        let mut declared_argv = BTreeSet::new();
        let mut argv_rest = None;
        for c in declared_re.captures_iter(&header) {
            let i: usize = c[2].parse().unwrap();
            let end = c.get(4).map(|m| m.as_str().parse::<usize>().ok());
            match (&c[1], end) {
                ("KEYS", _) => assert!(declared_keys.insert(i), "{file}: KEYS[{i}] documented twice"),
                ("ARGV", None) => assert!(declared_argv.insert(i), "{file}: ARGV[{i}] documented twice"),
                ("ARGV", Some(Some(j))) => {
                    for n in i..=j {
                        assert!(declared_argv.insert(n), "{file}: ARGV[{n}] documented twice");
                    }
                }
                ("ARGV", Some(None)) => argv_rest = Some(i),
                _ => unreachable!(),
            }
        }
        assert_eq!(declared_keys, (1..=n).collect(), "{file}: header must document KEYS[1..={n}]");

        // flowKeys(i, …) names the eight KEYS from i (lua/includes/finished.lua).
        let flow_keys: BTreeSet<usize> = flow_re
            .captures_iter(body)
            .flat_map(|c| {
                let i: usize = c[1].parse().unwrap();
                i..i + 8
            })
            .collect();
        let used_keys: BTreeSet<usize> = used_re
            .captures_iter(body)
            .filter(|c| &c[1] == "KEYS")
            .map(|c| c[2].parse().unwrap())
            .chain(flow_keys)
            .collect();
        let used_argv: BTreeSet<usize> =
            used_re.captures_iter(body).filter(|c| &c[1] == "ARGV").map(|c| c[2].parse().unwrap()).collect();
        assert_eq!(used_keys, declared_keys, "{file}: KEYS used in the body differ from the header");
        // readPolicy(i) reads the eight ARGV from i.
        let mut used_argv = used_argv;
        for c in policy_re.captures_iter(body) {
            let i: usize = c[1].parse().unwrap();
            used_argv.extend(i..i + 8);
        }
        let fixed_used: BTreeSet<usize> =
            used_argv.iter().copied().filter(|i| argv_rest.is_none_or(|r| *i < r)).collect();
        assert_eq!(fixed_used, declared_argv, "{file}: ARGV used in the body differ from the header");
        if let Some(rest) = argv_rest {
            assert!(body.contains("#ARGV"), "{file}: documents ARGV[{rest}..] but never reads the rest of ARGV");
            assert!(declared_argv.iter().all(|i| *i < rest), "{file}: fixed ARGV after the ARGV[{rest}..] range");
        }
        assert!(!body.contains("..KEYS") && !built_key_re.is_match(body), "{file}: builds a key name in Lua");
        // These commands answer 0 or 1, and 0 is true in Lua: `not rcall(...)` would never hold.
        assert!(!truthy_zero.is_match(&text), "{file}: `not rcall(...)` on a command that answers 0/1");
        for inc in include_re.captures_iter(body) {
            assert!(
                fs::metadata(format!("lua/includes/{}.lua", &inc[1])).is_ok(),
                "{file}: missing include {}",
                &inc[1]
            );
        }
        checked += 1;
    }
    for entry in fs::read_dir("lua/includes").unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        assert!(!truthy_zero.is_match(&text), "{}: `not rcall(...)` on a command that answers 0/1", path.display());
    }
    // The typed scripts of the domain folders: build.rs checks their headers against their
    // bodies and calls; the rules beyond the header hold for them too.
    let mut typed = 0;
    for dir in fs::read_dir("lua").unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
        if dir.ends_with("includes") {
            continue;
        }
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = fs::read_to_string(&path).unwrap();
            let file = path.display();
            assert!(!truthy_zero.is_match(&text), "{file}: `not rcall(...)` on a command that answers 0/1");
            assert!(!text.contains("..KEYS") && !built_key_re.is_match(&text), "{file}: builds a key name in Lua");
            assert!(text.contains("Output ->"), "{file}: a typed script names its reply type");
            typed += 1;
        }
    }
    assert!(checked + typed >= 62, "expected every script, found {checked} in lua/ and {typed} typed");
}
