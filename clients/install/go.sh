#!/usr/bin/env bash
# Clean install of the Go client, as a user gets it before the module is published: the
# module's tracked files (clients/go, as `git ls-files` lists them) copied out of the checkout, a
# new module in a temporary directory outside the repository that points the module path at
# that copy (`go mod edit -replace`), the README's quick-start program as main.go, `go mod tidy`
# (dependencies from the Go module proxy) and `go run .` against the live Baton at $BATON_TARGET
# (host:port). Prints one line "install go: ok (<what was installed>, <seconds> s)"; removes its
# temporary files.
set -euo pipefail
: "${BATON_TARGET:?set BATON_TARGET to a running Baton (host:port)}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODULE=github.com/baton-project/baton/clients/go
started=$(date +%s%N)
work=$(mktemp -d -t baton-install-go.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
log=$work/install.log
fail() { echo "install go: FAILED ($1)" >&2; tail -n 40 "$log" >&2 || true; exit 1; }

# The module as a user's checkout has it: tracked files only.
mkdir -p "$work/baton-go" "$work/project"
(cd "$ROOT/clients/go" && git ls-files -z | xargs -0 tar -cf -) | tar -C "$work/baton-go" -xf -

cd "$work/project"
go mod init example.com/quickstart >"$log" 2>&1 || fail "go mod init"
# The README's quick start, as written there: the go block after the install-example marker.
awk '/<!-- install-example/ {found=1; next} found && /^```go/ {on=1; next} on && /^```/ {exit} on' \
  "$ROOT/clients/go/README.md" >main.go
[ -s main.go ] || fail "no install-example block in clients/go/README.md"
# The README's install command, with the copy's path.
go mod edit -replace "$MODULE=$work/baton-go" >>"$log" 2>&1 || fail "go mod edit -replace"
go mod tidy >>"$log" 2>&1 || fail "go mod tidy"
out=$(BATON_TARGET=$BATON_TARGET timeout 120 go run . 2>>"$log") || fail "the example exited $?"
case $out in "completed welcome-"*) ;; *) fail "the example printed '$out'" ;; esac
# The library must not bring the OpenTelemetry SDK (the application picks one).
if go list -deps . | grep -q '^go.opentelemetry.io/otel/sdk'; then fail "the module depends on the OpenTelemetry SDK"; fi

installed=$(go list -m -f '{{.Path}} {{.Version}}' all | grep -E "^($MODULE|google.golang.org/grpc|go.opentelemetry.io/otel) " |
  sed "s|^$MODULE .*|$MODULE (replaced by the checkout)|" | tr '\n' ',' | sed 's/,$//; s/,/, /g')
tenths=$((($(date +%s%N) - started) / 100000000))
echo "install go: ok ($installed, $((tenths / 10)).$((tenths % 10)) s)"
