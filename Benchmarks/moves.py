#!/usr/bin/env python3
"""How soon a live query tells of a rename: the watcher seam's figure.

    MDQ_BUILDS=AFTER_DIR[:BEFORE_DIR...] python3 Benchmarks/moves.py [--moves N] [--files N]

For each build (a folder holding mdq and mdq-full, as Scripts/build-release
stages them; default .build/mdq-release), runs `mdq --live --interval 0
--no-daemon '*'` (watched by this process, inotify) on a fresh tree of
FILES files in 20 folders, waits for the first results, then one at a time:

- renames a file to another folder of the scope (one change: `< old path`,
  `> new path`);
- moves a file out of the scope (a removal, `- old path`);
- moves a file in from outside (an addition, `+ new path`);

timing each from the `rename` call to the line that tells of it. Builds run
in turn, several rounds, so the machine's noise falls on each alike. Prints
p50 and p90 per kind and build, and checks that a rename within the scope
was told as a change, never a removal and an addition.
"""
import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


class Lines:
    """The lines a process writes, read without Python's buffering (which
    would hide lines from select)."""

    def __init__(self, stream):
        self.fd = stream.fileno()
        self.pending = b""

    def next(self, deadline):
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no line in time")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    raise EOFError("the query ended")
                self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode("utf-8", "replace")


def wait_line(lines, wanted, deadline):
    """Reads lines until `wanted`; returns when it came."""
    while True:
        line = lines.next(deadline)
        if line == wanted:
            return time.monotonic()
        if line.startswith("- ") and wanted.startswith("> "):
            raise AssertionError(f"a rename told as a removal: {line}")


def one_round(build, files, moves):
    mdq = os.path.join(build, "mdq")
    work = tempfile.mkdtemp(prefix="mdq-moves-")
    scope = os.path.join(work, "scope")
    outside = os.path.join(work, "outside")
    os.makedirs(outside)
    for f in range(20):
        os.makedirs(os.path.join(scope, f"d{f}"))
    for i in range(files):
        with open(os.path.join(scope, f"d{i % 20}", f"f{i}.txt"), "w") as out:
            out.write("x")
    for i in range(moves):
        with open(os.path.join(outside, f"in{i}.txt"), "w") as out:
            out.write("y")
    process = subprocess.Popen(
        [mdq, "--live", "--interval", "0", "--no-daemon", "--onlyin", scope, "*"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines = Lines(process.stdout)
    try:
        # The first results: every file and folder, then live lines.
        deadline = time.monotonic() + 60
        for _ in range(files + 20):
            lines.next(deadline)
        times = {"rename": [], "out": [], "in": []}
        for i in range(moves):
            old = os.path.join(scope, f"d{i % 20}", f"f{i}.txt")
            new = os.path.join(scope, f"d{(i + 7) % 20}", f"g{i}.txt")
            start = time.monotonic()
            os.rename(old, new)
            times["rename"].append(wait_line(lines, f"> {new}", start + 10) - start)
            gone = os.path.join(outside, f"g{i}.txt")
            start = time.monotonic()
            os.rename(new, gone)
            times["out"].append(wait_line(lines, f"- {new}", start + 10) - start)
            arrived = os.path.join(scope, f"d{i % 20}", f"in{i}.txt")
            start = time.monotonic()
            os.rename(os.path.join(outside, f"in{i}.txt"), arrived)
            times["in"].append(wait_line(lines, f"+ {arrived}", start + 10) - start)
        return times
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    builds = os.environ.get("MDQ_BUILDS", os.path.join(TOP, ".build/mdq-release")).split(":")
    results = {build: {"rename": [], "out": [], "in": []} for build in builds}
    for _ in range(args.rounds):
        for build in builds:
            for kind, values in one_round(build, args.files, args.moves).items():
                results[build][kind] += values
    print("| build | rename in the scope (>) p50 / p90 | move out (-) p50 / p90 | move in (+) p50 / p90 |")
    print("|---|---|---|---|")
    for build, kinds in results.items():
        cells = []
        for kind in ["rename", "out", "in"]:
            values = sorted(kinds[kind])
            p50 = statistics.median(values) * 1000
            p90 = values[int(len(values) * 0.9)] * 1000
            cells.append(f"{p50:.2f} / {p90:.2f} ms")
        print(f"| {build} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
