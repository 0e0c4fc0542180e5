# Shared by scripts/serve and scripts/test: make sure the tools Baton needs are installed,
# installing from the system's packages where we can, or saying exactly what to install.

die() { echo "baton: $*" >&2; exit 1; }

# apt-get as root, or through sudo when that works without a password.
apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else return 1; fi
  fi
  command -v apt-get >/dev/null 2>&1 || return 1
  echo "baton: installing $* from the system's packages" >&2
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}

ensure_redis() {
  # redis-cli (redis-tools, a dependency of Debian's redis-server) builds the tests' clusters.
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return 0
  apt_install redis-server || die "redis-server is not installed and could not be installed here.
  Install Redis 7.0 or newer (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis)
  or run Baton against an existing Redis with --redis-url."
  command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after installing"
  command -v redis-cli >/dev/null 2>&1 || die "redis-cli still not on PATH after installing redis-server"
}

ensure_cargo() {
  command -v cargo >/dev/null 2>&1 || die "cargo is not installed: see https://rustup.rs (rustup installs cargo and rustc)"
}

ensure_buildah() {
  # scripts/image builds Baton's OCI image with buildah; scripts/test-image also runs it.
  command -v buildah >/dev/null 2>&1 && return 0
  apt_install buildah || die "buildah is not installed and could not be installed here.
  Install it (Debian/Ubuntu: apt-get install -y buildah; Fedora: dnf install -y buildah)."
  command -v buildah >/dev/null 2>&1 || die "buildah still not on PATH after installing"
}

# A string field of a Cargo.toml's [package] section: package_field Cargo.toml version
package_field() {
  awk -v key="$2" '/^\[/ { in_package = ($0 == "[package]") }
    in_package && $1 == key && $2 == "=" { sub(/^[^=]*= *"/, ""); sub(/" *$/, ""); print; exit }' "$1"
}
