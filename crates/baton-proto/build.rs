//! Generates the gRPC server and client stubs of `proto/baton/v1/` (vendored protoc, so a
//! fresh machine needs no system package).

use std::{env, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(env::var("OUT_DIR")?);
    if env::var_os("PROTOC").is_none() {
        env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    let root = PathBuf::from("../../proto");
    let mut protos: Vec<PathBuf> =
        fs::read_dir(root.join("baton/v1"))?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    protos.retain(|p| p.extension().is_some_and(|x| x == "proto"));
    protos.sort();
    println!("cargo:rerun-if-changed=../../proto");
    tonic_prost_build::configure()
        // Undecodable requests are INVALID_ARGUMENT, not tonic's INTERNAL (src/codec.rs).
        .codec_path("crate::codec::ProtoCodec")
        .file_descriptor_set_path(out.join("baton_descriptor.bin"))
        .compile_protos(&protos, &[root, protoc_bin_vendored::include_path()?])?;
    Ok(())
}
