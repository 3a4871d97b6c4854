#!/usr/bin/env python3
"""mdq beside find, fd, bfs, plocate and watchman, in one session, interleaved.

Usage: Benchmarks/compare.sh [--rounds N] [--sizes 200000,1000000] [--out DIR]

For each corpus size (Benchmarks/make-tree.py containers, generated under
$MDQ_CORPUS, default /tmp/mdq-corpus, when absent) it runs every command of a
group once per round, round after round (so drift of a shared machine hits
all of them alike), each run timed by hyperfine (--runs 1), and reports
medians and ratios in two tables:

- the mdq command, per invocation: a process started and timed like the
  other tools' (one-shot counts, --json over every entry, --attr);
- the library, in process: gathering into the index (mdq-gather, one
  process per run) and warm queries over it (mdq-gather --query, median of
  30 in-process calls) beside plocate and watchman, which are timed per
  invocation, as their users run them.

Writes compare.md (tables) and compare.png (ratios) into --out, by default a
new folder.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
MAKE_TREE = os.environ.get("MDQ_MAKE_TREE", os.path.join(HERE, "make-tree.py"))


def run(command, **kwargs):
    return subprocess.run(command, shell=True, check=True, text=True, capture_output=True, **kwargs).stdout


def timed(command):
    """Wall seconds of one run of a shell command, measured by hyperfine."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["hyperfine", "--runs", "1", "--style", "none", "--export-json", out.name, command],
            check=True, capture_output=True)
        return json.load(open(out.name))["results"][0]["mean"]


def interleaved(group, rounds):
    """{label: median seconds}, running each command once per round."""
    samples = {label: [] for label, _ in group}
    for _ in range(rounds):
        for label, command in group:
            samples[label].append(timed(command))
    return {label: statistics.median(values) for label, values in samples.items()}


def ensure_corpus(files):
    root = os.environ.get("MDQ_CORPUS", "/tmp/mdq-corpus")
    path = os.path.join(root, f"c{files}")
    if not os.path.isdir(path):
        os.makedirs(root, exist_ok=True)
        print(f"generating {path} ...", file=sys.stderr)
        subprocess.run(["python3", MAKE_TREE, path, "--files", str(files), "--container"], check=True)
    return os.path.realpath(path)


def watchman(*args, stdin=None):
    return subprocess.run(["watchman", *args], input=stdin, text=True, capture_output=True, check=True).stdout


def watchman_pid():
    try:
        return int(json.loads(watchman("get-pid"))["pid"])
    except Exception:
        return None


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser(description="mdq beside find, fd, bfs, plocate and watchman.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--out", default=None, help="output folder (default: a new one under /tmp)")
    options = parser.parse_args()
    if options.out is None:
        options.out = tempfile.mkdtemp(prefix=time.strftime("mdq-compare-%Y%m%d-%H%M%S-"))
    os.makedirs(options.out, exist_ok=True)
    sizes = [int(size) for size in options.sizes.split(",")]
    minutes = sum(2 * options.rounds * files / 1_000_000 for files in sizes) + 5
    print(f"about {minutes:.0f} minutes (plus corpus generation); results go to {options.out}", file=sys.stderr)

    print("building mdq and the instruments (release) ...", file=sys.stderr)
    # What Scripts/install installs (Scripts/build-release stages it).
    stage = subprocess.run([os.path.join(TOP, "Scripts/build-release")], check=True, capture_output=True,
                           text=True).stdout.strip()
    for product in ["mdq-gather", "mdq-live"]:
        run(f"cd {HERE} && swift build -c release --static-swift-stdlib --product {product}")
    mdq = os.path.join(stage, "mdq")
    gather = os.path.join(HERE, ".build/release/mdq-gather")
    live = os.path.join(HERE, ".build/release/mdq-live")
    state = tempfile.mkdtemp(prefix="mdq-compare-")

    rows = []  # (table, corpus, what, mdq seconds, anchor label, anchor seconds)
    notes = []
    for files in sizes:
        corpus = ensure_corpus(files)
        entries = int(run(f"find {corpus} | wc -l")) - 1
        name = f"{files // 1000}k files ({entries:,} entries)"
        run(f"find {corpus} > /dev/null")  # warm the page cache for everyone
        db = os.path.join(state, f"plocate-{files}.db")
        run(f"updatedb -l 0 -U {corpus} -o {db}")
        watchman("watch-del-all")
        png_query = json.dumps(["query", corpus, {"expression": ["match", "*.png", "basename"], "fields": ["name"]}])
        report_query = json.dumps(["query", corpus, {"expression": ["imatch", "*report*", "basename"], "fields": ["name"]}])
        with open(os.path.join(state, "png.json"), "w") as f:
            f.write(png_query)
        with open(os.path.join(state, "report.json"), "w") as f:
            f.write(report_query)
        watchman_crawl = (
            f"watchman watch-del {corpus} >/dev/null 2>&1; watchman watch {corpus} >/dev/null && "
            f"watchman -j < {state}/png.json > /dev/null")

        # Full gather: every entry with size and mtime.
        medians = interleaved([
            ("mdq", f"{gather} {corpus} --hidden"),
            ("find", f"find {corpus} -fprintf /dev/null '%s %T@ %p\\n'"),
            ("watchman", watchman_crawl),
        ], options.rounds)
        what = "full gather into the index (crawl + stat every entry; mdq-gather)"
        rows.append(("library", name, what, medians["mdq"], "find -printf '%s %T@ %p'", medians["find"]))
        rows.append(("library", name, what, medians["mdq"], "watchman watch + first query", medians["watchman"]))

        # One-shot name query from a cold process (page cache warm).
        medians = interleaved([
            ("mdq", f"{mdq} --onlyin {corpus} --hidden --count \"kMDItemFSName LIKE '*.png'\""),
            ("find", f"find {corpus} -name '*.png' | wc -l"),
            ("fd", f"fdfind -HIu -g '*.png' {corpus} | wc -l"),
            ("bfs", f"bfs {corpus} -name '*.png' | wc -l"),
            ("plocate", f"plocate -c -d {db} '*.png'"),
        ], options.rounds)
        for anchor, label in [("find", "find -name"), ("fd", "fdfind -HIu -g"), ("bfs", "bfs -name"),
                              ("plocate", "plocate -c (prebuilt database)")]:
            rows.append(("command", name, "`mdq --count '*.png'`", medians["mdq"], label, medians[anchor]))

        # Every entry with its metadata: mdq --json against find -printf.
        medians = interleaved([
            ("mdq", f"{mdq} --onlyin {corpus} --hidden --json TRUEPREDICATE"),
            ("find", f"find {corpus} -printf '%s %T@ %p\\n'"),
        ], options.rounds)
        rows.append(("command", name, "`mdq --json` over every entry", medians["mdq"], "find -printf '%s %T@ %p\\n'",
                     medians["find"]))

        # --attr: collected as items (ContentType, conflicts...), then printed.
        medians = interleaved([
            ("paths", f"{mdq} --onlyin {corpus} --hidden TRUEPREDICATE"),
            ("size", f"{mdq} --onlyin {corpus} --hidden --attr kMDItemFSSize TRUEPREDICATE"),
            ("date", f"{mdq} --onlyin {corpus} --hidden --attr kMDItemFSContentChangeDate TRUEPREDICATE"),
        ], options.rounds)
        for key in ["size", "date"]:
            per_result = (medians[key] - medians["paths"]) / entries * 1e6
            notes.append((name, f"--attr {'kMDItemFSSize' if key == 'size' else 'kMDItemFSContentChangeDate'}: "
                                f"{fmt(medians[key])} vs {fmt(medians['paths'])} for paths alone, "
                                f"{per_result:.2f} µs more per result", None))

        # Warm queries: mdq's index in process; plocate and a watching watchman per invocation.
        watchman("watch", corpus)
        watchman("-j", stdin=png_query)
        output = run(
            f"{gather} {corpus} --hidden --query \"kMDItemFSName LIKE '*.png'\" "
            f"--query \"kMDItemFSName LIKE[cd] '*report*'\"")
        warm = [float(m) / 1000 for m in re.findall(r"query median ([0-9.]+) ms", output)]
        medians = interleaved([
            ("plocate png", f"plocate -d {db} '*.png' | wc -l"),
            ("watchman png", f"watchman -j < {state}/png.json > /dev/null"),
            ("plocate report", f"plocate -i -d {db} 'report' | wc -l"),
            ("watchman report", f"watchman -j < {state}/report.json > /dev/null"),
        ], options.rounds)
        for (i, key) in enumerate(["png", "report"]):
            what = "warm `LIKE '*.png'`" if key == "png" else "warm `LIKE[cd] '*report*'`"
            rows.append(("library", name, what + " (in process)", warm[i], "plocate", medians[f"plocate {key}"]))
            rows.append(("library", name, what + " (in process)", warm[i], "watchman (warm)",
                         medians[f"watchman {key}"]))

        # Memory with every folder watched.
        pid = watchman_pid()
        watchman_bytes = rss_kb(pid) * 1024 / entries if pid else float("nan")
        output = run(f"{live} memory {corpus}")
        match = re.search(r"([0-9.]+) B/entry", output)
        mdq_bytes = float(match.group(1)) if match else float("nan")
        notes.append((name, mdq_bytes, watchman_bytes))
        watchman("watch-del", corpus)

        # Live latency (not size dependent; once).
        if files == max(sizes):
            notes.append(("live", run(f"{live} latency").strip(), None))

    shutil.rmtree(state, ignore_errors=True)
    write_report(rows, notes, options.out)


def fmt(seconds):
    return f"{seconds * 1000:.2f} ms" if seconds < 1 else f"{seconds:.3f} s"


def write_report(rows, notes, out):
    machine = run("nproc").strip() + " cores, " + run("uname -sr").strip()
    lines = [f"Run {time.strftime('%Y-%m-%d %H:%M')} on {machine}; medians of interleaved rounds.", ""]
    chart = []
    titles = {"command": "The `mdq` command, per invocation",
              "library": "The library, in process (MetadataIndex called from a small program)"}
    for table in ["command", "library"]:
        lines += [f"**{titles[table]}**", "", "| corpus | what | mdq | other | its time | mdq is |",
                  "|---|---|---|---|---|---|"]
        for kind, corpus, what, ours, label, theirs in rows:
            if kind != table:
                continue
            ratio = theirs / ours
            lines.append(f"| {corpus} | {what} | {fmt(ours)} | {label} | {fmt(theirs)} | {ratio:.1f}× faster |")
            # gnuplot would read a printf format as markup: name the tool only.
            chart.append((f"{corpus.split(' ')[0]} {what.split('(')[0].strip()} vs {label.split(' ')[0]}", ratio))
        lines.append("")
    lines += ["| corpus | mdq RSS per entry, every folder watched | watchman daemon RSS per entry |", "|---|---|---|"]
    extra = []
    for corpus, ours, theirs in notes:
        if corpus == "live":
            lines.insert(1, f"Live: {ours}")
        elif theirs is None:
            extra.append(f"- {corpus}: {ours}")
        else:
            lines.append(f"| {corpus} | {ours:.0f} B | {theirs:.0f} B |")
    lines += [""] + extra
    table = "\n".join(lines) + "\n"
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write(table)
    print(table)
    data = os.path.join(out, "compare.dat")
    with open(data, "w") as f:
        for i, (label, ratio) in enumerate(chart):
            f.write(f'{i} "{label}" {ratio:.3f}\n')
    script = f"""
set terminal pngcairo size 1400,{200 + 28 * len(chart)} font ",10"
set output "{os.path.join(out, 'compare.png')}"
set title "mdq speed-up over each tool (higher is better; log scale)"
set style fill solid 0.8
set logscale x 10
set xrange [0.5:*]
set grid xtics
set ytics nomirror
set yrange [-1:{len(chart)}]
unset key
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2
plot "{data}" using 3:1:(1):3:($1-0.35):($1+0.35):yticlabels(2) with boxxyerror, \\
     "{data}" using ($3*1.08):1:(sprintf("%.1fx", $3)) with labels left
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.remove(data)


if __name__ == "__main__":
    main()
