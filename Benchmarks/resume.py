#!/usr/bin/env python3
"""What a subscription costs to resume after the daemon restarts, with and
without `since` (protocol 2), measured in one run.

    Benchmarks/resume.py [--files 100000] [--changes 1000] [--out FILE]

Makes a tree of FILES files (in folders of 100), starts `mdq daemon run
--no-content` on private folders, indexes the tree, subscribes to every
entry over the socket and keeps the clock of the answer; stops the daemon,
makes CHANGES changes (two fifths rewritten, three tenths created, three
tenths deleted), starts it again (from its snapshot) and subscribes twice:
`since` the kept clock, and afresh. Reports the bytes and items each sent
until its first answer was complete (the `didFinishGathering` and, when
resumed, the `didUpdate` that follows), and the time each took.

Uses the programs in .build/mdq-release (Scripts/build-release), or the
folder $MDQ_BUILD names (a debug build is as good for bytes).
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from rivals import index_add

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
MDQ = os.path.join(os.environ.get("MDQ_BUILD", os.path.join(TOP, ".build/mdq-release")), "mdq")


def subscribe(path, scope, since=None):
    """Bytes and items until the first answer is complete, its clock, and
    the seconds it took."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    request = {"id": 1, "command": "subscribe", "protocol": 2, "predicate": "TRUEPREDICATE", "interval": 0,
               "scopes": [{"path": scope}]}
    if since:
        request["since"] = since
    start = time.monotonic()
    connection.sendall((json.dumps(request) + "\n").encode())
    received, items, clock, fresh = 0, 0, None, None
    reader = connection.makefile("rb")
    for line in reader:
        received += len(line)
        event = json.loads(line)
        if "error" in event:
            sys.exit("daemon: " + event["error"]["message"])
        kind = event.get("event")
        if kind == "result":
            items += 1
        elif kind == "didFinishGathering":
            clock, fresh = event["clock"], event["fresh"]
            if fresh or not since:
                break
        elif kind == "didUpdate":
            items += len(event["added"]) + len(event["changed"]) + len(event["removed"])
            break
    elapsed = time.monotonic() - start
    connection.close()
    return received, items, clock, fresh, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--out")
    a = parser.parse_args()
    state = tempfile.mkdtemp(prefix="mdq-resume-bench-")
    tree = os.path.join(state, "tree")
    for i in range(a.files):
        folder = os.path.join(tree, f"d{i // 100:04d}")
        if i % 100 == 0:
            os.makedirs(folder)
        with open(os.path.join(folder, f"file-{i}.txt"), "w") as f:
            f.write(str(i))
    env = dict(os.environ, MDQ_RUNTIME_DIR=os.path.join(state, "run"), MDQ_STATE_DIR=os.path.join(state, "state"))
    sock = os.path.join(state, "run", "daemon.sock")
    log = open(os.path.join(state, "daemon.log"), "a")
    lines = []

    def say(text):
        print(text, flush=True)
        lines.append(text)

    def start():
        daemon = subprocess.Popen([MDQ, "daemon", "run", "--no-content"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=log)
        while subprocess.run([MDQ, "daemon", "status"], env=env, capture_output=True).returncode != 0:
            time.sleep(0.02)
        return daemon

    def settle():
        while "checking the index" in subprocess.run([MDQ, "daemon", "status"], env=env, capture_output=True,
                                                     text=True).stdout:
            time.sleep(0.05)

    daemon = start()
    try:
        index_add(MDQ, [tree], env)
        full, full_items, clock, _, first_time = subscribe(sock, tree)
        say(f"{full_items} results; the first subscription sent {full} bytes in {first_time:.2f} s")
        subprocess.run([MDQ, "daemon", "stop"], env=env, check=True, capture_output=True)
        daemon.wait()
        rng = random.Random(1)
        chosen = rng.sample(range(a.files), a.changes * 7 // 10)
        rewrite, delete = chosen[: a.changes * 4 // 10], chosen[a.changes * 4 // 10:]
        for i in rewrite:
            with open(os.path.join(tree, f"d{i // 100:04d}", f"file-{i}.txt"), "a") as f:
                f.write(" again")
        for i in delete:
            os.unlink(os.path.join(tree, f"d{i // 100:04d}", f"file-{i}.txt"))
        for n in range(a.changes - len(chosen)):
            with open(os.path.join(tree, f"d{(n * 37) % (a.files // 100):04d}", f"new-{n}.txt"), "w") as f:
                f.write("new")
        say(f"daemon stopped; {len(rewrite)} files rewritten, {len(delete)} deleted, "
            f"{a.changes - len(chosen)} created; daemon started again from its snapshot")
        daemon = start()
        settle()
        resumed, resumed_items, _, fresh, resumed_time = subscribe(sock, tree, since=clock)
        again, again_items, _, _, again_time = subscribe(sock, tree)
        say(f"resumed since the clock: fresh {str(fresh).lower()}, {resumed_items} items, {resumed} bytes, "
            f"{resumed_time:.2f} s")
        say(f"subscribed again without it: {again_items} items, {again} bytes, {again_time:.2f} s")
        say(f"ratio: {again / max(1, resumed):.0f}x fewer bytes resumed")
    finally:
        subprocess.run([MDQ, "daemon", "stop"], env=env, capture_output=True)
        daemon.wait()
        shutil.rmtree(state, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("# Resuming a subscription after a daemon restart (issue 36)\n\n")
            f.write(f"`python3 Benchmarks/resume.py --files {a.files} --changes {a.changes}`, "
                    f"one run, the `mdq` daemon over its socket ({MDQ}).\n\n")
            for line in lines:
                f.write(f"- {line}\n")


if __name__ == "__main__":
    main()
