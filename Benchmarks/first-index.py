#!/usr/bin/env python3
"""A first index, names first: when names answer and when everything is
read, beside `updatedb` on the same tree, for one or more builds (the `mdq`
command per invocation).

    MDQ_BUILDS=AFTER_DIR[:BEFORE_DIR...] python3 Benchmarks/first-index.py [CORPUS] [--rounds N]

Each round, on a warm page cache (CORPUS, default /tmp/mdq-corpus/c1000000,
listed once before the first round):

- `updatedb -U CORPUS` into a private database, timed;
- for each build, `mdq daemon start --no-content` on private folders, then
  `mdq index add --hidden CORPUS`, timed until it returns: "names
  answerable" (a build from before names first returns once everything is
  read); then at once a name count through the daemon (`*.png`), which must
  equal a one-shot crawl's, timed from the start of `index add`; then the
  daemon's status polled over its socket until nothing is being filled:
  "everything read"; then a size count, which must equal the crawl's.

Medians of the rounds, as a Markdown table.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

from rivals import Client

args = [a for a in sys.argv[1:] if not a.startswith("--")]
rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
if "--rounds" in sys.argv:
    args.remove(str(rounds))
corpus = args[0] if args else "/tmp/mdq-corpus/c1000000"
builds = os.environ.get("MDQ_BUILDS", ".build/mdq-release").split(":")
NAME = "kMDItemFSName LIKE[c] '*.png'"
SIZE = "kMDItemFSSize > 100000"


def timed(command, env=None):
    started = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {result.stderr}")
    return time.monotonic() - started, result


def count(mdq, query, env, daemon):
    flag = "--daemon" if daemon else "--no-daemon"
    took, result = timed([mdq, flag, "--hidden", "--count", "--onlyin", corpus, query], env)
    return took, int(result.stdout.strip()), result.stderr


def filled(socket_path):
    client = Client(socket_path)
    while True:
        status = client.ask({"command": "status"})["status"]
        if not status.get("filling", False):
            return
        time.sleep(0.01)


work = tempfile.mkdtemp(prefix="mdq-first-index-")
subprocess.run(["find", corpus, "-printf", ""], check=True)
expected_names = count(os.path.join(builds[0], "mdq"), NAME, None, daemon=False)[1]
expected_sizes = count(os.path.join(builds[0], "mdq"), SIZE, None, daemon=False)[1]
figures = {"updatedb": []}
for build in builds:
    figures[build] = {"names": [], "first": [], "filled": []}
for _ in range(rounds):
    took, _ = timed(["updatedb", "-U", corpus, "-o", os.path.join(work, "plocate.db"),
                     "--prunepaths", "", "--prunefs", "", "--prunenames", ""])
    figures["updatedb"].append(took)
    for build in builds:
        mdq = os.path.join(build, "mdq")
        state = tempfile.mkdtemp(prefix="state-", dir=work)
        env = dict(os.environ, MDQ_RUNTIME_DIR=os.path.join(state, "run"),
                   MDQ_STATE_DIR=os.path.join(state, "state"),
                   MDQ_SYSTEM_RUNTIME_DIR=os.path.join(state, "no-system"))
        timed([mdq, "daemon", "start", "--no-content"], env)
        started = time.monotonic()
        timed([mdq, "index", "add", "--hidden", corpus], env)
        names = time.monotonic() - started
        _, found, note = count(mdq, NAME, env, daemon=True)
        first = time.monotonic() - started
        if found != expected_names or "crawling" in note:
            sys.exit(f"{build}: the name count answered {found} ({note.strip()}), a crawl {expected_names}")
        filled(os.path.join(state, "run", "daemon.sock"))
        everything = time.monotonic() - started
        _, found, note = count(mdq, SIZE, env, daemon=True)
        if found != expected_sizes or "crawling" in note:
            sys.exit(f"{build}: the size count answered {found} ({note.strip()}), a crawl {expected_sizes}")
        subprocess.run([mdq, "daemon", "stop"], env=env, capture_output=True)
        shutil.rmtree(state, ignore_errors=True)
        figures[build]["names"].append(names)
        figures[build]["first"].append(first)
        figures[build]["filled"].append(everything)
shutil.rmtree(work, ignore_errors=True)

entries = int(subprocess.run(["find", corpus], capture_output=True, text=True).stdout.count("\n"))
median = statistics.median
print(f"# First index, names first ({entries:,} entries, {rounds} rounds, medians)\n")
print(f"`MDQ_BUILDS=... python3 Benchmarks/first-index.py {corpus} --rounds {rounds}`, "
      f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, warm page cache; the `mdq` command per invocation.\n")
print("| | `mdq index add` returns | first name count answered | everything read |")
print("|---|---|---|---|")
print(f"| `updatedb` | {median(figures['updatedb']):.2f} s | | |")
for build in builds:
    f = figures[build]
    print(f"| {build} | {median(f['names']):.2f} s | {median(f['first']):.2f} s | {median(f['filled']):.2f} s |")
print(f"\nRanges: updatedb {min(figures['updatedb']):.2f}–{max(figures['updatedb']):.2f} s; " + "; ".join(
    f"{b}: add {min(figures[b]['names']):.2f}–{max(figures[b]['names']):.2f} s, "
    f"read {min(figures[b]['filled']):.2f}–{max(figures[b]['filled']):.2f} s" for b in builds) + ".")
