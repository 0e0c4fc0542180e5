#!/usr/bin/env bash
# Clean install of the Python client, as a user gets it: builds the wheel from a clean copy of
# clients/python (`pip wheel`), installs it into a fresh virtualenv of a new project in a
# temporary directory outside the repository, writes there the README's quick-start program and
# runs it against the live Baton at $BATON_TARGET (host:port). Prints one line
# "install python: ok (<what was installed>, <seconds> s)"; removes its temporary files.
set -euo pipefail
: "${BATON_TARGET:?set BATON_TARGET to a running Baton (host:port)}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
started=$(date +%s%N)
work=$(mktemp -d -t baton-install-python.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/install.log
fail() { echo "install python: FAILED ($1)" >&2; tail -n 40 "$log" >&2 || true; exit 1; }

# The package's files only (no build/ or *.egg-info left by an earlier build in the checkout).
mkdir -p "$work/source" "$work/dist" "$work/project"
tar -C "$ROOT/clients/python" --exclude=build --exclude='*.egg-info' --exclude=__pycache__ \
  -cf - pyproject.toml README.md src | tar -C "$work/source" -xf -
"$PYTHON" -m pip wheel -q --no-deps -w "$work/dist" "$work/source" >"$log" 2>&1 || fail "pip wheel"
wheel=$(ls "$work/dist"/*.whl)

cd "$work/project"
"$PYTHON" -m venv .venv >>"$log" 2>&1 || fail "python3 -m venv"
.venv/bin/python -m pip install -q "$wheel" >>"$log" 2>&1 || fail "pip install $(basename "$wheel")"

# The README's quick start, as written there: the python block after the install-example marker.
awk '/<!-- install-example/ {found=1; next} found && /^```python/ {on=1; next} on && /^```/ {exit} on' \
  "$ROOT/clients/python/README.md" >main.py
[ -s main.py ] || fail "no install-example block in clients/python/README.md"
out=$(BATON_TARGET=$BATON_TARGET timeout 60 .venv/bin/python main.py 2>>"$log") || fail "the example exited $?"
[ "$out" = "hello, world" ] || fail "the example printed '$out'"

installed=$(.venv/bin/python -m pip list --format=freeze 2>/dev/null |
  grep -iE '^(baton-client|grpcio|protobuf|opentelemetry-api)==' | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
tenths=$((($(date +%s%N) - started) / 100000000))
echo "install python: ok ($installed from $(basename "$wheel"), $((tenths / 10)).$((tenths % 10)) s)"
