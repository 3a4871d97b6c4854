#!/usr/bin/env python3
"""The system index's figures (issue 25), measured in one run.

    Benchmarks/system-index.py --mount DIR [--runs N] [--trials N] [--out FILE]

DIR is a filesystem of its own (a loop-mounted ext4 image), filled
beforehand, for instance with 10 million entries:

    truncate -s 40G sys.img && mkfs.ext4 -q -N 11500000 -O ^has_journal sys.img
    mount -o loop sys.img DIR
    Benchmarks/make-tree.py DIR/home --files 10000000 --container --sparse

As root, it:

- reads every folder once (`find`), so both start on a warm page cache;
- builds plocate's database of DIR (`updatedb -U DIR`), timed;
- starts `mdq system run --mount DIR` (one fanotify mark) on private
  folders, and times its first crawl: until names answer (names first:
  the log's "are answerable"; another user's rare-word count is asked
  then), and until "live and checked" (every file's size and dates read);
- reads its resident bytes per entry (`mdq system status`) once the name
  trigrams are built;
- as another user (`setpriv`, a made-up uid with no daemon of its own),
  times per invocation, beside `plocate -d DB` run by the same user: a rare
  word counted and printed, a common word counted, `*.png` counted, a
  no-match query; both answer only what that user may see;
- freshness: a file created by root in a folder the user may see, and the
  time until the user's query over the socket finds it (p50, p99);
- an event storm: `--storm N` files created (a create and a close-write
  each) as fast as one process can, and the time from its end until the
  index holds them all; whether the engine's queue overflowed (rescans);
- a backlog: as many files again made while the daemon is stopped
  (SIGSTOP), their events queued in the kernel, and the time from SIGCONT
  until the index holds them all (and whether it folded or rescanned);
- the daemon's CPU over 10 s of quiet;
- a restart from the snapshot it saves on SIGTERM: another user's first
  answer, beside that user's own one-shot crawl.

Needs the release programs (Scripts/build-release stages them in
.build/mdq-release; $MDQ_BUILD names another folder), plocate, setpriv and
python3.
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

from rivals import Client, cpu_seconds

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
BUILD = os.environ.get("MDQ_BUILD", os.path.join(TOP, ".build/mdq-release"))
MDQ = os.path.join(BUILD, "mdq")
USER, GROUP = 45001, 46001


def as_user(command):
    return ["setpriv", f"--reuid={USER}", f"--regid={GROUP}", "--clear-groups"] + command


def timed(command, runs, env):
    """Median and minimum wall seconds of `command`, run `runs` times."""
    times = []
    out = ""
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        out = result.stdout
    return statistics.median(times), min(times), out


def count_query(client, name, hidden=True):
    reply = client.ask({
        "command": "query", "syntax": "name", "predicate": name, "output": "count",
        "rules": {"hidden": hidden, "exclude": [], "excludeChildren": []},
    })
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["count"]


def freshness(socket_path, folders, trials, hidden=True):
    """Seconds from a file's creation (by root) to its first appearance in
    the user's answers, for `trials` files (asking with hidden items, or
    not, as the index behind `socket_path` covers them)."""
    reads, writes = os.pipe()
    back_read, back_write = os.pipe()
    child = os.fork()
    if child == 0:
        # The other ends are the parent's: closed here, so its close ends the loop.
        os.close(writes)
        os.close(back_read)
        os.setgroups([])
        os.setgid(GROUP)
        os.setuid(USER)
        client = Client(socket_path)
        incoming = os.fdopen(reads)
        outgoing = os.fdopen(back_write, "w")
        while True:
            line = incoming.readline()
            if not line:
                break
            name, started = line.split()
            while count_query(client, name, hidden) == 0:
                pass
            outgoing.write(f"{time.monotonic() - float(started)}\n")
            outgoing.flush()
        os._exit(0)
    os.close(reads)
    os.close(back_write)
    to_child = os.fdopen(writes, "w")
    from_child = os.fdopen(back_read)
    delays = []
    for i in range(trials):
        folder = folders[i % len(folders)]
        name = f"fresh-{os.getpid()}-{i}.txt"
        started = time.monotonic()
        with open(os.path.join(folder, name), "w"):
            pass
        to_child.write(f"{name} {started}\n")
        to_child.flush()
        delays.append(float(from_child.readline()))
    to_child.close()
    os.waitpid(child, 0)
    return delays


def say(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description="The system index's figures.")
    parser.add_argument("--mount", required=True, help="a filesystem of its own, filled beforehand")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--storm", type=int, default=500_000)
    parser.add_argument("--rare", default="chapter_7777")
    parser.add_argument("--out", default=os.path.join(HERE, "results/system-index.md"))
    a = parser.parse_args()
    if os.getuid() != 0:
        sys.exit("system-index.py: run as root (fanotify marks, updatedb, setpriv)")
    mount = os.path.abspath(a.mount)
    work = tempfile.mkdtemp(prefix="mdq-system-bench-")
    os.chmod(work, 0o755)
    env = dict(os.environ, MDQ_SYSTEM_STATE_DIR=f"{work}/state", MDQ_SYSTEM_RUNTIME_DIR=f"{work}/run",
               MDQ_RUNTIME_DIR=f"{work}/no-user-daemon", HOME="/nonexistent")
    lines = [f"# The system index (issue 25)", "", f"`python3 Benchmarks/system-index.py --mount {mount}` "
             f"(`--runs {a.runs} --trials {a.trials} --storm {a.storm}`), one run, "
             f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores.", ""]
    figures = {}

    say("updatedb")
    # Both on a warm page cache: the folders read once beforehand.
    subprocess.run(["find", mount, "-printf", ""], check=True)
    # plocate's database of the same filesystem.
    db = f"{work}/plocate.db"
    started = time.perf_counter()
    subprocess.run(["updatedb", "-U", mount, "-o", db, "--prunepaths", "", "--prunefs", "", "--prunenames", ""],
                   check=True)
    figures["updatedb"] = time.perf_counter() - started
    os.chmod(db, 0o644)

    say("the system index's first crawl")
    # The system index: first crawl to live and checked.
    log = open(f"{work}/system.log", "w")
    started = time.perf_counter()
    daemon = subprocess.Popen([MDQ, "system", "run", "--mount", mount], env=env, stdout=log, stderr=log)
    socket_path = f"{work}/run/daemon.sock"
    while "scopes live and checked" not in (text := open(f"{work}/system.log").read()):
        if daemon.poll() is not None:
            sys.exit("the system index exited:\n" + text)
        if "names" not in figures and "are answerable" in text:
            # Names first: another user's first answer, while sizes and
            # dates are still being read.
            figures["names"] = time.perf_counter() - started
            answer = subprocess.run(as_user([MDQ, "-a", "--hidden", "--count", a.rare]), env=env,
                                    capture_output=True, text=True)
            figures["first_answer"] = time.perf_counter() - started
            figures["first_answer_text"] = (answer.stdout.strip() + " " + answer.stderr.strip()).strip()
        time.sleep(0.05)
    figures["crawl"] = time.perf_counter() - started

    def status():
        return subprocess.run([MDQ, "system", "status"], env=env, capture_output=True, text=True).stdout

    say("waiting for the name trigrams")
    root = Client(socket_path)
    while True:
        state = root.ask({"command": "status"})["status"]
        if state.get("nameGrams", {}).get("complete", False):
            break
        time.sleep(0.5)
    entries = state["entries"]
    figures["entries"] = entries
    figures["rss"] = state["residentBytes"]
    figures["filesystems"] = state.get("filesystems")

    # Per invocation, as another user: mdq (the front, straight to the
    # socket) beside plocate on the same filesystem.
    # --hidden: plocate lists hidden entries too. plocate matches words
    # anywhere in the path, mdq in names: the common word's counts differ.
    classes = [
        ("rare word, counted", ["-a", "--hidden", "--count", a.rare], ["-c", a.rare]),
        ("rare word, printed", ["-a", "--hidden", a.rare], [a.rare]),
        ("common word, counted", ["-a", "--hidden", "--count", "report"], ["-c", "report"]),
        ("`*.png`, counted", ["-a", "--hidden", "--count", "*.png"], ["-c", "*.png"]),
        ("no match, counted", ["-a", "--hidden", "--count", "zzqqxxyy"], ["-c", "zzqqxxyy"]),
    ]
    rows = []
    say("queries")
    for label, mdq_args, plocate_args in classes:
        mdq_median, mdq_best, mdq_out = timed(as_user([MDQ] + mdq_args), a.runs, env)
        plocate_median, plocate_best, plocate_out = timed(as_user(["plocate", "-d", db] + plocate_args), a.runs, env)
        rows.append((label, mdq_median, plocate_median, mdq_out.strip().splitlines()[:1],
                     plocate_out.strip().splitlines()[:1]))

    say("freshness")
    # Freshness, as that user, over the socket.
    folders = []
    for dirpath, dirnames, _ in os.walk(os.path.join(mount, "home")):
        folders.append(dirpath)
        if len(folders) >= 50:
            break
    delays = sorted(freshness(socket_path, folders, a.trials))
    figures["fresh_p50"] = delays[len(delays) // 2]
    figures["fresh_p99"] = delays[int(len(delays) * 0.99) - 1]
    figures["fresh_max"] = delays[-1]

    say("storm")
    # An event storm: files created as fast as one process can.
    storm = os.path.join(mount, "storm")
    os.makedirs(storm, exist_ok=True)
    before = root.ask({"command": "status"})["status"]
    started = time.perf_counter()
    for i in range(a.storm):
        os.close(os.open(os.path.join(storm, f"storm-{i}"), os.O_WRONLY | os.O_CREAT, 0o644))
    storm_end = time.perf_counter()
    while count_query(root, "storm-") < a.storm:
        time.sleep(0.01)
    figures["storm_make"] = storm_end - started
    figures["storm_catch_up"] = time.perf_counter() - storm_end
    after = root.ask({"command": "status"})["status"]
    figures["storm_rescans"] = after.get("rescans", 0) - before.get("rescans", 0)
    figures["storm_folded"] = after.get("foldedRescans", 0) - before.get("foldedRescans", 0)

    say("backlog")
    # A backlog: the daemon stopped (SIGSTOP) while as many files again are
    # made, so their events wait in the kernel's queue, then let go.
    backlog = os.path.join(mount, "backlog")
    os.makedirs(backlog, exist_ok=True)
    while count_query(root, "backlog") < 1:
        time.sleep(0.01)
    before = root.ask({"command": "status"})["status"]
    daemon.send_signal(signal.SIGSTOP)
    for i in range(a.storm):
        os.close(os.open(os.path.join(backlog, f"queued-{i}"), os.O_WRONLY | os.O_CREAT, 0o644))
    started = time.perf_counter()
    daemon.send_signal(signal.SIGCONT)
    while count_query(root, "queued-") < a.storm:
        time.sleep(0.01)
    figures["backlog_catch_up"] = time.perf_counter() - started
    after = root.ask({"command": "status"})["status"]
    figures["backlog_rescans"] = after.get("rescans", 0) - before.get("rescans", 0)
    figures["backlog_folded"] = after.get("foldedRescans", 0) - before.get("foldedRescans", 0)

    # Quiet: CPU over 10 s.
    time.sleep(2)
    cpu = cpu_seconds(daemon.pid, children=False)
    time.sleep(10)
    figures["idle_cpu"] = cpu_seconds(daemon.pid, children=False) - cpu

    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=300)

    say("restart")
    # A restart from the snapshot saved on SIGTERM: another user's first
    # answer (a rare word counted), beside that user's own one-shot crawl.
    started = time.perf_counter()
    log = open(f"{work}/system.log", "a")
    daemon = subprocess.Popen([MDQ, "system", "run", "--mount", mount], env=env, stdout=log, stderr=log)
    while not os.path.exists(socket_path):
        time.sleep(0.005)
    while True:
        answer = subprocess.run(as_user([MDQ, "--daemon", "-a", "--hidden", "--count", a.rare]), env=env,
                                capture_output=True, text=True)
        if answer.returncode == 0:
            break
        time.sleep(0.005)
    figures["restart_answer"] = time.perf_counter() - started
    figures["restart_text"] = (answer.stdout.strip() + " " + answer.stderr.strip()).strip()
    figures["user_crawl"], _, _ = timed(
        as_user([MDQ, "--no-daemon", "--hidden", "--count", "--onlyin", mount, a.rare]), 3, env)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=300)

    lines += [
        "| figure | mdq system index | plocate |",
        "|---|---|---|",
        f"| entries | {entries:,} | |",
        f"| first index, names answerable (vs `updatedb`) | {figures.get('names', figures['crawl']):.1f} s | "
        f"{figures['updatedb']:.1f} s |",
        f"| another user's first answer (a rare word counted) | {figures.get('first_answer', 0):.1f} s: "
        f"{figures.get('first_answer_text', '')} | |",
        f"| first index, everything read and checked | {figures['crawl']:.1f} s | |",
        f"| resident memory | {figures['rss'] / 1e6:.1f} MB, {figures['rss'] / entries:.1f} B/entry | |",
        f"| watched with | {figures['filesystems']} | |",
        f"| file created → found by another user | p50 {figures['fresh_p50'] * 1000:.2f} ms, "
        f"p99 {figures['fresh_p99'] * 1000:.2f} ms, max {figures['fresh_max'] * 1000:.2f} ms "
        f"({a.trials} files) | until the next `updatedb` |",
        f"| storm of {a.storm:,} creates ({2 * a.storm:,} events) | made in {figures['storm_make']:.1f} s; "
        f"all findable {figures['storm_catch_up']:.2f} s after the last; "
        f"{figures['storm_rescans']} full rescans, {figures['storm_folded']} folders rescanned after folding | |",
        f"| {2 * a.storm:,} events queued while it was stopped (SIGSTOP), then let go | "
        f"all findable {figures['backlog_catch_up']:.2f} s after; {figures['backlog_rescans']} full rescans, "
        f"{figures['backlog_folded']} folders rescanned after folding | |",
        f"| CPU over 10 s of quiet | {figures['idle_cpu']:.2f} s | |",
        f"| restart → another user's first answer (a rare word counted) | {figures['restart_answer']:.2f} s: "
        f"{figures['restart_text']} | that user's one-shot crawl: {figures['user_crawl']:.2f} s |",
        "",
        f"Per invocation, as uid {USER} (no daemon of its own; both answer only what it may see), "
        f"median of {a.runs}:",
        "",
        "| query | mdq | plocate | ratio | mdq's first line | plocate's first line |",
        "|---|---|---|---|---|---|",
    ]
    for label, mdq_median, plocate_median, mdq_first, plocate_first in rows:
        lines.append(
            f"| {label} | {mdq_median * 1000:.2f} ms | {plocate_median * 1000:.2f} ms | "
            f"{plocate_median / mdq_median:.2f}× | {' '.join(mdq_first)[:60]} | {' '.join(plocate_first)[:60]} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    open(a.out, "w").write(text)
    print(text)
    subprocess.run(["rm", "-rf", storm, backlog])


if __name__ == "__main__":
    main()
