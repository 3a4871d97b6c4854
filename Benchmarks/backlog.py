#!/usr/bin/env python3
"""How fast the content indexer works through a large backlog, and what the
daemon itself spends meanwhile.

    MDQ_BUILDS=AFTER_DIR[:BEFORE_DIR...] python3 Benchmarks/backlog.py [--corpus DIR] [--seconds N]

For each build (a folder holding mdq, mdq-full and mdq-import-worker, as
Scripts/build-release stages them), starts `mdq daemon run` (content on,
private folders), runs `mdq index add --hidden CORPUS` (every entry, as a home is indexed) (default
$MDQ_CORPUS/c1000000, else /tmp/mdq-corpus/c1000000), then, from the moment
imports begin, watches `status` for SECONDS (default 120) or until the
backlog is done: files imported per second, the daemon's own CPU (its threads:
the engine, the content indexer, the store) and its import workers' CPU
over the same window. A backlog whose cost grows with its size shows as a
low rate and a daemon busier than its workers.

With --cold, the page cache is dropped before each build's run and the
tree's folders read again: the files' contents come from the disk, as on
a first index of a home (root only).

With --probes, the window also times, every half second, a name query through the
daemon (`mdq --daemon --count`, per invocation) and create → visible (a
new file in a folder of the corpus, polled by name with `mdq --daemon`),
and reads the daemon's resident bytes per entry at the end; and each build
is measured a second time with `--no-content` (no backlog), the idle
figures the busy ones are compared with.
"""
import argparse
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from rivals import children_of, cpu_seconds, index_add  # noqa: E402  (the measures every benchmark shares)


def descendants_of(pid):
    """Children, their children and so on: a confined worker may run under
    a launcher (its CPU shows in the launcher's reaped-children times only
    once the launcher itself is reaped)."""
    found = []
    for child in children_of(pid):
        found.append(child)
        found.extend(descendants_of(child))
    return found


def content_counts(mdq, env):
    """(files imported, files pending) from `mdq daemon status`; None while
    the daemon does not answer."""
    result = subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        return None
    match = re.search(r"content: ([0-9]+) files imported, ([0-9]+|none) pending", result.stdout)
    if not match:
        return (0, 0)
    return (int(match.group(1)), 0 if match.group(2) == "none" else int(match.group(2)))


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def probe(mdq, env, corpus, number, queries, fresh):
    """One name query and one create → visible, timed."""
    started = time.monotonic()
    subprocess.run([mdq, "--daemon", "--count", "--onlyin", corpus, "kMDItemFSName == 'report-12345*'cd"],
                   env=env, capture_output=True)
    queries.append(time.monotonic() - started)
    name = f"probe-{os.getpid()}-{number}.txt"
    path = os.path.join(corpus, "zz-mdq-probe", name)
    with open(path, "w") as f:
        f.write("probe\n")
    written = time.monotonic()
    while time.monotonic() - written < 10:
        answer = subprocess.run([mdq, "--daemon", "--count", "--onlyin", corpus, f"kMDItemFSName == '{name}'"],
                                env=env, capture_output=True, text=True)
        if answer.stdout.strip() == "1":
            fresh.append(time.monotonic() - written)
            break
    os.unlink(path)


def resident_per_entry(mdq, env):
    status = subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True, text=True).stdout
    match = re.search(r"\(([0-9]+) B/entry\)", status)
    return int(match.group(1)) if match else None


def drop_contents(corpus):
    """Empties the page cache (root only), then reads the tree's folders and
    inodes again: the crawl is warm, the files' contents come from the disk,
    as on a first index of a home."""
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    subprocess.run(["find", corpus, "-printf", ""], check=True)


def measure(build, corpus, seconds, probes=False, content=True, cold=False):
    mdq = os.path.join(build, "mdq")
    if cold:
        drop_contents(corpus)
    work = tempfile.mkdtemp(prefix="mdq-backlog-")
    env = dict(os.environ, MDQ_STATE_DIR=os.path.join(work, "state"), MDQ_RUNTIME_DIR=os.path.join(work, "run"),
               MDQ_SYSTEM_RUNTIME_DIR=os.path.join(work, "no-system"))
    for folder in ("state", "run"):
        os.makedirs(os.path.join(work, folder), mode=0o700)
    os.makedirs(os.path.join(corpus, "zz-mdq-probe"), exist_ok=True)
    command = [mdq, "daemon", "run"] + ([] if content else ["--no-content"])
    daemon = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(work, "daemon.log"), "w"))
    try:
        while content_counts(mdq, env) is None:
            time.sleep(0.05)
        index_add(mdq, ["--hidden", corpus], env)

        def sample():
            # Workers live and workers reaped (a worker is restarted after
            # so many files, or when it fails).
            workers = sum(cpu_seconds(child) for child in descendants_of(daemon.pid))
            # What the daemon reaped: its own and its reaped children's
            # CPU, less its own.
            workers += cpu_seconds(daemon.pid) - cpu_seconds(daemon.pid, children=False)
            imported, waiting = content_counts(mdq, env) or (0, 0)
            return (time.monotonic(), waiting, cpu_seconds(daemon.pid, children=False), workers, imported)

        # The window opens when imports have begun (the reconcile that
        # queues the backlog is in), and closes after SECONDS or when the
        # backlog is done, whichever comes first: a small corpus and a
        # large one are measured alike.
        deadline = time.monotonic() + 60
        start = sample()
        while content and start[4] == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
            start = sample()
        end = start
        queries, fresh = [], []
        while end[0] - start[0] < seconds and (not content or end[1] > 0):
            if probes:
                probe(mdq, env, corpus, len(queries), queries, fresh)
            time.sleep(0.5 if probes else 0.05)
            end = sample()
        elapsed = end[0] - start[0]
        return {
            "build": build,
            "content": content,
            "pending_at_start": start[1],
            "files_per_second": (end[4] - start[4]) / elapsed,
            "daemon_cpu_share": (end[2] - start[2]) / elapsed,
            "workers_cpu_share": (end[3] - start[3]) / elapsed,
            "query": (percentile(queries, 0.5), percentile(queries, 0.9)),
            "fresh": (percentile(fresh, 0.5), percentile(fresh, 0.9)),
            "probes": len(queries),
            "resident_per_entry": resident_per_entry(mdq, env),
        }
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_corpus = os.path.join(os.environ.get("MDQ_CORPUS", "/tmp/mdq-corpus"), "c1000000")
    parser.add_argument("--corpus", default=default_corpus)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--probes", action="store_true", help="time queries and freshness, with an idle run too")
    parser.add_argument("--cold", action="store_true",
                        help="files' contents not in the page cache (drops it before each build: root only)")
    args = parser.parse_args()
    builds = os.environ.get("MDQ_BUILDS", os.path.join(TOP, ".build/mdq-release")).split(":")
    if not args.probes:
        print("| build | pending when measured | files imported / s | daemon CPU (own threads) | import workers' CPU |")
        print("|---|---:|---:|---:|---:|")
    else:
        print("| build | content | pending when measured | files imported / s | daemon CPU (own threads) "
              "| import workers' CPU | name query p50 / p90 | create → visible p50 / p90 | resident B/entry |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for build in builds:
            for content in ([True, False] if args.probes else [True]):
                row = measure(build, args.corpus, args.seconds if content else min(args.seconds, 30),
                              probes=args.probes, content=content, cold=args.cold)
                cells = [build, f"{row['pending_at_start']:,}", f"{row['files_per_second']:.0f}",
                         f"{row['daemon_cpu_share'] * 100:.0f} %", f"{row['workers_cpu_share'] * 100:.0f} %"]
                if args.probes:
                    cells.insert(1, "on (backlog)" if content else "off (idle)")
                    cells += [f"{row['query'][0] * 1000:.1f} / {row['query'][1] * 1000:.1f} ms",
                              f"{row['fresh'][0] * 1000:.1f} / {row['fresh'][1] * 1000:.1f} ms",
                              str(row["resident_per_entry"])]
                print("| " + " | ".join(cells) + " |", flush=True)
    finally:
        shutil.rmtree(os.path.join(args.corpus, "zz-mdq-probe"), ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
