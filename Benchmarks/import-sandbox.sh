#!/usr/bin/env bash
# What the import worker's sandbox costs: `mdq import` of a corpus of the
# importer fixtures (100 copies of each and a text note: 2,600 files, one
# worker, which restarts every 1,000 files) and of one text file (a
# worker's start, where the preloading and the sandbox are paid), with the
# sandbox on and off (MDQ_IMPORT_SANDBOX=off), or between two builds.
#
#     Benchmarks/import-sandbox.sh [BIN] [OTHER_BIN]
#
# BIN (default: what Scripts/build-release stages) holds mdq-full and
# mdq-import-worker side by side. With OTHER_BIN too, both builds are
# compared (e.g. the commit before the sandbox); without it, BIN with the
# sandbox on and off. Needs hyperfine (apt-get install hyperfine). Writes
# hyperfine's JSON beside the corpus, in $TMPDIR/mdq-sandbox-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-$(Scripts/build-release)}
other=${2:-}
work=${TMPDIR:-/tmp}/mdq-sandbox-bench
corpus=$work/corpus
if [ ! -d "$corpus" ]; then
    mkdir -p "$corpus"
    for i in $(seq -w 1 100); do
        for f in Tests/Fixtures/import/*; do
            case "$f" in *.sh | *.py) continue ;; esac
            cp "$f" "$corpus/c$i-$(basename "$f")"
        done
        printf 'plain text note %s about invoices\n' "$i" >"$corpus/c$i-note.txt"
    done
fi
# The file list, so that hyperfine's report shows a short command.
files=$work/files
find "$corpus" -type f | sort >"$files"
run() { # label, bin, sandbox setting
    cat >"$work/$1-corpus" <<EOF
#!/bin/sh
MDQ_IMPORT_SANDBOX=$3 xargs -s 1048576 -a "$files" "$2/mdq-full" import --json >/dev/null
EOF
    cat >"$work/$1-one" <<EOF
#!/bin/sh
MDQ_IMPORT_SANDBOX=$3 "$2/mdq-full" import "$corpus/c001-note.txt" >/dev/null
EOF
    chmod +x "$work/$1-corpus" "$work/$1-one"
}
if [ -n "$other" ]; then
    run a "$bin" on
    run b "$other" on
    names=("$bin" "$other")
else
    run a "$bin" on
    run b "$bin" off
    names=("sandbox on" "sandbox off")
fi
# mdq import exits 1 when some file fails (the corpus has broken fixtures).
hyperfine -N -i --warmup 1 --runs 10 --export-json "$work/corpus.json" \
    -n "corpus, ${names[0]}" "$work/a-corpus" -n "corpus, ${names[1]}" "$work/b-corpus"
hyperfine -N -i --warmup 3 --runs 40 --export-json "$work/one.json" \
    -n "one file, ${names[0]}" "$work/a-one" -n "one file, ${names[1]}" "$work/b-one"
