#!/usr/bin/env python3
"""A restarted daemon's first answers, against a one-shot crawl without the
daemon, for one or more builds (the `mdq` command per invocation).

    MDQ_BUILDS=AFTER_DIR[:BEFORE_DIR...] python3 Benchmarks/restart.py [CORPUS] [--rounds N]

For each build: `mdq daemon start --no-content` on private folders, index
CORPUS (default /tmp/mdq-corpus/c1000000), wait until it is checked, stop
it (it saves its snapshot). Then, for each query below and each round:
start the daemon again and ask the query at once, timing `daemon start`,
the query itself (while the daemon still checks its index against the
disk: the answer says stale), and start-to-answer; then the time until the
check ends. The same query with `--no-daemon` (a one-shot crawl) is the
yardstick. Medians of the rounds are printed as a Markdown table.
"""
import os, subprocess, sys, tempfile, time, shutil, statistics

from rivals import index_add

args = [a for a in sys.argv[1:] if not a.startswith("--")]
rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
if "--rounds" in sys.argv: args.remove(str(rounds))
corpus = args[0] if args else "/tmp/mdq-corpus/c1000000"
builds = os.environ.get("MDQ_BUILDS", ".build/mdq-release").split(":")
queries = [
    ("rare name", ["--count", "kMDItemFSName == 'report-12345*'cd"]),
    ("`*.png` count", ["--count", "kMDItemFSName LIKE[c] '*.png'"]),
    ("size over 1 MB", ["--count", "kMDItemFSSize > 1000000"]),
    ("substring, paths", ["kMDItemFSName CONTAINS[c] 'quarterly'"]),
]

def run(cmd, env):
    t = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return time.monotonic() - t, r

def checking(mdq, env):
    return "checking" in subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True, text=True).stdout

rows = {}
for build in builds:
    mdq = os.path.join(build, "mdq")
    state = tempfile.mkdtemp(prefix="mdq-restart-")
    env = dict(os.environ, MDQ_RUNTIME_DIR=os.path.join(state, "run"), MDQ_STATE_DIR=os.path.join(state, "state"))
    subprocess.run([mdq, "daemon", "start", "--no-content"], env=env, capture_output=True, check=True)
    index_add(mdq, [corpus], env)
    while checking(mdq, env): time.sleep(0.05)
    subprocess.run([mdq, "daemon", "stop"], env=env, capture_output=True)
    for name, q in queries:
        starts, firsts, totals, checks, stale, crawls = [], [], [], [], 0, []
        for _ in range(rounds):
            t0 = time.monotonic()
            subprocess.run([mdq, "daemon", "start", "--no-content"], env=env, capture_output=True, check=True)
            started = time.monotonic() - t0
            took, r = run([mdq, "--daemon", "--onlyin", corpus] + q, env)
            total = time.monotonic() - t0
            stale += "still checking" in r.stderr
            while checking(mdq, env): time.sleep(0.02)
            checks.append(time.monotonic() - t0)
            subprocess.run([mdq, "daemon", "stop"], env=env, capture_output=True)
            starts.append(started); firsts.append(took); totals.append(total)
            took, r = run([mdq, "--no-daemon", "--onlyin", corpus] + q, env)
            crawls.append(took)
        m = lambda xs: statistics.median(xs) * 1000
        rows.setdefault(name, []).append((m(starts), m(firsts), m(totals), m(checks), stale, m(crawls)))
        print(f"{build}: {name}: start {m(starts):.0f} ms, first answer {m(firsts):.1f} ms "
              f"({stale}/{rounds} stale), start→answer {m(totals):.0f} ms, checked {m(checks):.0f} ms, "
              f"one-shot crawl {m(crawls):.0f} ms", file=sys.stderr, flush=True)
    shutil.rmtree(state, ignore_errors=True)

print(f"Corpus {corpus}; medians of {rounds} rounds; the mdq command per invocation.\n")
print("| query | build | `daemon start` | first answer (stale) | start → answer | checked after | one-shot crawl | first answer / crawl |")
print("|---|---|---|---|---|---|---|---|")
for name, _ in queries:
    for build, (s, f, t, c, st, cr) in zip(builds, rows[name]):
        print(f"| {name} | {os.path.basename(build.rstrip('/'))} | {s:.0f} ms | {f:.1f} ms ({st}/{rounds}) | {t:.0f} ms | {c:.0f} ms | {cr:.0f} ms | {100*f/cr:.1f} % |")
