#!/usr/bin/env python3
"""How fast the content indexer works through a large backlog, and what the
daemon itself spends meanwhile.

    MDQ_BUILDS=AFTER_DIR[:BEFORE_DIR...] python3 Benchmarks/backlog.py [--corpus DIR] [--seconds N]

For each build (a folder holding mdq, mdq-full and mdq-import-worker, as
Scripts/build-release stages them), starts `mdq daemon run` (content on,
private folders), runs `mdq index add CORPUS` (default
$MDQ_CORPUS/c1000000, else /tmp/mdq-corpus/c1000000), then, from the moment
the crawl is in, watches `status` for SECONDS (default 120): files imported
per second (from the pending count), the daemon's own CPU (its threads:
the engine, the content indexer, the store) and its import workers' CPU
over the same window. A backlog whose cost grows with its size shows as a
low rate and a daemon busier than its workers.
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
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid, children=False):
    """A process's CPU seconds; with `children`, those of its children it
    has reaped (workers restarted in between are counted too)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    first = 13 if children else 11
    return (int(fields[first]) + int(fields[first + 1])) / TICK


def children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def pending(mdq, env):
    """The content indexer's pending count from `mdq daemon status`; None
    while the daemon does not answer."""
    result = subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        return None
    match = re.search(r"content: .*?, ([0-9]+) pending", result.stdout)
    return int(match.group(1)) if match else 0


def measure(build, corpus, seconds):
    mdq = os.path.join(build, "mdq")
    work = tempfile.mkdtemp(prefix="mdq-backlog-")
    env = dict(os.environ, MDQ_STATE_DIR=os.path.join(work, "state"), MDQ_RUNTIME_DIR=os.path.join(work, "run"),
               MDQ_SYSTEM_RUNTIME_DIR=os.path.join(work, "no-system"))
    for folder in ("state", "run"):
        os.makedirs(os.path.join(work, folder), mode=0o700)
    daemon = subprocess.Popen([mdq, "daemon", "run"], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(work, "daemon.log"), "w"))
    try:
        while pending(mdq, env) is None:
            time.sleep(0.05)
        subprocess.run([mdq, "index", "add", corpus], env=env, check=True, capture_output=True)
        def sample():
            # Workers live and workers reaped (a worker is restarted after
            # so many files, or when it fails).
            workers = sum(cpu_seconds(child) for child in children_of(daemon.pid))
            workers += cpu_seconds(daemon.pid, children=True)
            return (time.monotonic(), pending(mdq, env) or 0, cpu_seconds(daemon.pid), workers)

        time.sleep(5)  # past the reconcile that queues the backlog
        start = sample()
        end = start
        while end[0] - start[0] < seconds:
            time.sleep(2)
            end = sample()
        elapsed = end[0] - start[0]
        return {
            "build": build,
            "pending_at_start": start[1],
            "files_per_second": (start[1] - end[1]) / elapsed,
            "daemon_cpu_share": (end[2] - start[2]) / elapsed,
            "workers_cpu_share": (end[3] - start[3]) / elapsed,
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
    args = parser.parse_args()
    builds = os.environ.get("MDQ_BUILDS", os.path.join(TOP, ".build/mdq-release")).split(":")
    print("| build | pending when measured | files imported / s | daemon CPU (own threads) | import workers' CPU |")
    print("|---|---:|---:|---:|---:|")
    for build in builds:
        row = measure(build, args.corpus, args.seconds)
        print(f"| {build} | {row['pending_at_start']:,} | {row['files_per_second']:.0f} | "
              f"{row['daemon_cpu_share'] * 100:.0f} % | {row['workers_cpu_share'] * 100:.0f} % |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
