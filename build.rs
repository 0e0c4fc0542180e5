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
/// of KEYS from the file name (`verbNoun-N.lua`).
fn inline_scripts(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=lua");
    let mut entries: Vec<PathBuf> = fs::read_dir("lua")?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.retain(|p| p.extension().is_some_and(|x| x == "lua"));
    entries.sort();
    let mut table = String::from("&[\n");
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (name, keys) = stem.rsplit_once('-').ok_or_else(|| format!("{stem}.lua: name must be verbNoun-N.lua"))?;
        let keys: usize = keys.parse().map_err(|_| format!("{stem}.lua: N must be a number"))?;
        let mut source = String::new();
        for line in fs::read_to_string(&path)?.lines() {
            match line.trim().strip_prefix("--@include ") {
                Some(include) => {
                    let file = format!("lua/includes/{}.lua", include.trim());
                    let text = fs::read_to_string(&file).map_err(|e| format!("{stem}.lua: {file}: {e}"))?;
                    source.push_str(&text);
                }
                None => {
                    source.push_str(line);
                    source.push('\n');
                }
            }
        }
        let file = out.join(format!("{stem}.lua"));
        fs::write(&file, source)?;
        writeln!(table, "    ({name:?}, {keys}, include_str!({:?})),", file.display().to_string())?;
    }
    table.push(']');
    fs::write(out.join("scripts.rs"), table)?;
    Ok(())
}
