#!/usr/bin/env bash
# mdq beside find, fd, bfs, plocate and watchman, on corpora this repository
# generates (Benchmarks/make-tree.py); compare.py says what is run.
#
# usage: Benchmarks/compare.sh [--rounds N] [--sizes 200000,1000000] [--out DIR]
#
#   --rounds N     runs of every command, interleaved round by round (default 5)
#   --sizes LIST   corpus sizes in files (default 200000,1000000)
#   --out DIR      where compare.md and compare.png go (default: a new folder
#                  /tmp/mdq-compare-DATE-XXXX; Benchmarks/results is the
#                  copy Documentation/measurements.md quotes)
#
# Corpora go to $MDQ_CORPUS (default /tmp/mdq-corpus), generated when absent
# (about 1 minute per 200,000 files). Installs hyperfine, fd-find, bfs,
# plocate, watchman and gnuplot-nox with apt-get when missing, then builds mdq
# and the instruments in release mode (about 5 minutes the first time).
# The runs take about 2 minutes per round for 1,000,000 files (a quarter of
# that for 200,000); the script prints its estimate before it starts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for argument in "$@"; do
    case "$argument" in
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    esac
done
missing=""
for tool in hyperfine:hyperfine fdfind:fd-find bfs:bfs plocate:plocate watchman:watchman gnuplot:gnuplot-nox; do
    command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"
done
if [ -n "$missing" ]; then
    echo "installing:$missing" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq $missing >/dev/null
fi
exec python3 "$here/compare.py" "$@"
