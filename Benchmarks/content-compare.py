#!/usr/bin/env python3
"""mdq's content indexing beside Recoll, Tracker 3 and Baloo on one corpus
(Benchmarks/make-content-corpus.py), one run, side by side.

    Benchmarks/content-compare.py [--corpus DIR] [--files N] [--systems mdq,recoll,tracker,baloo]
                                  [--out FILE] [--workers N]

Per system: time to index everything, CPU seconds, peak RSS, store size
(bytes, per file, share of the corpus), a rare-word and a common-word
content query (median of 5 invocations of the command-line tool, wall
clock), and freshness (from appending a new word to a file to the word
being found). For mdq also: idle CPU over 10 s once importing is done, and
the daemon's resident bytes per index entry.

mdq is built in release mode with the Swift runtime linked statically, as
Scripts/install builds it ($MDQ_BUILD: a folder holding them already), and run as `mdq daemon run` with private
state and runtime folders; the others run through
Benchmarks/rivals.py (private home and D-Bus session each). The
markdown table goes to --out (default: stdout).
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from rivals import children_of, cpu_seconds, index_add, median_query, peak_rss, run  # noqa: E402  (the same measures for every system)


def du(paths):
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p))


def measure_mdq(corpus, manifest, workers):
    # Built as Scripts/install builds what users run (Scripts/build-release):
    # the Swift runtime linked statically, the front one static executable.
    # $MDQ_BUILD names another folder holding mdq and mdq-full (an earlier
    # commit's, for a before/after run).
    stage = os.environ.get("MDQ_BUILD") or subprocess.run(
        [os.path.join(ROOT, "Scripts/build-release")], check=True, capture_output=True, text=True).stdout.strip()
    binary = os.path.join(stage, "mdq")
    work = tempfile.mkdtemp(prefix="mdq-content-")
    env = dict(os.environ, MDQ_STATE_DIR=os.path.join(work, "state"), MDQ_RUNTIME_DIR=os.path.join(work, "run"))
    for folder in ("state", "run"):
        os.makedirs(os.path.join(work, folder), mode=0o700)
    daemon = subprocess.Popen([binary, "daemon", "run", "--import-workers", str(workers)], env=env,
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "daemon.log"), "w"))

    def status():
        result = run([binary, "daemon", "status"], env=env)
        return result.stdout if result.returncode == 0 else ""

    while "mdq daemon: running" not in status():
        time.sleep(0.05)
    start = time.perf_counter()
    index_add(binary, [corpus], env)
    worker_cpu, worker_rss, busy = {}, 0, []
    while True:
        for child in children_of(daemon.pid):
            worker_cpu[child] = cpu_seconds(child)
            worker_rss = max(worker_rss, peak_rss(child))
        # A name query while importing runs: the daemon stays responsive.
        started = time.perf_counter()
        run([binary, "--daemon", "-a", "--count", "kMDItemFSName LIKE[c] '*report*'"], env=env)
        busy.append(time.perf_counter() - started)
        text = status()
        if "none pending" in text:
            break
        time.sleep(0.1)
    index_seconds = time.perf_counter() - start
    cpu = cpu_seconds(daemon.pid) + sum(worker_cpu.values())
    daemon_rss = peak_rss(daemon.pid)
    state = os.path.join(work, "state")
    store = du([os.path.join(state, "content.sqlite" + s) for s in ("", "-wal", "-shm")])
    # Idle: nothing changes for 10 s.
    before = cpu_seconds(daemon.pid, children=False)
    time.sleep(10)
    idle = cpu_seconds(daemon.pid, children=False) - before
    entries = 0
    for line in status().splitlines():
        if line.startswith("index:"):
            entries = int(line.split()[1])
    rare_word = "zq%dx" % manifest["text_files_indexes"][len(manifest["text_files_indexes"]) // 2]
    query = lambda word: [binary, "--daemon", "-a", "--count", "kMDItemTextContent LIKE[cdw] '%s'" % word]
    rare_seconds, rare_count = median_query(query(rare_word), env=env)
    common_seconds, common_count = median_query(query(manifest["common_word"]), env=env)
    # A run inside the rare word, case-sensitive (no [w]): found through the
    # words that hold it.
    inside = [binary, "--daemon", "-a", "--count", "kMDItemTextContent CONTAINS '%s'" % rare_word[1:-1]]
    substring_seconds, substring_count = median_query(inside, env=env)
    # Freshness: a new word appended to a text file.
    target = os.path.join(corpus, fresh_file(manifest))
    word = "freshzq%d" % int(time.time())
    with open(target, "a") as f:
        f.write("\n%s\n" % word)
    written = time.perf_counter()
    fresh = None
    while time.perf_counter() - written < 60:
        if run(query(word), env=env).stdout.strip() == "1":
            fresh = time.perf_counter() - written
            break
        time.sleep(0.05)
    with open(target, "rb") as f:
        data = f.read()
    with open(target, "wb") as f:
        f.write(data[: data.rindex(("\n%s\n" % word).encode())])
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=120)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "system": "mdq", "version": run([binary, "--version"]).stdout.strip(),
        "index_seconds": index_seconds, "cpu_seconds": cpu, "peak_rss_bytes": daemon_rss,
        "worker_peak_rss_bytes": worker_rss, "store_bytes": store, "rare_query_seconds": rare_seconds,
        "rare_results": int(rare_count.strip() or 0), "common_query_seconds": common_seconds,
        "common_results": int(common_count.strip() or 0), "freshness_seconds": fresh, "idle_cpu_seconds": idle,
        "substring_query_seconds": substring_seconds, "substring_results": int(substring_count.strip() or 0),
        "entries": entries, "name_query_while_importing_seconds": statistics.median(busy) if busy else None,
    }


def fresh_file(manifest):
    """A plain text file of the corpus, which the freshness test appends to."""
    return next(p for p in manifest["text_files"] if p.endswith(".txt"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="/tmp/mdq-content-corpus")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--systems", default="mdq,recoll,tracker,baloo")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out")
    parser.add_argument("--rows", help="a file of JSON rows (one per line) already measured: print their table")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.corpus, "MANIFEST.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "make-content-corpus.py"), args.corpus,
                        "--files", str(args.files)], check=True)
    manifest = json.load(open(os.path.join(args.corpus, "MANIFEST.json")))
    manifest["text_files_indexes"] = sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in manifest["text_files"])
    systems = [] if args.rows else args.systems.split(",")
    rows = [json.loads(line) for line in open(args.rows) if line.startswith("{")] if args.rows else []
    if "mdq" in systems:
        rows.append(measure_mdq(args.corpus, manifest, args.workers))
        print(json.dumps(rows[-1]), file=sys.stderr)
    rivals = [s for s in systems if s != "mdq"]
    if rivals:
        rare = "zq%dx" % manifest["text_files_indexes"][len(manifest["text_files_indexes"]) // 2]
        work = tempfile.mkdtemp(prefix="mdq-rivals-")
        result = run([sys.executable, os.path.join(HERE, "rivals.py"), "--corpus", args.corpus,
                      "--work", work, "--systems", ",".join(rivals), "--rare", rare,
                      "--common", manifest["common_word"], "--fresh-file", fresh_file(manifest)])
        for line in result.stdout.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
                print(line, file=sys.stderr)
        if result.returncode != 0:
            print(result.stderr[-4000:], file=sys.stderr)
    corpus_bytes, files = manifest["bytes"], manifest["files"]

    def cell(value, unit=""):
        if value is None:
            return "n/a"
        if isinstance(value, float):
            return ("%.3f" % value if value < 1 else "%.1f" % value) + unit
        return str(value) + unit

    lines = [
        "Corpus: %d files, %.1f MB (Benchmarks/make-content-corpus.py, seed %d); %s."
        % (files, corpus_bytes / 1e6, manifest["seed"],
           "rows measured earlier, from %s" % args.rows if args.rows else "one run on " + time.strftime("%Y-%m-%d")),
        "",
        "| system | index (s) | CPU (s) | peak RSS (MB) | store (MB) | store per file | store / corpus "
        "| rare word (ms) | hits | common word (ms) | hits | modification → findable (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        store = row.get("store_bytes")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["system"], cell(row.get("index_seconds")), cell(row.get("cpu_seconds")),
            cell(row["peak_rss_bytes"] / 1e6 if row.get("peak_rss_bytes") else None), cell(store / 1e6 if store else None),
            "%d B" % (store / files) if store else "n/a", "%.1f %%" % (100 * store / corpus_bytes) if store else "n/a",
            cell(row["rare_query_seconds"] * 1000 if row.get("rare_query_seconds") else None),
            cell(row.get("rare_results")),
            cell(row["common_query_seconds"] * 1000 if row.get("common_query_seconds") else None),
            cell(row.get("common_results")),
            cell(row.get("freshness_seconds"))))
    for row in rows:
        if row.get("notes"):
            lines.append("")
            lines.append("%s: %s" % (row["system"], row["notes"]))
    mdq = next((r for r in rows if r["system"] == "mdq"), None)
    if mdq:
        lines.append("")
        lines.append("mdq: import workers' peak RSS %.1f MB; daemon CPU while idle for 10 s after importing: %.2f s; "
                     "%d index entries; a name query while importing: %.1f ms (median)." % (
                         mdq["worker_peak_rss_bytes"] / 1e6, mdq["idle_cpu_seconds"], mdq["entries"],
                         (mdq["name_query_while_importing_seconds"] or 0) * 1000))
        if mdq.get("substring_query_seconds"):
            lines.append("")
            lines.append("mdq: a run inside the rare word (`kMDItemTextContent CONTAINS`, no `[w]`): %.1f ms, %d hits "
                         "(the word query: %.1f ms)." % (
                             mdq["substring_query_seconds"] * 1000, mdq["substring_results"],
                             mdq["rare_query_seconds"] * 1000))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
