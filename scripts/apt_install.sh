#!/usr/bin/env bash
# scripts/apt_install.sh PACKAGE...
#
# Installs the Debian packages of the list that are not installed yet (none:
# returns at once), as root or through sudo; with neither, says so and
# fails.  Used by scripts/setup.sh and corpus/build.sh.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) == 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "apt_install.sh: ${missing[*]} must be installed, and this is neither root nor has sudo" >&2
  exit 1
fi
echo "apt_install.sh: installing ${missing[*]}" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 ||
  { cat "$log" >&2; echo "apt_install.sh: apt-get update failed" >&2; exit 1; }
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
  >"$log" 2>&1 || { tail -20 "$log" >&2; echo "apt_install.sh: apt-get install ${missing[*]} failed" >&2; exit 1; }
