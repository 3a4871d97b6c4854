#!/usr/bin/env python3
"""A user's daemon beside the system index (issue 25), measured in one run.

    Benchmarks/user-follow.py --mount DIR --scope DIR/SUB [--trials N] [--out FILE]

DIR is a filesystem of its own, filled beforehand (see system-index.py);
SUB a folder in it that a user indexes. As root, it starts the system
index on DIR (one fanotify mark), then, as another user (`setpriv`, a
made-up uid), that user's daemon twice, each indexing SUB with
`mdq index add`:

- followed: the system index runs where the daemon looks for it, so the
  scope is followed through it (no inotify watch);
- inotify: the daemon is pointed at no system index, so every folder of
  the scope gets an inotify watch, as without one.

For each: the time `mdq index add` takes, the daemon's entries, inotify
watches and folders followed, the daemon's and the system index's resident memory,
and freshness: a file created by root in a folder of the scope, and the
time until that user's daemon answers it (p50, p99).

Needs the release programs (Scripts/build-release stages them in
.build/mdq-release; $MDQ_BUILD names another folder), setpriv and python3.
"""
import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("system_index", os.path.join(HERE, "system-index.py"))
system_index = importlib.util.module_from_spec(spec)
spec.loader.exec_module(system_index)
MDQ, USER, GROUP = system_index.MDQ, system_index.USER, system_index.GROUP
Client, freshness, say, as_user = system_index.Client, system_index.freshness, system_index.say, system_index.as_user


def resident(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


STATUS = """
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"id":1,"command":"status"}\\n')
data = b""
while b"\\n" not in data:
    data += s.recv(1 << 16)
print(json.dumps(json.loads(data.split(b"\\n")[0])["status"]))
"""


def user_status(socket_path):
    """The user's daemon's status, asked as that user (it serves no one else)."""
    result = subprocess.run(as_user(["/usr/bin/python3", "-c", STATUS, socket_path]), capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"status failed: {result.stderr}")
    return json.loads(result.stdout)


def user_daemon(work, name, system_run):
    """Starts the user's daemon (names only) with its own folders; returns
    the process and its environment."""
    base = os.path.join(work, name)
    for folder in ("run", "state"):
        os.makedirs(os.path.join(base, folder), mode=0o700)
        os.chown(os.path.join(base, folder), USER, GROUP)
    os.chown(base, USER, GROUP)
    env = dict(os.environ, MDQ_RUNTIME_DIR=f"{base}/run", MDQ_STATE_DIR=f"{base}/state", HOME=base,
               MDQ_SYSTEM_RUNTIME_DIR=system_run, MDQ_SYSTEM_STATE_DIR=f"{work}/state")
    log = open(f"{base}/daemon.log", "w")
    process = subprocess.Popen(as_user([MDQ, "daemon", "run", "--no-content"]), env=env, stdout=log, stderr=log)
    while not os.path.exists(f"{base}/run/daemon.sock"):
        if process.poll() is not None:
            sys.exit(f"the {name} daemon exited:\n" + open(f"{base}/daemon.log").read())
        time.sleep(0.05)
    return process, env, f"{base}/run/daemon.sock"


def main():
    parser = argparse.ArgumentParser(description="A user's daemon following the system index.")
    parser.add_argument("--mount", required=True)
    parser.add_argument("--scope", required=True)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--out", default=os.path.join(HERE, "results/user-follow.md"))
    a = parser.parse_args()
    if os.getuid() != 0:
        sys.exit("user-follow.py: run as root (fanotify marks, setpriv)")
    mount, scope = os.path.abspath(a.mount), os.path.abspath(a.scope)
    work = tempfile.mkdtemp(prefix="mdq-follow-bench-")
    os.chmod(work, 0o755)
    system_env = dict(os.environ, MDQ_SYSTEM_STATE_DIR=f"{work}/state", MDQ_SYSTEM_RUNTIME_DIR=f"{work}/run")

    say("the system index")
    log = open(f"{work}/system.log", "w")
    system = subprocess.Popen([MDQ, "system", "run", "--mount", mount], env=system_env, stdout=log, stderr=log)
    try:
        measure(a, work, mount, scope, system)
    finally:
        # A run that fails leaves no daemon behind (nor its fanotify mark).
        if system.poll() is None:
            system.terminate()
            system.wait(timeout=300)


def measure(a, work, mount, scope, system):
    while "scopes live and checked" not in open(f"{work}/system.log").read():
        if system.poll() is not None:
            sys.exit("the system index exited:\n" + open(f"{work}/system.log").read())
        time.sleep(0.1)
    root = Client(f"{work}/run/daemon.sock")
    while not root.ask({"command": "status"})["status"].get("nameGrams", {}).get("complete", False):
        time.sleep(0.5)
    system_entries = root.ask({"command": "status"})["status"]["entries"]

    folders = [path for path, _, _ in os.walk(scope)]
    # Freshness is asked without hidden items, as the daemon indexes the
    # scope: files go in folders that are not hidden.
    shown = [path for path in folders if "/." not in path[len(scope):]]
    random.seed(7)
    sample = random.sample(shown, min(50, len(shown)))
    results = {}
    for mode, system_run in (("followed", f"{work}/run"), ("inotify", f"{work}/no-system-index")):
        say(f"the user's daemon, {mode}")
        system_before = resident(system.pid)
        daemon, env, socket_path = user_daemon(work, mode, system_run)
        started = time.perf_counter()
        added = subprocess.run(as_user([MDQ, "index", "add", "--no-content", scope]), env=env,
                               capture_output=True, text=True)
        if added.returncode != 0:
            sys.exit(f"mdq index add failed: {added.stderr}")
        while not all(s.get("live") for s in user_status(socket_path)["scopes"]):
            time.sleep(0.05)
        add_seconds = time.perf_counter() - started
        state = user_status(socket_path)
        delays = sorted(freshness(socket_path, sample, a.trials, hidden=False))
        results[mode] = dict(
            add=add_seconds, entries=state["entries"], watches=state["watches"],
            followed=state.get("followedFolders", 0),
            rss=resident(daemon.pid), system_growth=resident(system.pid) - system_before,
            p50=delays[len(delays) // 2], p99=delays[int(len(delays) * 0.99) - 1], worst=delays[-1])
        daemon.terminate()
        daemon.wait(timeout=120)
        # The files freshness made go, so runs leave the filesystem as found.
        for trial in range(a.trials):
            try:
                os.unlink(os.path.join(sample[trial % len(sample)], f"fresh-{os.getpid()}-{trial}.txt"))
            except FileNotFoundError:
                pass
    system.terminate()
    system.wait(timeout=300)
    write_results(a, mount, scope, folders, system_entries, results)


def write_results(a, mount, scope, folders, system_entries, results):
    f, i = results["followed"], results["inotify"]
    lines = [
        "# A user's daemon beside the system index (issue 25)", "",
        f"`python3 Benchmarks/user-follow.py --mount {mount} --scope {scope} --trials {a.trials}`, one run, "
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores. The system index holds {system_entries:,} entries; "
        f"uid {USER}'s daemon (`--no-content`) indexes the scope ({len(folders):,} folders).", "",
        "| figure | followed through the system index | inotify (no system index) |",
        "|---|---|---|",
        f"| `mdq index add` until live | {f['add']:.1f} s | {i['add']:.1f} s |",
        f"| entries | {f['entries']:,} | {i['entries']:,} |",
        f"| inotify watches (the daemon's) | {f['watches']:,} | {i['watches']:,} |",
        f"| folders followed through the system index | {f['followed']:,} | {i['followed']:,} |",
        f"| the user daemon's resident memory | {f['rss'] / 1e6:.1f} MB | {i['rss'] / 1e6:.1f} MB |",
        f"| the system index's growth while it was followed | {f['system_growth'] / 1e6:.1f} MB | "
        f"{i['system_growth'] / 1e6:.1f} MB |",
        f"| file created by root → found by the user's daemon ({a.trials} files) | p50 {f['p50'] * 1000:.2f} ms, "
        f"p99 {f['p99'] * 1000:.2f} ms, max {f['worst'] * 1000:.2f} ms | p50 {i['p50'] * 1000:.2f} ms, "
        f"p99 {i['p99'] * 1000:.2f} ms, max {i['worst'] * 1000:.2f} ms |",
    ]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    open(a.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
