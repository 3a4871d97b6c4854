#!/usr/bin/env bash
# mdq beside find, fd, plocate and watchman (see compare.py for what is run).
# Installs what is missing, then: Benchmarks/compare.sh [--rounds N] [--sizes 200000,1000000]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=""
for tool in hyperfine:hyperfine fdfind:fd-find plocate:plocate watchman:watchman gnuplot:gnuplot-nox; do
    command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"
done
if [ -n "$missing" ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq $missing >/dev/null
fi
exec python3 "$here/compare.py" "$@"
