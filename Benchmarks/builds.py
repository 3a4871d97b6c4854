#!/usr/bin/env python3
"""compare.sh's rows of the mdq command, for several builds side by side.

    MDQ_BUILDS=AFTER_DIR:BEFORE_DIR[:...] python3 Benchmarks/builds.py [--corpus DIR] [--runs N]

Each build is a folder holding mdq and mdq-full as Scripts/build-release
stages them (an earlier commit's: git worktree add, then
Scripts/build-release there). On one corpus (default
$MDQ_CORPUS/c1000000, else /tmp/mdq-corpus/c1000000), hyperfine times
each row of compare.sh that runs the mdq command (no daemon: a crawl per
invocation), one run of each build in turn, round after round (so the
noise of a shared machine falls on each alike), and prints the medians
and each build's ratio to the first:

- `mdq --count '*.png'`;
- `mdq --json` over every entry;
- `mdq` over every entry (paths), with `--attr kMDItemFSSize` and with
  `--attr kMDItemFSContentChangeDate`.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare import timed  # noqa: E402  (one run, timed as compare.sh times it)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_corpus = os.path.join(os.environ.get("MDQ_CORPUS", "/tmp/mdq-corpus"), "c1000000")
    parser.add_argument("--corpus", default=default_corpus)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    builds = os.environ.get("MDQ_BUILDS", os.path.join(TOP, ".build/mdq-release")).split(":")
    rows = [
        ("`mdq --count '*.png'`", "--count \"kMDItemFSName LIKE '*.png'\""),
        ("`mdq --json` over every entry", "--json TRUEPREDICATE"),
        ("`mdq` over every entry (paths)", "TRUEPREDICATE"),
        ("`--attr kMDItemFSSize`", "--attr kMDItemFSSize TRUEPREDICATE"),
        ("`--attr kMDItemFSContentChangeDate`", "--attr kMDItemFSContentChangeDate TRUEPREDICATE"),
    ]
    subprocess.run(["find", args.corpus], stdout=subprocess.DEVNULL, check=True)  # a warm page cache for all
    print("| row | " + " | ".join(builds) + " |")
    print("|---|" + "---|" * len(builds))
    for label, query in rows:
        commands = [
            f"{os.path.join(build, 'mdq')} --no-daemon --onlyin {args.corpus} --hidden {query} > /dev/null"
            for build in builds
        ]
        samples = [[] for _ in builds]
        for _ in range(args.runs + 1):
            for i, command in enumerate(commands):
                samples[i].append(timed(command))
        # The first round warms up.
        medians = [statistics.median(values[1:]) for values in samples]
        cells = [f"{medians[0] * 1000:.0f} ms"]
        cells += [f"{m * 1000:.0f} ms ({m / medians[0]:.2f}×)" for m in medians[1:]]
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
