#!/usr/bin/env python3
"""The index daemon's figures, measured in one run on one corpus.

    Benchmarks/daemon.py [--corpus DIR] [--runs N] [--out FILE]

Starts `mdq daemon run --no-content` on private folders (the name and stat
index; content indexing has its own benchmark, content-compare.py), indexes DIR (default
$MDQ_CORPUS/c1000000, else /tmp/mdq-corpus/c1000000; make it with
Benchmarks/make-tree.py --files 1000000 --container DIR) and measures:

- `mdq --count` through the daemon, end to end (process start, connect,
  answer, exit), beside `plocate -c` and a warm `watchman` query on the same
  patterns, each timed per invocation by hyperfine;
- the query classes of issue 24 beside plocate on the same tree: a rare
  word (`--rare`, default `chapter 68.t`, a handful of matches) counted and
  printed, a common word (`report`, ~34k matches) counted, `*.png` counted
  and printed, a no-match query and `--version`;
- printing the `*.png` paths through the daemon beside printing them from an
  in-process index (`mdq-gather --print`);
- freshness: how often a file created is in the answer of a query made
  20 ms later, and the smallest delay at which it always is;
- restart from the snapshot: time to the first answer and to the end of the
  verification, beside the initial crawl (`mdq index add`);
- the daemon's resident bytes per indexed entry with every folder watched,
  its CPU while idle, and that clients add no watches.

Needs the release programs Scripts/build-release stages in
.build/mdq-release (what Scripts/install installs; $MDQ_BUILD names another
folder holding mdq and mdq-full), mdq-gather (`swift build -c release` here),
hyperfine, plocate and
watchman (compare.sh installs them). Takes about 3 minutes for a million
files, most of it plocate's and watchman's own indexing.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from rivals import index_add

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
MDQ = os.path.join(os.environ.get("MDQ_BUILD", os.path.join(TOP, ".build/mdq-release")), "mdq")
GATHER = os.path.join(HERE, ".build/release/mdq-gather")


def run(command, env=None, check=True):
    return subprocess.run(command, shell=True, env=env, capture_output=True, text=True, check=check).stdout


def hyperfine(commands, runs, env):
    """Median seconds of each command, runs interleaved by hyperfine."""
    with tempfile.NamedTemporaryFile(suffix=".json") as export:
        # -i: plocate exits 1 when it finds nothing.
        args = ["hyperfine", "-N", "-i", "--warmup", "3", "--runs", str(runs), "--export-json", export.name]
        args += [c for c in commands]
        subprocess.run(args, env=env, check=True, capture_output=True)
        results = json.load(open(export.name))["results"]
    return [statistics.median(r["times"]) for r in results]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(env):
    out = run(f"{MDQ} daemon status", env=env)
    entries = int(re.search(r"index: (\d+) entries", out).group(1))
    watches = int(re.search(r"(\d+) watches", out).group(1))
    return out, entries, watches


def main():
    parser = argparse.ArgumentParser(description="The index daemon's figures.")
    default = os.path.join(os.environ.get("MDQ_CORPUS", "/tmp/mdq-corpus"), "c1000000")
    parser.add_argument("--corpus", default=default)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default=None)
    parser.add_argument("--rare", default="chapter 68.t", help="a name fragment with a handful of matches")
    parser.add_argument("--no-hidden", dest="hidden", action="store_false",
                        help="index and query without hidden entries (default: every entry, as plocate and watchman do)")
    parser.add_argument("--no-watchman", dest="watchman", action="store_false",
                        help="leave watchman out (it holds every folder's watch and several GB at 10M entries)")
    a = parser.parse_args()
    # The daemon and watchman each watch every folder, from the same
    # per-user inotify budget: below twice the folders, whichever comes
    # second is refused watches (watchman then answers errors only).
    limit = int(open("/proc/sys/fs/inotify/max_user_watches").read())
    folders = sum(1 for _ in os.walk(a.corpus))
    if limit < (2 if a.watchman else 1) * folders + 10000:
        print(f"warning: fs.inotify.max_user_watches is {limit}, {folders} folders need about {2 * folders} "
              f"(the daemon's and watchman's); raise it: sysctl fs.inotify.max_user_watches={4 * folders}",
              file=sys.stderr, flush=True)
    hidden = " --hidden" if a.hidden else ""
    corpus = os.path.abspath(a.corpus)
    if not os.path.exists(MDQ):
        sys.exit(f"{MDQ} is missing: build in release mode first")
    if not os.path.exists(GATHER):
        print(f"{GATHER} is missing (build Benchmarks/ in release mode): no in-process comparison", flush=True)
    state = tempfile.mkdtemp(prefix="mdq-daemon-bench-")
    env = dict(os.environ, MDQ_RUNTIME_DIR=os.path.join(state, "run"), MDQ_STATE_DIR=os.path.join(state, "state"))
    lines = []

    def say(text):
        print(text, flush=True)
        lines.append(text)

    # The daemon's log (and a crash's backtrace) goes to daemon.log in the
    # state folder.
    log = open(os.path.join(state, "daemon.log"), "a")
    daemon = subprocess.Popen([MDQ, "daemon", "run", "--no-content"], env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        while subprocess.run([MDQ, "daemon", "status"], env=env, capture_output=True).returncode != 0:
            time.sleep(0.02)
        start = time.monotonic()
        index_add(MDQ, ([hidden.strip()] if hidden else []) + [corpus], env)
        crawl = time.monotonic() - start
        while "checking the index" in status(env)[0] or "still being built" in status(env)[0]:
            time.sleep(0.05)
        text, entries, watches = status(env)
        grams = re.search(r"name trigrams: (\d+) postings, ([\d.]+ \w+) \((\d+) B/entry\)", text)
        if grams:
            say(f"name trigram lists: {grams.group(1)} postings, {grams.group(2)} = {grams.group(3)} B per entry")
        rss = int(open(f"/proc/{daemon.pid}/status").read().split("VmRSS:")[1].split()[0]) * 1024
        say(f"corpus {corpus}: {entries} entries indexed, {watches} watches (every folder); "
            f"initial crawl through the daemon {crawl:.3f} s")
        say(f"daemon resident memory {rss / 1e6:.1f} MB = {rss / entries:.1f} B per indexed entry")
        before = cpu_seconds(daemon.pid)
        time.sleep(10)
        say(f"idle for 10 s: {cpu_seconds(daemon.pid) - before:.3f} s CPU")

        # plocate's database and a watching watchman, as compare.py makes them.
        db = os.path.join(state, "plocate.db")
        run(f"updatedb -l 0 -U {corpus} -o {db}")
        if a.watchman:
            run("watchman watch-del-all", check=False)
            run(f"watchman watch {corpus}")
        queries = {}
        for key, expression in [("png", ["match", "*.png", "basename"]),
                                ("report", ["match", "*report*", "basename", {"includedotfiles": True}])]:
            path = os.path.join(state, f"{key}.json")
            json.dump(["query", corpus, {"expression": expression, "fields": ["name"]}], open(path, "w"))
            queries[key] = path
        # watchman answers an error (a JSON "error" field) when it could not
        # watch every folder (the inotify watch limit, which the daemon's own
        # watches share): its time would then be an error's, so its column
        # is left out and the reason said.
        answer = json.loads(run(f"watchman -j < {queries['png']}", check=False) or "{}") if a.watchman else {}
        watchman_error = (answer.get("error") or ("files" not in answer and "no answer") or None) if a.watchman \
            else "not run (--no-watchman)"
        if watchman_error:
            say(f"watchman left out: {watchman_error.splitlines()[0][:200]}")
        groups = [
            ("`mdq --count \"kMDItemFSName LIKE '*.png'\"`",
             [f"{MDQ} --daemon -a{hidden} --count \"kMDItemFSName LIKE '*.png'\"", f"plocate -c -d {db} '*.png'",
              f"sh -c 'watchman -j < {queries['png']} > /dev/null'"]),
            ("`mdq --count --name report`",
             [f"{MDQ} --daemon -a{hidden} --count --name report", f"plocate -c -i -d {db} report",
              f"sh -c 'watchman -j < {queries['report']} > /dev/null'"]),
        ]
        rare = a.rare.replace("'", "")
        classes = [
            (f"rare word, count: `mdq --count --name '{rare}'`",
             f"{MDQ} --daemon -a{hidden} --count --name '{rare}'", f"plocate -c -i -d {db} '{rare}'"),
            (f"rare word, print: `mdq --name '{rare}'`",
             f"{MDQ} --daemon -a{hidden} --name '{rare}'", f"plocate -i -d {db} '{rare}'"),
            ("common word, count: `mdq --count --name report`",
             f"{MDQ} --daemon -a{hidden} --count --name report", f"plocate -c -i -d {db} report"),
            ("common word, print: `mdq --name report`",
             f"{MDQ} --daemon -a{hidden} --name report", f"plocate -i -d {db} report"),
            ("suffix glob, count: `mdq --count '*.png'`",
             f"{MDQ} --daemon -a{hidden} --count '*.png'", f"plocate -c -d {db} '*.png'"),
            ("suffix glob, print: `mdq '*.png'`", f"{MDQ} --daemon -a{hidden} '*.png'", f"plocate -d {db} '*.png'"),
            ("no match: `mdq --count --name zzqqxx`",
             f"{MDQ} --daemon -a{hidden} --count --name zzqqxx", f"plocate -c -i -d {db} zzqqxx"),
            ("`mdq --version`", f"{MDQ} --version", "plocate --version"),
        ]
        say("")
        say("| query class (per invocation; mdq through the daemon) | matches | mdq | plocate | ratio |")
        say("|---|---|---|---|---|")
        for label, mine, theirs in classes:
            if "--version" in mine:
                matches = "-"
            elif "--count" in mine:
                matches = run(mine, env=env).strip()
            else:
                matches = run(mine.replace(" -a", " -a --count", 1), env=env).strip()
            m, p = hyperfine([mine, theirs], a.runs, env)
            faster = f"mdq {p / m:.1f}× faster" if m <= p else f"plocate {m / p:.1f}× faster"
            say(f"| {label} | {matches} | {m * 1000:.2f} ms | {p * 1000:.2f} ms | {faster} |")

        say("")
        say("| what (per invocation, through the daemon) | mdq | plocate -c | watchman (warm) | vs plocate | vs watchman |")
        say("|---|---|---|---|---|---|")
        for label, commands in groups:
            if watchman_error:
                m, p = hyperfine(commands[:2], a.runs, env)
                say(f"| {label} | {m * 1000:.2f} ms | {p * 1000:.1f} ms | n/a | {p / m:.1f}× faster | n/a |")
                continue
            m, p, w = hyperfine(commands, a.runs, env)
            say(f"| {label} | {m * 1000:.2f} ms | {p * 1000:.1f} ms | {w * 1000:.1f} ms | {p / m:.1f}× faster | {w / m:.1f}× faster |")

        # Printing the png paths: through the daemon, and from an index in process.
        # hyperfine sends the output to /dev/null, as mdq-gather --print does.
        (printed,) = hyperfine([f"{MDQ} --daemon -a{hidden} \"kMDItemFSName LIKE '*.png'\""], a.runs, env)
        if os.path.exists(GATHER):
            out = run(f"{GATHER} {corpus}{hidden} --print \"kMDItemFSName LIKE '*.png'\"")
            in_process = float(re.search(r"print median ([\d.]+) ms\s+paths (\d+)", out).group(1)) / 1000
            count = int(re.search(r"paths (\d+)", out).group(1))
            say("")
            say(f"printing {count} paths: through the daemon {printed * 1000:.1f} ms per invocation; "
                f"from an in-process index {in_process * 1000:.1f} ms; ratio {printed / in_process:.2f}")

        # Freshness.
        fresh_dir = os.path.join(corpus, "mdq-fresh")
        os.makedirs(fresh_dir, exist_ok=True)
        time.sleep(0.5)
        found = 0
        for i in range(20):
            name = f"fresh-{os.getpid()}-{i}.txt"
            open(os.path.join(fresh_dir, name), "w").close()
            time.sleep(0.020)
            if run(f"{MDQ} --daemon -a{hidden} --count \"kMDItemFSName == '{name}'\"", env=env).strip() == "1":
                found += 1
        # Create -> visible: how long after a file is made a query (an exact
        # name, answered from the trigram lists) first finds it; each look is
        # a new mdq process, so this includes one process start at least.
        delays = []
        for i in range(20):
            name = f"seen-{os.getpid()}-{i}.txt"
            made = time.monotonic()
            open(os.path.join(fresh_dir, name), "w").close()
            while run(f"{MDQ} --daemon -a{hidden} --count \"kMDItemFSName == '{name}'\"", env=env).strip() != "1":
                if time.monotonic() - made > 10:
                    sys.exit(f"{name} not found 10 s after it was made: {status(env)[0]}")
            delays.append(time.monotonic() - made)
        shutil.rmtree(fresh_dir)
        say(f"freshness: {found} of 20 files created were in the answer of a query made 20 ms later; "
            f"create -> first found: median {statistics.median(delays) * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms")

        # N clients on the same scope add no watches.
        clients = [subprocess.Popen([MDQ, "--live", "-a", "--count", "*.png"], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL) for _ in range(3)]
        for client in clients:
            client.stdout.readline()
        _, _, watches_with_clients = status(env)
        client_watches = sum(
            open(f"/proc/{c.pid}/fdinfo/{fd}").read().count("inotify wd:")
            for c in clients for fd in os.listdir(f"/proc/{c.pid}/fdinfo"))
        for client in clients:
            client.send_signal(signal.SIGINT)
            client.wait()
        say(f"3 live clients: the daemon's watches {watches} -> {watches_with_clients}; the clients' own watches: {client_watches}")

        # Restart from the snapshot.
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        start = time.monotonic()
        daemon = subprocess.Popen([MDQ, "daemon", "run", "--no-content"], env=env, stdout=subprocess.DEVNULL, stderr=log)
        while subprocess.run([MDQ, "-a", "--count", "*.png"], env=env, capture_output=True).returncode != 0:
            if daemon.poll() is not None:
                sys.exit(f"the restarted daemon exited ({daemon.returncode}): see {log.name}")
            time.sleep(0.005)
        answering = time.monotonic() - start
        while "checking the index" in status(env)[0]:
            time.sleep(0.01)
        verified = time.monotonic() - start
        say(f"restart from the snapshot: answering after {answering:.3f} s ({answering / crawl * 100:.0f}% of the crawl), "
            f"verified after {verified:.3f} s ({verified / crawl:.2f}× the crawl)")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        run("watchman watch-del-all", check=False)
        shutil.rmtree(state, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
