#!/usr/bin/env bash
# Installs the Debian packages a make target needs, when they are missing.
#
#   scripts/install-deps.sh build     # what `make demo` needs to build
#   scripts/install-deps.sh test      # what `make test` needs
#
# Runs apt-get as root (or through sudo). Installs nothing when everything is there, so it is
# cheap to run before every target.
set -euo pipefail
cd "$(dirname "$0")/.."

set_name=${1:-test}
list="scripts/deps-${set_name}.txt"
[ -f "$list" ] || { echo "install-deps: no package list $list" >&2; exit 2; }

if ! command -v swift >/dev/null 2>&1; then
  echo "install-deps: the Swift toolchain (6.3) is not on PATH; install it first (swift.org)." >&2
  exit 1
fi

mapfile -t wanted < <(grep -vE '^\s*(#|$)' "$list")
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-deps: missing packages (${missing[*]}) and not root; run: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
