#!/usr/bin/env bash
# The TypeScript client as a user installs it: `npm pack` in clients/typescript (prepack compiles
# it), the tarball installed into a fresh npm project outside the repository (no TypeScript
# there), and the README's example (the block after "<!-- example:") run there with node
# against a live Baton at $BATON_TARGET (host:port). Prints one line; cleans up after itself.
set -euo pipefail
: "${BATON_TARGET:?set BATON_TARGET to the host:port of a running Baton}"
started=$(date +%s%N)
pkg=$(cd "$(dirname "$0")/../typescript" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-install-ts.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/log

run() { "$@" >>"$log" 2>&1 || { echo "install typescript: FAILED: $*" >&2; tail -n 40 "$log" >&2; exit 1; }; }

# The package's build tools (TypeScript) come from its lock, as in CI.
[ -d "$pkg/node_modules" ] || run bash -c "cd '$pkg' && npm ci --no-audit --no-fund"
run bash -c "cd '$pkg' && npm pack --pack-destination '$work'"
tarball=$(ls "$work"/baton-client-*.tgz)

mkdir "$work/app"
cd "$work/app"
run npm init -y
run npm install --no-audit --no-fund "$tarball"
awk '/^<!-- example:/ { grab = 1; next } grab && /^```js/ { inside = 1; next } inside && /^```/ { exit } inside' \
  "$pkg/README.md" >example.mjs
[ -s example.mjs ] || { echo "install typescript: FAILED: no example in README.md" >&2; exit 1; }
[ ! -e node_modules/typescript ] || { echo "install typescript: FAILED: typescript was installed" >&2; exit 1; }
run timeout 60 node example.mjs

seconds=$(( ($(date +%s%N) - started) / 1000000 ))
printf 'install typescript: ok (%s from npm pack, installed with npm install in a new project, %d.%d s)\n' \
  "$(basename "$tarball")" $((seconds / 1000)) $((seconds % 1000 / 100))
