#!/usr/bin/env bash
# The client test suites (run as `scripts/clients test [WHAT...]`): each against live Batons
# that the tests start themselves (target/debug/baton with an embedded redis-server, on free
# loopback ports). WHAT: python typescript go java conformance install crosslang tools console
# (default: all, in order).
# Installs what it needs from the package registries into clients/.tools (git-ignored) and the
# usual per-user caches. Prints one summary line per suite and a closing
# "clients: N passed, N failed" line; exits non-zero if any suite failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/lib.sh

GRPCURL_VERSION=$(sed -n 's/^GRPCURL_VERSION=\([^ ]*\).*/\1/p' scripts/clients)
GHZ_VERSION=$(sed -n 's/^GHZ_VERSION=\([^ ]*\).*/\1/p' scripts/clients)
TOOLS=$ROOT/clients/.tools
BIN=$TOOLS/bin
LOGS=$TOOLS/logs
PY=$TOOLS/py/bin/python
ALL=(python typescript go java conformance install crosslang tools console)
mkdir -p "$BIN" "$LOGS"
export TEST_BATON_BIN=${TEST_BATON_BIN:-$ROOT/target/debug/baton}
export TEST_BATON_WORKER_BIN=${TEST_BATON_WORKER_BIN:-$ROOT/target/debug/baton-worker}

say() { echo "clients: $*"; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is not installed: $2"; }
stamp_ok() { [ -f "$TOOLS/stamps/$1" ] && [ "$(cat "$TOOLS/stamps/$1")" = "$2" ]; }
stamp() { mkdir -p "$TOOLS/stamps"; echo "$2" >"$TOOLS/stamps/$1"; }
# Runs a setup step quietly, showing its log only when it fails.
quietly() {
  local log=$LOGS/$1.setup.log; shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    die "setup step failed: $* (log: $log)"
  fi
}

# --- setup per language --------------------------------------------------------------------
prepared=" "
prepare() {
  case "$prepared" in *" $1 "*) return ;; esac
  prepared="$prepared$1 "
  case "$1" in
    baton)
      ensure_cargo
      ensure_redis
      if [ "$TEST_BATON_BIN" = "$ROOT/target/debug/baton" ]; then
        say "building baton and baton-worker (cargo build)"
        quietly cargo cargo build --bin baton --bin baton-worker
      fi ;;
    python)
      need python3 "install Python 3.10+"
      local sum; sum=$(cat clients/python/pyproject.toml)
      if [ ! -x "$PY" ] || ! stamp_ok py "$sum"; then
        say "installing the Python client and pytest (PyPI)"
        rm -rf "$TOOLS/py"
        quietly py-venv python3 -m venv "$TOOLS/py"
        stamp py "$sum"
      fi
      # Install the package itself (not editable): the tests use what users get.
      quietly py-install "$PY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./clients/python
      quietly py-deps "$PY" -m pip install -q --disable-pip-version-check "./clients/python[test]" ;;
    typescript)
      need node "install Node.js 18+ and npm"
      local lock; lock=$(cat clients/typescript/package-lock.json)
      if [ ! -d clients/typescript/node_modules ] || ! stamp_ok npm "$lock"; then
        say "installing the TypeScript client's dependencies (npm ci)"
        quietly npm-ci bash -c "cd clients/typescript && npm ci --no-audit --no-fund"
        stamp npm "$lock"
      fi
      quietly tsc bash -c "cd clients/typescript && npm run --silent build" ;;
    go)
      need go "install Go 1.26+"
      say "building the Go client and its example worker"
      quietly go-build bash -c "cd clients/go && go build ./... && go vet ./... && go build -o '$BIN/baton-go-example-worker' ./examples/worker && go build -o '$BIN/baton-go-conformance-driver' ./cmd/conformance-driver" ;;
    java)
      need mvn "install Maven 3.8+ and a JDK 17+ (Debian: apt-get install -y maven openjdk-17-jdk-headless)"
      say "compiling the Java client and its example worker (Maven)"
      quietly mvn-compile mvn -B -q -Dstyle.color=never -f clients/java/pom.xml test-compile \
        dependency:build-classpath -Dmdep.outputFile="$TOOLS/java-classpath.txt" ;;
    rust-driver)
      ensure_cargo
      say "building the Rust conformance driver (cargo build --example)"
      quietly rust-driver cargo build -p baton-client --example conformance_driver ;;
    chromium)
      # The console's browser test drives Debian's Chromium (playwright-core never downloads one).
      if [ -z "${CHROMIUM_BIN:-}" ] && ! [ -x /usr/bin/chromium ]; then
        apt_install chromium || die "chromium is not installed and could not be installed here.
  Install it (Debian/Ubuntu: apt-get install -y chromium) or set CHROMIUM_BIN to a Chromium or Chrome binary."
      fi ;;
    tools)
      need go "install Go 1.26+"
      if ! stamp_ok go-tools "$GRPCURL_VERSION $GHZ_VERSION" || [ ! -x "$BIN/ghz" ] || [ ! -x "$BIN/grpcurl" ]; then
        say "installing grpcurl $GRPCURL_VERSION and ghz $GHZ_VERSION (Go proxy)"
        quietly grpcurl env GOBIN="$BIN" GOFLAGS=-mod=mod go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION"
        quietly ghz env GOBIN="$BIN" GOFLAGS=-mod=mod go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
        stamp go-tools "$GRPCURL_VERSION $GHZ_VERSION"
      fi ;;
  esac
}

# --- suites: each sets PASSED / FAILED from its runner's own summary ------------------------
PASSED=0 FAILED=0
count() { grep -Eo "$1" "$2" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}'; }

pytest_counts() {
  local line; line=$(grep -E '^[=]* ?[0-9]+ (passed|failed|error)' "$1" | tail -n 1)
  PASSED=$(echo "$line" | grep -Eo '[0-9]+ passed' | grep -Eo '[0-9]+' || echo 0)
  FAILED=$(( $(echo "$line" | grep -Eo '[0-9]+ failed' | grep -Eo '[0-9]+' || echo 0) + $(echo "$line" | grep -Eo '[0-9]+ errors?' | grep -Eo '[0-9]+' || echo 0) ))
}

suite_python() {
  prepare baton; prepare python
  (cd clients/python && "$PY" -m pytest -q -p no:cacheprovider tests) >"$1" 2>&1
  local rc=$?; pytest_counts "$1"; return $rc
}

suite_typescript() {
  prepare baton; prepare typescript
  (cd clients/typescript && node --test --test-concurrency=1 dist/test/*.test.js) >"$1" 2>&1
  local rc=$?
  PASSED=$(grep -E '^# pass [0-9]+' "$1" | grep -Eo '[0-9]+' | tail -n 1)
  FAILED=$(grep -E '^# fail [0-9]+' "$1" | grep -Eo '[0-9]+' | tail -n 1)
  return $rc
}

suite_go() {
  prepare baton; prepare go
  (cd clients/go && go test -count=1 -v ./...) >"$1" 2>&1
  local rc=$?
  PASSED=$(grep -cE '^\s*--- PASS' "$1"); FAILED=$(grep -cE '^\s*--- FAIL' "$1")
  return $rc
}

suite_java() {
  prepare baton; prepare java
  mvn -B -Dstyle.color=never --no-transfer-progress -f clients/java/pom.xml surefire:test >"$1" 2>&1
  local rc=$?
  local line; line=$(grep -E 'Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$1" | tail -n 1)
  local run fail err skip
  read -r run fail err skip < <(echo "$line" | grep -Eo '[0-9]+' | tr '\n' ' ')
  PASSED=$(( ${run:-0} - ${fail:-0} - ${err:-0} - ${skip:-0} )); FAILED=$(( ${fail:-0} + ${err:-0} ))
  return $rc
}

suite_conformance() {
  prepare baton; prepare python; prepare typescript; prepare go; prepare java; prepare rust-driver
  (cd clients/conformance && "$PY" -m pytest -q -s -p no:cacheprovider -p no:asyncio test_conformance.py) >"$1" 2>&1
  local rc=$?; pytest_counts "$1"; return $rc
}

# Each language's package built and installed the way its users install it, into a project
# outside the repository, running the README's example against a live Baton.
suite_install() {
  prepare baton
  local dir port pid rc=0 lang
  dir=$(mktemp -d)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$TEST_BATON_BIN" serve --listen "127.0.0.1:$port" --metrics-listen "" --data-dir "$dir" >"$dir/baton.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  PASSED=0 FAILED=0
  for lang in python typescript go java rust; do
    if BATON_TARGET="127.0.0.1:$port" bash "clients/install/$lang.sh" >>"$1" 2>&1; then
      PASSED=$((PASSED + 1))
    else
      echo "install $lang: FAILED" >>"$1"; FAILED=$((FAILED + 1)); rc=1
    fi
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rm -rf "$dir"
  return $rc
}

suite_crosslang() {
  prepare baton; prepare python; prepare typescript; prepare go; prepare java
  (cd clients/crosslang && "$PY" -m pytest -q -s -p no:cacheprovider -p no:asyncio test_crosslang.py) >"$1" 2>&1
  local rc=$?; pytest_counts "$1"; return $rc
}

suite_tools() {
  prepare baton; prepare python; prepare tools
  (cd clients/crosslang && "$PY" -m pytest -q -s -p no:cacheprovider -p no:asyncio test_tools.py) >"$1" 2>&1
  local rc=$?; pytest_counts "$1"; return $rc
}

suite_console() {
  prepare baton; prepare typescript; prepare chromium
  # The console's pages, and gRPC-Web from a page of another origin (CORS) on the gRPC port.
  (cd clients/typescript && node --test --test-concurrency=1 dist/test/console.browser.js dist/test/grpcweb.browser.js) >"$1" 2>&1
  local rc=$?
  PASSED=$(grep -E '^# pass [0-9]+' "$1" | grep -Eo '[0-9]+' | tail -n 1)
  FAILED=$(grep -E '^# fail [0-9]+' "$1" | grep -Eo '[0-9]+' | tail -n 1)
  [ $rc -ne 0 ] || echo "clients: console screenshots in clients/.tools/console-screenshots/ and grpcweb-screenshots/" >>"$1"
  return $rc
}

# --- main ------------------------------------------------------------------------------------
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${ALL[@]}")
for s in "${suites[@]}"; do
  case " ${ALL[*]} " in *" $s "*) ;; *) die "unknown suite '$s' (one of: ${ALL[*]})" ;; esac
done

total_passed=0 total_failed=0 failed_suites=()
started_all=$SECONDS
for s in "${suites[@]}"; do
  log=$LOGS/$s.log
  started=$SECONDS
  echo
  echo "== clients: $s"
  PASSED=0 FAILED=0
  "suite_$s" "$log"
  rc=$?
  PASSED=${PASSED:-0} FAILED=${FAILED:-0}
  # What a reader wants from each runner: its per-test lines and its own summary.
  case $s in
    python | crosslang | tools | conformance) grep -E '^(crosslang|ghz|conformance)|passed|failed|error|^E ' "$log" | tail -n 60 ;;
    install) grep -E '^install ' "$log" ;;
    typescript) grep -E '^(not )?ok |^# (tests|pass|fail)' "$log" ;;
    console) grep -E '^(not )?ok |^# (tests|pass|fail)|screenshots' "$log" ;;
    go) grep -E '^\s*--- (PASS|FAIL)|^(ok|FAIL)\s' "$log" ;;
    java) grep -E 'Tests run:|FAIL|ERROR\]' "$log" | head -n 40 ;;
  esac
  if [ $rc -ne 0 ] && [ "$FAILED" -eq 0 ]; then FAILED=1; fi   # a crash before any test ran
  if [ $rc -ne 0 ]; then
    failed_suites+=("$s")
    echo "-- $s failed; the end of its log ($log):"
    tail -n 80 "$log"
  fi
  total_passed=$((total_passed + PASSED)); total_failed=$((total_failed + FAILED))
  printf 'clients %-10s %3d passed, %d failed  (%ds)\n' "$s:" "$PASSED" "$FAILED" $((SECONDS - started))
done

echo
echo "clients: ${#suites[@]} suites in $((SECONDS - started_all)) s${failed_suites:+; failed: ${failed_suites[*]}}"
echo "clients: $total_passed passed, $total_failed failed"
[ ${#failed_suites[@]} -eq 0 ]
