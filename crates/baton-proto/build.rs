//! Generates the gRPC stubs of `baton.v1` (clients always; servers with the `server` feature).
//! The protos come from the workspace's `proto/` when this crate is built inside the Baton
//! repository, else from the copy packaged with the crate (`proto/`, kept equal to the
//! workspace's by `tests/protos.rs`). protoc: `$PROTOC` if set, else the vendored one (so a
//! fresh machine needs no system package).

use std::{
    env, fs,
    path::{Path, PathBuf},
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(env::var("OUT_DIR")?);
    if env::var_os("PROTOC").is_none() {
        env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    let workspace = Path::new("../../proto");
    let root = if workspace.join("baton/v1").is_dir() { workspace } else { Path::new("proto") };
    let mut protos: Vec<PathBuf> =
        fs::read_dir(root.join("baton/v1"))?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    protos.retain(|p| p.extension().is_some_and(|x| x == "proto"));
    protos.sort();
    println!("cargo:rerun-if-changed={}", root.display());
    // Every message names its protobuf type (`prost::Name`), so Baton can write any of them as
    // proto3 JSON by its descriptor.
    let mut config = tonic_prost_build::Config::new();
    config.enable_type_names();
    tonic_prost_build::configure()
        .build_server(env::var_os("CARGO_FEATURE_SERVER").is_some())
        .build_transport(false)
        // Undecodable requests are INVALID_ARGUMENT, not tonic's INTERNAL (src/codec.rs).
        .codec_path("crate::codec::ProtoCodec")
        .file_descriptor_set_path(out.join("baton_descriptor.bin"))
        .compile_with_config(config, &protos, &[root.to_path_buf(), protoc_bin_vendored::include_path()?])?;
    Ok(())
}
