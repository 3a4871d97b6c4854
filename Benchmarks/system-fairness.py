#!/usr/bin/env python3
"""What one user may cost the system index and the others (issue 35), in one run.

    Benchmarks/system-fairness.py [--files N] [--baseline BUILD] [--samples N] [--out FILE]

As root, it makes a loop-mounted ext4 filesystem of its own, fills it with
Benchmarks/make-tree.py (--files, default 300,000), and closes a seeded
tenth of its folders to the measuring users (modes 0700, 0711, 0750; owners
and groups other than theirs), so the visibility check has work to do. Then,
for the build in .build/mdq-release ($MDQ_BUILD; Scripts/build-release) and,
with --baseline, for another build (say the commit before, staged the same
way) on the same filesystem:

- the cost of judging what a user may see, per invocation of `mdq`:
  counting everything (`-a --count TRUEPREDICATE`, a visibility check per
  entry), `*.png` (a tenth of the names), a rare word; as the user and as
  root (who is not filtered), medians of --runs;
- fairness: user A's ordinary query (a name counted over the socket) alone
  (--samples of them, before the burst and again after it), then while
  user B runs a burst: --burst connections
  (default 10) each asking, again and again, a 3000-term MATCHES pattern
  with "budget": 100000, as the issue's attacker did. A's median and p90,
  and the ratio to A alone; how many of B's were refused as busy;
- the daemon's resident memory before the burst, at its peak, and 2 s
  after the burst ends.

Needs the release programs, setpriv, mkfs.ext4 and python3.
"""
import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
BUILD = os.environ.get("MDQ_BUILD", os.path.join(TOP, ".build/mdq-release"))
A, B, GROUP = (47001, 47002), (47003, 47004), 47100


def say(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Client:
    """The daemon protocol, as whoever runs it (after setuid)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buffer = b""

    def ask(self, request, stop=None):
        """The answer's last line; with `stop`, polled twice a second, None
        once it holds (the connection is closed: the query is cancelled)."""
        self.sock.sendall(json.dumps(dict(request, id=1)).encode() + b"\n")
        if stop:
            self.sock.settimeout(0.5)
        while True:
            while b"\n" not in self.buffer:
                try:
                    chunk = self.sock.recv(1 << 16)
                except socket.timeout:
                    if stop():
                        self.sock.close()
                        return None
                    continue
                if not chunk:
                    raise RuntimeError("the system index went away")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            reply = json.loads(line)
            if "error" in reply or reply.get("done"):
                return reply


class AsUser:
    """body() run in a child process as `user`; `result()` waits for it and
    returns what body returned (through a pipe: the child may write nowhere)."""

    def __init__(self, user, body):
        reads, writes = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(reads)
                os.setgroups([])
                os.setgid(user[1])
                os.setuid(user[0])
                with os.fdopen(writes, "w") as out:
                    json.dump(body(), out)
            finally:
                os._exit(0)
        os.close(writes)
        self.reads = reads

    def result(self):
        with os.fdopen(self.reads) as incoming:
            text = incoming.read()
        os.waitpid(self.pid, 0)
        return json.loads(text)


def ordinary_latencies(socket_path, samples):
    """User A: a name counted `samples` times, one after another; the
    seconds each took."""
    def body():
        client = Client(socket_path)
        times = []
        for _ in range(samples):
            started = time.perf_counter()
            reply = client.ask({"command": "query", "syntax": "name", "predicate": "invoice", "output": "count",
                                "rules": {"hidden": True, "exclude": [], "excludeChildren": []}})
            times.append(time.perf_counter() - started)
            if "error" in reply:
                raise SystemExit(str(reply))
        return times
    return AsUser(A, body).result()


def burst(socket_path, connections, pattern, stop_file):
    """User B: `connections` clients, each asking the expensive pattern
    again and again until `stop_file` exists (its folder readable by all);
    `result()` is how many were refused."""
    def body():
        refused = [0]
        def one():
            while not os.path.exists(stop_file):
                try:
                    client = Client(socket_path)
                    reply = client.ask({"command": "query", "predicate": pattern, "output": "count",
                                        "budget": 100000}, stop=lambda: os.path.exists(stop_file))
                except (OSError, RuntimeError):
                    refused[0] += 1
                    time.sleep(0.05)
                    continue
                if reply is None:
                    return
                if reply.get("error", {}).get("code") == "busy":
                    refused[0] += 1
                    time.sleep(0.05)
        threads = [threading.Thread(target=one) for _ in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return refused[0]
    return AsUser(B, body)


def timed(command, runs, env):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if result.returncode != 0:
            raise SystemExit(f"{command}: {result.stderr}")
    return statistics.median(times), result.stdout.strip()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def measure(build, mount, work, a, name):
    """Every figure for the build in `build`."""
    mdq = os.path.join(build, "mdq")
    env = dict(os.environ, MDQ_SYSTEM_STATE_DIR=f"{work}/state-{name}", MDQ_SYSTEM_RUNTIME_DIR=f"{work}/run-{name}",
               MDQ_RUNTIME_DIR=f"{work}/no-user-daemon", HOME="/nonexistent")
    socket_path = f"{work}/run-{name}/daemon.sock"
    log = open(f"{work}/system-{name}.log", "w")
    daemon = subprocess.Popen([mdq, "system", "run", "--mount", mount], env=env, stdout=log, stderr=log)
    figures = {}
    try:
        deadline = time.time() + 600
        while time.time() < deadline:
            if "checked against the disk" in open(f"{work}/system-{name}.log").read():
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"{name}: the system index did not start")
        say(f"{name}: per invocation")
        user = ["setpriv", f"--reuid={A[0]}", f"--regid={A[1]}", "--clear-groups"]
        for label, query in [("everything", "TRUEPREDICATE"), ("png", "*.png"), ("rare", "chapter_7777")]:
            for who, prefix in [("user", user), ("root", [])]:
                seconds, out = timed(prefix + [mdq, "-a", "--count", query], a.runs, env)
                figures[f"{label}-{who}"] = seconds
                figures[f"{label}-{who}-count"] = int(out)
        say(f"{name}: fairness")
        alone = ordinary_latencies(socket_path, a.samples)
        figures["alone-p50"], figures["alone-p90"] = statistics.median(alone), percentile(alone, 0.9)
        figures["rss-before"] = rss(daemon.pid)
        rnd = random.Random(5)
        words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(3000)]
        pattern = "kMDItemFSName MATCHES '(" + "|".join(words) + ")x'"
        stop_file = f"{work}/stop-{name}"
        attacker = burst(socket_path, a.burst, pattern, stop_file)
        peak = [0]
        sampling = [True]
        def sample():
            while sampling[0]:
                peak[0] = max(peak[0], rss(daemon.pid))
                time.sleep(0.05)
        sampler = threading.Thread(target=sample)
        sampler.start()
        time.sleep(3)  # the burst under way
        during = ordinary_latencies(socket_path, a.samples)
        open(stop_file, "w").close()
        refused = attacker.result()
        sampling[0] = False
        sampler.join()
        figures["during-p50"], figures["during-p90"] = statistics.median(during), percentile(during, 0.9)
        figures["refused"] = refused
        figures["rss-peak"] = peak[0]
        time.sleep(2)
        figures["rss-after"] = rss(daemon.pid)
        # A alone again, the machine as it is now: both rounds make "alone".
        alone += ordinary_latencies(socket_path, a.samples)
        figures["alone-p50"], figures["alone-p90"] = statistics.median(alone), percentile(alone, 0.9)
    finally:
        daemon.terminate()
        daemon.wait()
    return figures


def main():
    parser = argparse.ArgumentParser(description="What one user may cost the system index.")
    parser.add_argument("--files", type=int, default=300_000)
    parser.add_argument("--baseline", help="another build's folder (mdq, mdq-full) to measure the same way")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--out", default=os.path.join(HERE, "results/system-fairness.md"))
    a = parser.parse_args()
    if os.getuid() != 0:
        sys.exit("system-fairness.py: run as root (a loop filesystem, fanotify, setpriv)")
    work = tempfile.mkdtemp(prefix="mdq-fairness-")
    os.chmod(work, 0o755)
    image, mount = f"{work}/fs.img", f"{work}/mnt"
    os.mkdir(mount)
    subprocess.run(["truncate", "-s", "8G", image], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-N", str(a.files * 2 + 10000), "-O", "^has_journal", image], check=True)
    subprocess.run(["mount", "-o", "loop", image, mount], check=True)
    try:
        say(f"filling {a.files} files")
        subprocess.run([sys.executable, os.path.join(HERE, "make-tree.py"), f"{mount}/home", "--files",
                        str(a.files), "--container", "--sparse"], check=True, stdout=subprocess.DEVNULL)
        folders = []
        for root, dirs, _ in os.walk(mount):
            folders += [os.path.join(root, d) for d in dirs]
        rnd = random.Random(35)
        for folder in rnd.sample(folders, len(folders) // 10):
            os.chown(folder, rnd.choice([0, 47010]), rnd.choice([0, 47110]))
            os.chmod(folder, rnd.choice([0o700, 0o711, 0o750]))
        builds = [("this", BUILD)] + ([("baseline", a.baseline)] if a.baseline else [])
        results = {name: measure(build, mount, work, a, name) for name, build in builds}
    finally:
        subprocess.run(["umount", mount])
    lines = ["# What one user may cost the system index (issue 35)", "",
             f"`python3 Benchmarks/system-fairness.py --files {a.files} --burst {a.burst}`"
             + (" --baseline BUILD" if a.baseline else "") + f", one run, {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores; a tenth of the folders closed to the measuring users.", "",
             "| figure | " + " | ".join(name for name, _ in builds) + " |",
             "|---|" + "---|" * len(builds)]
    def row(label, key, unit):
        cells = []
        for name, _ in builds:
            value = results[name][key]
            cells.append(f"{value * 1000:.1f} ms" if unit == "ms" else f"{value / 2**20:.0f} MB" if unit == "MB"
                         else str(value))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label in ["everything", "png", "rare"]:
        row(f"`mdq -a --count` {label}, as a user (per invocation)", f"{label}-user", "ms")
        row(f"`mdq -a --count` {label}, as root (no filter)", f"{label}-root", "ms")
        lines.append(f"| entries counted for the user / for root | " + " | ".join(
            f"{results[name][label + '-user-count']:,} / {results[name][label + '-root-count']:,}"
            for name, _ in builds) + " |")
    row("A's name count alone, p50 (socket)", "alone-p50", "ms")
    row("A's name count alone, p90", "alone-p90", "ms")
    row(f"A's name count during B's burst of {a.burst}, p50", "during-p50", "ms")
    row(f"A's name count during B's burst, p90", "during-p90", "ms")
    row("B's requests refused as busy", "refused", "n")
    row("daemon resident before the burst", "rss-before", "MB")
    row("daemon resident at the burst's peak", "rss-peak", "MB")
    row("daemon resident 2 s after the burst", "rss-after", "MB")
    for name, _ in builds:
        r = results[name]
        lines.append("")
        lines.append(f"{name}: A's p50 during the burst is {r['during-p50'] / r['alone-p50']:.2f}× alone, "
                     f"p90 {r['during-p90'] / r['alone-p90']:.2f}×.")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(a.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
