#!/usr/bin/env python3
"""The system index's restart: another user's first answer, against that
user's own one-shot crawl, for one or more builds (issue 37).

    MDQ_BUILDS=AFTER[:BEFORE...] Benchmarks/system-restart.py --mount DIR [--rounds N] [--rare WORD]

As root. DIR is a filesystem of its own, filled beforehand (see
`system-index.py`). The first build indexes DIR (`mdq system run --mount
DIR` on private folders) until it is live and checked and its name
trigrams are built, then stops (saving its snapshot). Each round then
starts each build in turn on that snapshot (they share its format) and
times, from the start, until another user (`setpriv`, a made-up uid with
no daemon of its own) gets a count of a rare word through the socket: the
answer is marked stale, the index being checked against the disk. The
build's own log says how long restoring the snapshot took. The yardstick
is the same user's one-shot crawl of DIR (`--no-daemon`), median of 3.
Prints a Markdown table of medians (and minimums) over the rounds.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from rivals import Client

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
USER, GROUP = 45001, 46001


def as_user(command):
    return ["setpriv", f"--reuid={USER}", f"--regid={GROUP}", "--clear-groups"] + command


def main():
    parser = argparse.ArgumentParser(description="The system index's restart.")
    parser.add_argument("--mount", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rare", default="chapter_7777")
    a = parser.parse_args()
    if os.getuid() != 0:
        sys.exit("system-restart.py: run as root (fanotify marks, setpriv)")
    builds = os.environ.get("MDQ_BUILDS", os.path.join(TOP, ".build/mdq-release")).split(":")
    mount = os.path.abspath(a.mount)
    work = tempfile.mkdtemp(prefix="mdq-system-restart-")
    os.chmod(work, 0o755)
    env = dict(os.environ, MDQ_SYSTEM_STATE_DIR=f"{work}/state", MDQ_SYSTEM_RUNTIME_DIR=f"{work}/run",
               MDQ_RUNTIME_DIR=f"{work}/no-user-daemon", HOME="/nonexistent")
    socket_path = f"{work}/run/daemon.sock"
    log_path = f"{work}/system.log"
    subprocess.run(["find", mount, "-printf", ""], check=True)

    print(f"[{time.strftime('%H:%M:%S')}] first index with {builds[0]}", file=sys.stderr, flush=True)
    log = open(log_path, "w")
    daemon = subprocess.Popen([os.path.join(builds[0], "mdq"), "system", "run", "--mount", mount], env=env,
                              stdout=log, stderr=log)
    while "scopes live and checked" not in open(log_path).read():
        if daemon.poll() is not None:
            sys.exit("the system index exited:\n" + open(log_path).read())
        time.sleep(0.2)
    root = Client(socket_path)
    while not root.ask({"command": "status"})["status"].get("nameGrams", {}).get("complete", False):
        time.sleep(0.5)
    entries = root.ask({"command": "status"})["status"]["entries"]
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=300)
    snapshot = os.path.getsize(f"{work}/state/index.snapshot")

    answers = {build: [] for build in builds}
    restores = {build: [] for build in builds}
    for round in range(a.rounds):
        for build in builds:
            mdq = os.path.join(build, "mdq")
            if os.path.exists(socket_path):
                os.unlink(socket_path)
            with open(log_path, "w") as log:
                started = time.perf_counter()
                daemon = subprocess.Popen([mdq, "system", "run", "--mount", mount], env=env, stdout=log, stderr=log)
                while True:
                    answer = subprocess.run(as_user([mdq, "--daemon", "-a", "--hidden", "--count", a.rare]), env=env,
                                            capture_output=True, text=True)
                    if answer.returncode == 0:
                        break
                    if daemon.poll() is not None:
                        sys.exit("the system index exited:\n" + open(log_path).read())
                    time.sleep(0.005)
                answers[build].append(time.perf_counter() - started)
                if "still checking" not in answer.stderr:
                    print(f"note: {build}: the answer was not marked stale", file=sys.stderr)
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(timeout=300)
            restored = re.search(r"restored the index \(\d+ entries\) from .* in ([0-9.]+) s", open(log_path).read())
            restores[build].append(float(restored.group(1)) if restored else float("nan"))
    crawls = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(as_user([os.path.join(builds[0], "mdq"), "--no-daemon", "--hidden", "--count", "--onlyin",
                                mount, a.rare]), env=env, capture_output=True, check=True)
        crawls.append(time.perf_counter() - started)
    crawl = statistics.median(crawls)

    print(f"`MDQ_BUILDS={':'.join(builds)} python3 Benchmarks/system-restart.py --mount {mount} "
          f"--rounds {a.rounds}`, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores: {entries:,} entries, "
          f"a snapshot of {snapshot / 1e6:.0f} MB; the user's one-shot crawl {crawl:.2f} s (median of 3).")
    print()
    print("| build | snapshot restored in (log) | start → another user's first answer | answer / crawl |")
    print("|---|---|---|---|")
    for build in builds:
        median = statistics.median(answers[build])
        print(f"| {build} | {statistics.median(restores[build]):.2f} s | {median:.2f} s "
              f"(min {min(answers[build]):.2f} s) | {100 * median / crawl:.0f} % |")


if __name__ == "__main__":
    main()
