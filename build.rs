//! Build step: inlines the Lua helpers of `lua/includes/` into each script of `lua/`, writing a
//! table of scripts (name, number of KEYS, source) that `store::scripts` loads; generates KEDA's
//! external scaler stubs (`proto/keda`); records the build's commit and compiler. Baton's own
//! gRPC stubs are the `baton-proto` crate's.

use std::{env, fmt::Write as _, fs, path::Path, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(env::var("OUT_DIR")?);
    inline_scripts(&out)?;
    keda(&out)?;
    build_info();
    Ok(())
}

/// KEDA's external scaler: server and client stubs (the tests call it as KEDA does).
fn keda(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/keda");
    if env::var_os("PROTOC").is_none() {
        env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    tonic_prost_build::configure()
        .build_transport(false)
        // Undecodable requests are INVALID_ARGUMENT, as on Baton's own services.
        .codec_path("baton_proto::codec::ProtoCodec")
        .file_descriptor_set_path(out.join("keda_descriptor.bin"))
        .compile_protos(&["proto/keda/externalscaler.proto"], &["proto"])?;
    Ok(())
}

/// What `baton version` and the `baton_build_info` metric report: the commit (from
/// `BATON_BUILD_COMMIT`, else git, else "unknown"; uncommitted changes are not noted), the
/// compiler, target and profile.
fn build_info() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    println!("cargo:rerun-if-env-changed=BATON_BUILD_COMMIT");
    let commit = match env::var("BATON_BUILD_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // Built again when HEAD moves, so a binary never names a commit it was not built from.
            // Cargo reruns a build script on every build while a path it watches is missing, so
            // only paths that exist are watched: the branch's loose ref file or, when the ref is
            // packed, packed-refs and HEAD's reflog (a commit then writes a new loose ref, which
            // no watched path names, and appends to the reflog).
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                let mut watch = vec![format!("{dir}/HEAD")];
                if let Some(reference) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]).filter(|r| r != "HEAD") {
                    if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
                        let loose = format!("{common}/{reference}");
                        if Path::new(&loose).is_file() {
                            watch.push(loose);
                        } else {
                            watch.push(format!("{common}/packed-refs"));
                            watch.push(format!("{dir}/logs/HEAD"));
                        }
                    }
                }
                for path in watch.into_iter().filter(|p| Path::new(p).exists()) {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
            git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=BATON_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=BATON_BUILD_RUSTC={rustc}");
    println!("cargo:rustc-env=BATON_BUILD_TARGET={}", env::var("TARGET").unwrap_or_default());
    println!("cargo:rustc-env=BATON_BUILD_PROFILE={}", env::var("PROFILE").unwrap_or_default());
}

/// Replaces every `--@include NAME` line with `lua/includes/NAME.lua`, and records the number
/// of KEYS from the file name (`verbNoun-N.lua`). Every script lives in a domain folder
/// (`lua/<domain>/`, a script at the top of `lua/` fails the build) and is typed: their header is parsed (`typed_header`), a prologue binding every KEYS and ARGV
/// to its name is put in front of the body, and `calls_<domain>.rs` gets one Rust struct per
/// script with the same names, so a position is written only in the header.
fn inline_scripts(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=lua");
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    for entry in fs::read_dir("lua")? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if path.is_dir() && name != "includes" {
            println!("cargo:rerun-if-changed={}", path.display());
            let mut domain: Vec<PathBuf> =
                fs::read_dir(&path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
            domain.retain(|p| p.extension().is_some_and(|x| x == "lua"));
            entries.extend(domain.into_iter().map(|p| (name.clone(), p)));
        } else if path.extension().is_some_and(|x| x == "lua") {
            // Every script is typed: it lives in the folder of the domain whose store calls it.
            return Err(format!("{}: a script belongs in a domain folder, lua/<domain>/ (see ARCHITECTURE.md, \"The typed script boundary\")", path.display()).into());
        }
    }
    entries.sort_by(|a, b| a.1.file_name().cmp(&b.1.file_name()));
    let mut table = String::from("&[\n");
    let mut calls: std::collections::BTreeMap<String, String> = Default::default();
    for (domain, path) in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (name, keys) = stem.rsplit_once('-').ok_or_else(|| format!("{stem}.lua: name must be verbNoun-N.lua"))?;
        let keys: usize = keys.parse().map_err(|_| format!("{stem}.lua: N must be a number"))?;
        let text = fs::read_to_string(&path)?;
        let mut source = String::new();
        let end = text.find("]]").map(|i| i + 2).unwrap_or(0);
        let body = inline_includes(&stem, &text[end..])?;
        let header = typed_header(&path, name, keys, &text, &body)?;
        source.push_str(&text[..end]);
        source.push('\n');
        source.push_str(&header.lua_prologue());
        source.push_str(&body);
        header.rust_call(calls.entry(domain).or_default(), &path)?;
        let file = out.join(format!("{stem}.lua"));
        fs::write(&file, source)?;
        writeln!(table, "    ({name:?}, {keys}, include_str!({:?})),", file.display().to_string())?;
    }
    table.push(']');
    fs::write(out.join("scripts.rs"), table)?;
    for (domain, code) in calls {
        fs::write(out.join(format!("calls_{domain}.rs")), code)?;
    }
    Ok(())
}

/// `body` with every `--@include NAME` line replaced by `lua/includes/NAME.lua`. An include
/// must not read a position (`KEYS[i]`/`ARGV[i]`): the script passes it names.
fn inline_includes(stem: &str, body: &str) -> Result<String, Box<dyn std::error::Error>> {
    let mut source = String::new();
    for line in body.lines() {
        match line.trim().strip_prefix("--@include ") {
            Some(include) => {
                let file = format!("lua/includes/{}.lua", include.trim());
                let text = fs::read_to_string(&file).map_err(|e| format!("{stem}.lua: {file}: {e}"))?;
                if text.contains("KEYS[") || text.contains("ARGV[") {
                    return Err(format!(
                        "{stem}.lua: {file} reads KEYS or ARGV by position; a typed script passes it names"
                    )
                    .into());
                }
                source.push_str(&text);
            }
            None => {
                source.push_str(line);
                source.push('\n');
            }
        }
    }
    Ok(source)
}

/// One ARGV of a typed script: its name and type, as the header declares them. A list of
/// items (`ARGV[n..] name (items)`, always last) has `item` fields, each a name and a type.
struct Arg {
    name: String,
    kind: String,
    item: Vec<(String, String)>,
}

/// The typed signature of a script, read from its header:
///
/// ```text
///   Input:
///     KEYS of PoolKeys                                     (optional: the keys are fields of
///                                                           that Rust struct, by these names)
///     KEYS[1] term       what the key holds                (every KEYS[i], in order)
///     ARGV[1] candidate (str)   what it means              (every ARGV[i], in order, typed)
///     ARGV[2..] resources (items)  one item per resource:  (a list of items, last)
///       id (str)         the resource's id                 (each item's fields, in order)
///   Output -> Campaigned: what the script answers          (the Rust type of the reply)
/// ```
///
/// Types: `str`, `bytes`, `int` (i64), `uint` (u64), `num` (f64), `bool` ("1"/"0").
struct TypedHeader {
    script: String,
    /// The Rust struct whose fields are the KEYS, when the header says `KEYS of Type`.
    keys_of: Option<String>,
    keys: Vec<String>,
    argv: Vec<Arg>,
    output: String,
}

const ARG_KINDS: &[(&str, &str, &str)] = &[
    // (header type, Rust field type, Lua conversion of ARGV[i])
    ("str", "&'a str", "%"),
    ("bytes", "&'a [u8]", "%"),
    ("int", "i64", "tonumber(%)"),
    ("uint", "u64", "tonumber(%)"),
    ("num", "f64", "tonumber(%)"),
    ("bool", "bool", "(% == '1')"),
];

fn kind_of(word: Option<&str>) -> Option<String> {
    word.and_then(|w| w.strip_prefix('(')?.strip_suffix(')'))
        .filter(|k| ARG_KINDS.iter().any(|(name, _, _)| name == k))
        .map(str::to_string)
}

fn ident(word: &str) -> bool {
    !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && !word.starts_with(|c: char| c.is_ascii_digit())
}

/// `body` is the script after its header with its includes inlined, so a name an include reads
/// (`flowKeys(K, ...)` reads `K.results`) counts as read by the script.
fn typed_header(path: &Path, name: &str, n_keys: usize, text: &str, body: &str) -> Result<TypedHeader, String> {
    let file = path.display();
    let header = text
        .strip_prefix("--[[")
        .and_then(|rest| rest.split_once("]]"))
        .map(|(h, _)| h)
        .ok_or_else(|| format!("{file}: a typed script starts with a --[[ header ]]"))?;
    let mut keys = Vec::new();
    let mut keys_of = None;
    let mut argv: Vec<Arg> = Vec::new();
    let mut output = None;
    let mut in_items = false;
    for raw in header.lines() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("Output ->") {
            let ty = rest.split(':').next().unwrap_or("").trim();
            if ty.is_empty() || !ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("{file}: `Output -> Type:` names the Rust type of the reply"));
            }
            output = Some(ty.to_string());
            in_items = false;
            continue;
        }
        if let Some(ty) = line.strip_prefix("KEYS of ") {
            keys_of = Some(ty.trim().to_string());
            continue;
        }
        let Some((which, rest)) = line.split_once('[').filter(|(w, _)| *w == "KEYS" || *w == "ARGV") else {
            // An item's field: `name (type)  what it is`, under an `(items)` line.
            let mut words = line.split_whitespace();
            if let (true, Some(field), Some(kind)) = (in_items, words.next(), kind_of(words.clone().next())) {
                if ident(field) {
                    argv.last_mut().unwrap().item.push((field.to_string(), kind));
                }
            } else if line.is_empty() {
                in_items = false;
            }
            continue;
        };
        in_items = false;
        let (index, rest) = rest.split_once(']').ok_or_else(|| format!("{file}: {line}: no closing ]"))?;
        let (index, open) = match index.strip_suffix("..") {
            Some(i) => (i, true),
            None => (index, false),
        };
        let index: usize =
            index.parse().map_err(|_| format!("{file}: {line}: a typed script names one position per line"))?;
        let mut words = rest.split_whitespace();
        let field = words.next().ok_or_else(|| format!("{file}: {line}: no name"))?.to_string();
        if !ident(&field) {
            return Err(format!("{file}: {line}: names are camelCase words"));
        }
        if which == "KEYS" {
            if index != keys.len() + 1 || open {
                return Err(format!("{file}: KEYS[{index}] out of order (expected KEYS[{}])", keys.len() + 1));
            }
            keys.push(field);
            continue;
        }
        if index != argv.len() + 1 || argv.last().is_some_and(|a| a.kind == "items") {
            return Err(format!("{file}: ARGV[{index}] out of order (expected ARGV[{}], items last)", argv.len() + 1));
        }
        let kind = if open {
            (words.next() == Some("(items)"))
                .then(|| "items".to_string())
                .ok_or_else(|| format!("{file}: ARGV[{index}..] {field}: a list is `(items)`, its fields below"))?
        } else {
            kind_of(words.next()).ok_or_else(|| {
                format!("{file}: ARGV[{index}] {field}: give its type after the name: (str) (bytes) (int) (uint) (num) (bool)")
            })?
        };
        in_items = kind == "items";
        argv.push(Arg { name: field, kind, item: Vec::new() });
    }
    if keys.len() != n_keys {
        return Err(format!("{file}: the header names {} KEYS, the file name says {n_keys}", keys.len()));
    }
    if let Some(list) = argv.iter().find(|a| a.kind == "items" && a.item.is_empty()) {
        return Err(format!("{file}: {} (items) lists no fields", list.name));
    }
    let mut seen = std::collections::BTreeSet::new();
    for field in keys.iter().chain(argv.iter().map(|a| &a.name)) {
        if !seen.insert(snake(field)) {
            return Err(format!("{file}: {field} is named twice (KEYS and ARGV share one namespace)"));
        }
    }
    let output = output.ok_or_else(|| format!("{file}: the header has no `Output -> Type:` line"))?;
    // Positions live in the header only: the body reads the names the prologue binds.
    for word in ["KEYS[", "ARGV[", "#ARGV", "#KEYS"] {
        if body.contains(word) {
            return Err(format!("{file}: the body reads {word}: use the names of the header (K.name, A.name)"));
        }
    }
    // Every name the body reads is declared, and every declared name is read (unless the body
    // hands the whole table on, as `local k = K`).
    for (table, declared) in [("K", keys.iter().collect::<Vec<_>>()), ("A", argv.iter().map(|a| &a.name).collect())] {
        let used = names_read(body, table);
        if let Some(unknown) = used.iter().find(|u| !declared.iter().any(|d| d == u)) {
            return Err(format!("{file}: the body reads {table}.{unknown}, which the header does not declare"));
        }
        let whole = body.match_indices(&format!("= {table}\n")).next().is_some();
        if let Some(unused) = declared.iter().find(|d| !whole && !used.contains(d.as_str())) {
            return Err(format!("{file}: the header declares {unused}, which the body never reads ({table}.{unused})"));
        }
    }
    Ok(TypedHeader { script: name.to_string(), keys_of, keys, argv, output })
}

/// `historyKeep` -> `history_keep`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `campaignLeader` -> `CampaignLeader`.
fn pascal(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|c| c.to_ascii_uppercase()).into_iter().chain(chars).collect()
}

fn rust_type(kind: &str) -> &'static str {
    ARG_KINDS.iter().find(|(k, _, _)| *k == kind).map(|(_, rust, _)| *rust).unwrap_or("()")
}

fn lua_value(kind: &str, at: &str) -> String {
    let (_, _, lua) = ARG_KINDS.iter().find(|(k, _, _)| *k == kind).unwrap();
    lua.replace('%', at)
}

impl TypedHeader {
    /// `local K = { term = KEYS[1], ... }` and `local A = { ttlMs = tonumber(ARGV[2]), ... }`;
    /// a list of items becomes `A.name`, an array of tables with the items' fields.
    fn lua_prologue(&self) -> String {
        let keys: Vec<String> = self.keys.iter().enumerate().map(|(i, k)| format!("{k} = KEYS[{}]", i + 1)).collect();
        let mut argv = Vec::new();
        let mut lists = String::new();
        for (i, a) in self.argv.iter().enumerate() {
            if a.kind == "items" {
                argv.push(format!("{} = {{}}", a.name));
                let fields: Vec<String> = a
                    .item
                    .iter()
                    .enumerate()
                    .map(|(j, (f, kind))| format!("{f} = {}", lua_value(kind, &format!("ARGV[i + {j}]"))))
                    .collect();
                lists.push_str(&format!(
                    "for i = {}, #ARGV, {} do A.{name}[#A.{name} + 1] = {{ {} }} end\n",
                    i + 1,
                    a.item.len(),
                    fields.join(", "),
                    name = a.name
                ));
            } else {
                argv.push(format!("{} = {}", a.name, lua_value(&a.kind, &format!("ARGV[{}]", i + 1))));
            }
        }
        format!("local K = {{ {} }}\nlocal A = {{ {} }}\n{lists}", keys.join(", "), argv.join(", "))
    }

    /// The struct that calls this script: its KEYS (a field each, or `keys: &KeysOf`), then a
    /// field per ARGV, in the header's order.
    fn rust_call(&self, code: &mut String, path: &Path) -> std::fmt::Result {
        let ty = pascal(&self.script);
        let lifetime = !self.keys.is_empty()
            || self.argv.iter().any(|a| a.kind != "int" && a.kind != "uint" && a.kind != "num" && a.kind != "bool");
        let gen = if lifetime { "<'a>" } else { "" };
        for a in self.argv.iter().filter(|a| a.kind == "items") {
            writeln!(code, "/// One item of `{}` in a call of `{}`.", a.name, self.script)?;
            writeln!(code, "pub(crate) struct {ty}{}<'a> {{", pascal(&a.name))?;
            for (f, kind) in &a.item {
                writeln!(code, "    pub(crate) {}: {},", snake(f), rust_type(kind))?;
            }
            writeln!(code, "    pub(crate) _item: std::marker::PhantomData<&'a ()>,\n}}\n")?;
        }
        writeln!(code, "/// A call of `{}` ({}): fields in the order of its header.", self.script, path.display())?;
        writeln!(code, "pub(crate) struct {ty}{gen} {{")?;
        match &self.keys_of {
            Some(of) => writeln!(code, "    /// KEYS: {}.\n    pub(crate) keys: &'a {of},", self.keys.join(", "))?,
            None => {
                for k in &self.keys {
                    writeln!(code, "    /// KEYS: `{k}`.\n    pub(crate) {}: &'a str,", snake(k))?;
                }
            }
        }
        for a in &self.argv {
            let rust = if a.kind == "items" {
                format!("Vec<{ty}{}<'a>>", pascal(&a.name))
            } else {
                rust_type(&a.kind).to_string()
            };
            writeln!(code, "    /// ARGV: `{}` ({}).\n    pub(crate) {}: {rust},", a.name, a.kind, snake(&a.name))?;
        }
        writeln!(code, "}}\n")?;
        writeln!(code, "impl{gen} crate::store::scripts::ScriptCall for {ty}{gen} {{")?;
        writeln!(code, "    const NAME: &'static str = {:?};", self.script)?;
        writeln!(code, "    type Reply = super::{};", self.output)?;
        let prefix = if self.keys_of.is_some() { "self.keys." } else { "self." };
        let keys: Vec<String> = self.keys.iter().map(|k| format!("&{prefix}{}", snake(k))).collect();
        writeln!(code, "    fn keys(&self) -> Vec<&str> {{\n        vec![{}]\n    }}", keys.join(", "))?;
        writeln!(code, "    fn argv(&self) -> crate::store::scripts::Args {{")?;
        if self.argv.is_empty() {
            return writeln!(code, "        crate::store::scripts::Args::new()\n    }}\n}}\n");
        }
        writeln!(code, "        let mut args = crate::store::scripts::Args::new();")?;
        let push = |code: &mut String, value: String, kind: &str| {
            if kind == "bool" {
                writeln!(code, "        args.push(if {value} {{ \"1\" }} else {{ \"0\" }});")
            } else {
                writeln!(code, "        args.push({value});")
            }
        };
        for a in &self.argv {
            if a.kind == "items" {
                writeln!(code, "        for item in &self.{} {{", snake(&a.name))?;
                for (f, kind) in &a.item {
                    push(code, format!("item.{}", snake(f)), kind)?;
                }
                writeln!(code, "        }}")?;
            } else {
                push(code, format!("self.{}", snake(&a.name)), &a.kind)?;
            }
        }
        writeln!(code, "        args\n    }}\n}}\n")
    }
}

/// The names a Lua body reads from `table` (`K` or `A`) as `K.name`.
fn names_read(body: &str, table: &str) -> std::collections::BTreeSet<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let pattern = format!("{table}.");
    let mut out = std::collections::BTreeSet::new();
    for (at, _) in body.match_indices(&pattern) {
        if body[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let name: String = body[at + pattern.len()..].chars().take_while(|c| ident(*c)).collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}
