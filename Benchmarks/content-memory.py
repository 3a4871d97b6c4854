#!/usr/bin/env python3
"""What content indexing adds to the index daemon's memory, in one run.

    Benchmarks/content-memory.py [--corpus DIR] [--out FILE]

Indexes DIR (default $MDQ_CORPUS/c300000; make it with Benchmarks/make-tree.py
DIR --files 300000) twice with a fresh state folder each time: once with
`mdq daemon run --no-content` (names and stat data), once with content
indexing on, waiting until every file is imported. For each it reports the
daemon's resident memory per indexed entry once the index is verified and
the importers are idle, and, for the second, the import store's size on disk
per file. Imported values and text live in the store (SQLite, on disk); the
name index is the same in both runs, so the difference is what importing
keeps in memory (SQLite's page cache and the indexer's queues).

Needs the release programs Scripts/build-release stages in
.build/mdq-release (what Scripts/install installs); $MDQ_BINARY names
another mdq.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from rivals import index_add

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
MDQ = os.environ.get("MDQ_BINARY", os.path.join(TOP, ".build/mdq-release/mdq"))


def status(env):
    return subprocess.run([MDQ, "daemon", "status"], env=env, capture_output=True, text=True).stdout


def resident(pid):
    """Resident bytes: all of them, and the anonymous part (the heap: the
    index, queues, SQLite's cache), without the program's code pages."""
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(status.split(name + ":")[1].split()[0]) * 1024
    return field("VmRSS"), field("RssAnon")


def measure(corpus, content):
    state = tempfile.mkdtemp(prefix="mdq-content-memory-")
    env = dict(os.environ, MDQ_RUNTIME_DIR=os.path.join(state, "run"), MDQ_STATE_DIR=os.path.join(state, "state"))
    command = [MDQ, "daemon", "run"] + ([] if content else ["--no-content"])
    daemon = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while subprocess.run([MDQ, "daemon", "status"], env=env, capture_output=True).returncode != 0:
            time.sleep(0.02)
        start = time.monotonic()
        index_add(MDQ, ["--hidden", corpus], env)
        while True:
            out = status(env)
            if "checking the index" not in out and (not content or "none pending" in out):
                break
            time.sleep(0.2)
        took = time.monotonic() - start
        time.sleep(2)  # the importers' last batch written, the WAL folded
        out = status(env)
        entries = int(re.search(r"index: (\d+) entries", out).group(1))
        imported = re.search(r"content: (\d+) files imported", out)
        rss, anonymous = resident(daemon.pid)
        store = sum(os.path.getsize(os.path.join(root, f))
                    for root, _, files in os.walk(os.path.join(state, "state")) for f in files
                    if f.startswith("content.sqlite"))
        return entries, rss, took, int(imported.group(1)) if imported else 0, store, anonymous
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(state, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.path.join(os.environ.get("MDQ_CORPUS", "/tmp/mdq-corpus"), "c300000")
    parser.add_argument("--corpus", default=default)
    parser.add_argument("--out", default=None)
    a = parser.parse_args()
    corpus = os.path.abspath(a.corpus)
    if not os.path.exists(MDQ):
        sys.exit(f"{MDQ} is missing: swift build -c release first")
    lines = []

    def say(text):
        print(text, flush=True)
        lines.append(text)

    names = measure(corpus, content=False)
    full = measure(corpus, content=True)
    say(f"corpus {corpus}: {names[0]} entries, every one indexed (--hidden)")
    say("")
    say("| daemon | ready after | resident memory | per entry | of which heap (anonymous) | per entry | import store |")
    say("|---|---|---|---|---|---|---|")
    for label, row in [("`--no-content`", names), (f"content indexing, {full[3]} files imported", full)]:
        store = f"{row[4] / 1e6:.1f} MB ({row[4] / max(row[3], 1):.0f} B per file)" if row[3] else ""
        say(f"| {label} | {row[2]:.1f} s | {row[1] / 1e6:.1f} MB | {row[1] / row[0]:.0f} B "
            f"| {row[5] / 1e6:.1f} MB | {row[5] / row[0]:.0f} B | {store} |")
    say("")
    say(f"content indexing adds {(full[1] - names[1]) / 1e6:.1f} MB resident, of which "
        f"{(full[5] - names[5]) / 1e6:.1f} MB heap ({(full[5] - names[5]) / full[0]:.1f} B per entry); the rest is "
        f"code and libraries (SQLite, the importers' registry) paged in")
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
