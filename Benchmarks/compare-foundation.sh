#!/usr/bin/env bash
# The foundation issue's figures, in one run on one corpus:
#   gather into the index vs find -printf, one-shot --count vs find and fd,
#   peak RSS per entry.
# usage: Benchmarks/compare-foundation.sh [FILES] (default 1000000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
files=${1:-1000000}
corpus=${MDQ_CORPUS:-/tmp/mdq-corpus}/c$files
command -v hyperfine >/dev/null && command -v fdfind >/dev/null || {
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq hyperfine fd-find >/dev/null
}
if [ ! -d "$corpus" ]; then
    python3 "$here/make-tree.py" "$corpus" --files "$files" --container
fi
stage=$("$top/Scripts/build-release")  # what Scripts/install installs
(cd "$here" && swift build -c release --static-swift-stdlib --product mdq-gather >/dev/null)
corpus=$(cd "$corpus" && pwd -P)  # find does not follow a symlinked root
mdq="$stage/mdq"
gather="$here/.build/release/mdq-gather"
find "$corpus" >/dev/null  # warm the cache

echo "== corpus: $corpus ($(find "$corpus" | wc -l) entries, $(find "$corpus" -name '.*' -prune -o -print | wc -l) not hidden)"
echo "== gather into the index (mdq-gather, 3 runs each)"
"$gather" "$corpus" --repeat 3
"$gather" "$corpus" --hidden --repeat 3
echo "== hyperfine: gather vs find -printf (same entries with --hidden)"
hyperfine -N -w 1 -r 7 \
    "$gather $corpus --hidden" \
    "$gather $corpus" \
    "find $corpus -fprintf /dev/null '%s %T@ %p\n'"
echo "== hyperfine: one-shot name query"
hyperfine -w 1 -r 7 \
    "$mdq --onlyin $corpus --count \"kMDItemFSName LIKE '*.png'\"" \
    "$mdq --onlyin $corpus --hidden --count \"kMDItemFSName LIKE '*.png'\"" \
    "find $corpus -name '*.png' | wc -l" \
    "fdfind -HIu -g '*.png' $corpus | wc -l"
