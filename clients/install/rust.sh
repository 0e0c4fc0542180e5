#!/usr/bin/env bash
# Clean install of the Rust client, as a user gets it: `cargo package` of baton-proto and
# baton-client (the .crate files a registry would serve), unpacked into a temporary directory;
# a fresh cargo project outside the repository depending on them; the README's example as its
# main.rs; `cargo run` against the Baton at $BATON_TARGET (host:port, already running).
# Dependencies compile into target/install-check, kept between runs.
set -euo pipefail
: "${BATON_TARGET:?host:port of a running Baton}"
start=$(date +%s.%N)
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/baton-install-rust.XXXXXX)
trap 'rm -rf "$work"' EXIT
log="$work/log"

fail() { echo "install rust: FAILED ($1)"; tail -40 "$log" >&2; exit 1; }

# The packages (verified by building them as packaged: baton-client against the packaged
# baton-proto). --allow-dirty: a working tree with uncommitted changes is packaged as it is.
# Cargo verifies baton-client against the packaged baton-proto through a local registry whose
# sources it unpacks once per version under $CARGO_HOME/registry/src and then reuses: a copy
# left by an earlier packaging of the same version would stand in for this one.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/crates/baton-client/Cargo.toml" | head -1)
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/baton-proto-"$version" \
    "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/baton-client-"$version"
(cd "$repo" && CARGO_TARGET_DIR="$repo/target/install-check" \
    cargo package -p baton-proto -p baton-client --allow-dirty) >"$log" 2>&1 || fail "cargo package"
for crate in baton-proto baton-client; do
    tar -xzf "$repo/target/install-check/package/$crate-$version.crate" -C "$work"
done

# A project of one's own: the crates by path (baton-proto is not on crates.io: patched in).
mkdir -p "$work/app/src"
cat >"$work/app/Cargo.toml" <<TOML
[package]
name = "baton-install-check"
version = "0.1.0"
edition = "2021"

[dependencies]
baton-client = { path = "$work/baton-client-$version" }
tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
tokio-util = "0.7"

[patch.crates-io]
baton-proto = { path = "$work/baton-proto-$version" }
TOML
# The README's example, verbatim: the rust block after the "example: main.rs" marker.
awk '/<!-- example: main.rs -->/ { on = 1; next }
     on && /^```rust/ { copy = 1; next }
     copy && /^```/ { exit }
     copy { print }' "$work/baton-client-$version/README.md" >"$work/app/src/main.rs"
[ -s "$work/app/src/main.rs" ] || fail "no example in the packaged README"

(cd "$work/app" && CARGO_TARGET_DIR="$repo/target/install-check" timeout 900 cargo run --quiet) \
    >"$log" 2>&1 || fail "cargo run"
grep -q "welcome-42 done" "$log" || fail "the example did not complete its job"
secs=$(echo "$(date +%s.%N) - $start" | bc)
printf 'install rust: ok (baton-proto %s + baton-client %s from cargo package, %.0f s)\n' "$version" "$version" "$secs"
