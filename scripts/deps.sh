#!/usr/bin/env bash
# Installs the Debian packages Cuvil needs that are missing.  As root it runs
# apt-get (after one `apt-get update` when the package lists are empty or
# stale); otherwise it prints the command to run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t pkgs < <(grep -v '^\s*#' "$here/packages.txt" | awk 'NF{print $1}')
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: missing packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
lists=$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)
if [ -z "$lists" ]; then
    apt-get update -qq
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
