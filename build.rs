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
/// script with the same names, so a position is written only in the header. Every script is
/// also a function of one Redis function library (`library.lua`, `library_function`), which
/// Baton loads with FUNCTION LOAD and calls with FCALL where Redis allows it.
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
    let mut library = String::new();
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
        let writes_nothing = WRITES_NOTHING.contains(&name);
        library_function(&mut library, &stem, name, &text[end..], &header, writes_nothing)?;
        let file = out.join(format!("{stem}.lua"));
        fs::write(&file, source)?;
        writeln!(table, "    ({name:?}, {keys}, include_str!({:?}), {writes_nothing}),", file.display().to_string())?;
    }
    table.push(']');
    fs::write(out.join("scripts.rs"), table)?;
    // The library's name and its functions' carry a hash of its text, so Baton versions that
    // share a Redis (a rolling upgrade) each call their own functions.
    let hash = format!("{:012x}", fnv1a(library.as_bytes()) >> 16);
    let library = format!("#!lua name=baton_{hash}\n{}", library.replace(FUNCTION_SUFFIX, &format!("_{hash}")));
    fs::write(out.join("library.lua"), &library)?;
    println!("cargo:rustc-env=BATON_SCRIPTS_LIBRARY=baton_{hash}");
    fs::write(
        out.join("library.rs"),
        format!("(\"baton_{hash}\", \"_{hash}\", include_str!({:?}))", out.join("library.lua").display().to_string()),
    )?;
    for (domain, code) in calls {
        fs::write(out.join(format!("calls_{domain}.rs")), code)?;
    }
    Ok(())
}

/// Scripts that write nothing: their Redis functions carry the `no-writes` flag, so they still
/// answer when Redis is at maxmemory (a function that may write is then refused before it
/// runs, where a script by EVAL is refused at its first write).
const WRITES_NOTHING: &[&str] = &[
    "readAgents",
    "readKeyLimits",
    "readDeadLetters",
    "queueStats",
    "receiverStats",
    "poolStatus",
    "findOrphans",
    "findZombies",
    "readHistory",
    "readFamily",
    "readBatch",
];

/// Stands for `_<hash of the library>` in function names until the library's text is whole.
const FUNCTION_SUFFIX: &str = "@LIBRARY_HASH@";

/// 64-bit FNV-1a: the library's version (not a security hash).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

/// Appends one script to the Redis function library (FUNCTION LOAD) as `<name>_<hash>`. The
/// helpers it includes are defined once, when the library loads, not at every call as with
/// EVALSHA, where the whole file runs each time; the call runs the prologue and the body after
/// the last include. So the lines up to the last `--@include` may only be includes and `local
/// rcall = redis.call` (redis.call does not exist while a library loads: the call binds it).
/// An include's state for one call is a bare top-level `local NAME`, set to nil at every call
/// (a call that forgets to set it up fails as it would by EVAL); a table an include makes at
/// the top level outlives the call, so it must say it is `-- kept across calls`.
fn library_function(
    library: &mut String,
    stem: &str,
    name: &str,
    body: &str,
    header: &TypedHeader,
    writes_nothing: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let lines: Vec<&str> = body.lines().collect();
    let last = lines.iter().rposition(|l| l.trim().starts_with("--@include ")).map_or(0, |i| i + 1);
    let mut head = String::new();
    for line in &lines[..last] {
        let t = line.trim();
        if t.starts_with("--@include ") {
            head.push_str(line);
            head.push('\n');
        } else if !(t.is_empty() || t == "local rcall = redis.call" || t.starts_with("--")) {
            return Err(format!(
                "{stem}.lua: `{t}` comes before the last --@include; only includes and `local rcall = redis.call` may (a Redis function defines them once)"
            )
            .into());
        }
    }
    let hoisted = inline_includes(stem, &head)?;
    let mut state = Vec::new();
    for line in hoisted.lines() {
        let Some(rest) = line.strip_prefix("local ") else { continue };
        if ident_lua(rest.trim_end()) {
            state.push(rest.trim_end().to_string());
        } else if rest.contains("= {") && !line.contains("-- kept across calls") {
            return Err(format!(
                "{stem}.lua: an include makes a table at its top level (`{line}`): a Redis function keeps it across calls; make it per call (a field of its state), or mark it `-- kept across calls`"
            )
            .into());
        }
    }
    let flags = if writes_nothing { "'allow-cross-slot-keys', 'no-writes'" } else { "'allow-cross-slot-keys'" };
    let resets: String = state.iter().map(|v| format!("{v} = nil\n")).collect();
    let tail: String = lines[last..].iter().map(|l| format!("{l}\n")).collect();
    // Includes read K and A (the call's KEYS and ARGV by name): the block declares them, and
    // each call binds them.
    let prologue = header.lua_prologue().replacen("local K = ", "K = ", 1).replacen("local A = ", "A = ", 1);
    writeln!(
        library,
        "do\nlocal rcall, K, A\n{hoisted}redis.register_function{{ function_name = '{name}{FUNCTION_SUFFIX}', flags = {{ {flags} }}, callback = function(KEYS, ARGV)\nrcall = redis.call\n{resets}{prologue}{tail}end }}\nend"
    )?;
    Ok(())
}

/// A Lua name (`F`, `finishedAwaited`).
fn ident_lua(word: &str) -> bool {
    !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !word.starts_with(|c: char| c.is_ascii_digit())
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
