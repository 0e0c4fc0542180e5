//! The protos packaged with the crate (`proto/`) are the workspace's (`../../proto`), so the
//! published crate builds the contract the server serves. After changing a proto:
//! `cp proto/baton/v1/*.proto crates/baton-proto/proto/baton/v1/`.

use std::{fs, path::Path};

#[test]
fn packaged_protos_are_the_workspaces() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.join("../../proto/baton/v1");
    if !workspace.is_dir() {
        return; // built from the package: only the copy exists
    }
    let list = |dir: &Path| {
        let mut names: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    let packaged = crate_dir.join("proto/baton/v1");
    assert_eq!(list(&workspace), list(&packaged), "the same proto files");
    for name in list(&workspace) {
        let (a, b) = (fs::read(workspace.join(&name)).unwrap(), fs::read(packaged.join(&name)).unwrap());
        assert!(
            a == b,
            "crates/baton-proto/proto/baton/v1/{} differs from proto/baton/v1: copy it",
            name.to_string_lossy()
        );
    }
}
