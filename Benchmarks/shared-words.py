#!/usr/bin/env python3
"""Files' words in the shared index across hosts (issue 38), measured in one run.

    Benchmarks/shared-words.py [--files 50000] [--runs 10] [--trials 20] [--out FILE]

As root, on this machine:

- writes a corpus of text files (150-600 words each, drawn from a
  Zipf-distributed vocabulary of 20,000 made-up words; file i holds the
  word "zq<i>x" once, the rare-word queries; about 30 % hold "invoice", the
  common-word query; one file in ten is 0600, its owner's alone);
- starts a private PostgreSQL 15 cluster and the shared index in it
  (`mdq shared init`), and a system index over the corpus in a mount
  namespace of its own that imports what is inside files and publishes
  into it (`mdq system run --content --publish URL --host-name words`);
- the time until every file's words are published (the crawl, the
  imports and the publish, one import worker), and the shared index's
  words per file (`mdq.content`, its index included);
- as an ordinary user (`nobody`, its own database credential:
  `MDQ_SHARED`), per invocation of the `mdq` command, median of --runs: a
  rare word, the common word's count, its first 100 paths; beside the same
  question in raw SQL (`psql`, unfiltered), and the host's own system
  index answering the same user (`mdq --daemon --onlyin DIR`);
- freshness: a file written with a new word, and the time until `mdq
  --host words` finds it (p50, p99 of --trials).

Needs the release programs (Scripts/build-release stages them in
.build/mdq-release; $MDQ_BUILD names another folder), PostgreSQL 15,
unshare, nsenter and setpriv.
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from multihost import MDQ, Cluster, percentile, say, timed  # noqa: E402

SYLLABLES = ["ka", "lo", "mi", "ren", "sa", "tu", "vel", "dor", "an", "is", "quo", "ber", "ni", "pha", "gru", "et"]


def corpus(folder, files, seed):
    """Writes the corpus; returns how many files are their owner's alone."""
    rng = random.Random(seed)
    words = set()
    while len(words) < 20000:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    words = sorted(words)
    rng.shuffle(words)
    weights = [1.0 / (k + 1) for k in range(len(words))]
    private = 0
    for i in range(files):
        sub = os.path.join(folder, f"d{i // 500:03d}")
        os.makedirs(sub, exist_ok=True)
        text = rng.choices(words, weights=weights, k=rng.randint(150, 600))
        text.insert(rng.randrange(len(text)), f"zq{i}x")
        if rng.random() < 0.3:
            text.insert(rng.randrange(len(text)), "invoice")
        path = os.path.join(sub, f"note-{i}.txt")
        with open(path, "w") as f:
            f.write(" ".join(text))
        if i % 10 == 9:
            os.chmod(path, 0o600)
            private += 1
        else:
            os.chmod(path, 0o644)
    for sub in os.listdir(folder):
        os.chmod(os.path.join(folder, sub), 0o755)
    os.chmod(folder, 0o755)
    return private


def main():
    parser = argparse.ArgumentParser(description="Files' words in the shared index across hosts.")
    parser.add_argument("--files", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (a system index in a mount namespace, a PostgreSQL cluster)")
    work = tempfile.mkdtemp(prefix="mdq-words-")
    os.chmod(work, 0o755)
    cluster = None
    daemon = None
    try:
        cluster = Cluster(work)
        subprocess.run([MDQ, "shared", "init", cluster.url], check=True, capture_output=True)
        folder = f"{work}/corpus"
        os.makedirs(folder)
        say(f"writing {args.files} text files")
        private = corpus(folder, args.files, args.seed)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)
        env = dict(os.environ, MDQ_SYSTEM_RUNTIME_DIR=f"{work}/run", MDQ_SYSTEM_STATE_DIR=f"{work}/state")
        os.makedirs(f"{work}/run")
        os.chmod(f"{work}/run", 0o755)
        log = open(f"{work}/daemon.log", "w")
        say("starting the system index (content, publishing)")
        started = time.perf_counter()
        daemon = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$0" "$0" && exec "$1" system run --mount "$0" --content --publish "$2" '
             '--host-name words', folder, MDQ + "-full", cluster.url],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        while True:
            published = int(cluster.sql("SELECT count(*) FROM mdq.content") or 0)
            live = cluster.sql("SELECT state FROM mdq.host WHERE name = 'words'")
            if published == args.files and live == "live":
                break
            if daemon.poll() is not None:
                sys.exit("the system index exited:\n" + open(f"{work}/daemon.log").read())
            time.sleep(0.2)
        publish = time.perf_counter() - started
        content_bytes = int(cluster.sql("SELECT pg_total_relation_size('mdq.content_1')"))
        say(f"every file's words published in {publish:.1f} s")

        user = ["setpriv", "--reuid=nobody", "--regid=65534", "--clear-groups"]
        shared = dict(os.environ, MDQ_SHARED=cluster.url)
        rare = [f"kMDItemTextContent == 'zq{i}x'cdw" for i in (17, 20017 % args.files, args.files - 1)]
        common = "kMDItemTextContent == 'invoice'cdw"
        rows = []

        def measure(label, command, environment, sql=None):
            median, out = timed(command, args.runs, env=environment)
            raw = None
            if sql:
                raw, _ = timed(["psql", "-h", cluster.folder, "-U", "postgres", "-d", "shared", "-tAqc", sql],
                               args.runs, env=environment)
            rows.append((label, median, out.splitlines()[0] if out else "", raw))
            say(f"{label}: {median * 1000:.1f} ms ({out.splitlines()[0] if out else ''})")

        here = ["nsenter", "-t", str(daemon.pid), "-m", "--"]
        measure("rare word, across hosts", user + [MDQ, "--host", "words", rare[0]], shared,
                "SELECT count(*) FROM mdq.content WHERE words @@ '''zq17x'''::tsquery")
        measure("rare word, the host's own system index", here + user + [MDQ, "--daemon", "--onlyin", folder,
                rare[0]], env)
        measure("common word count (about 27 % of the files readable)", user + [MDQ, "--host", "words", "--count",
                common], shared, "SELECT count(*) FROM mdq.content WHERE words @@ '''invoice'''::tsquery")
        measure("common word count, the host's own system index", here + user + [MDQ, "--daemon", "--count",
                "--onlyin", folder, common], env)
        measure("first 100 paths of the common word", user + [MDQ, "--host", "words", "--limit", "100", common],
                shared)

        say("freshness")
        delays = []
        for trial in range(args.trials):
            word = f"fresh{trial}word{random.randrange(1 << 30)}"
            path = f"{folder}/d000/fresh-{trial}.txt"
            begun = time.perf_counter()
            with open(path, "w") as f:
                f.write(f"a new file with {word} inside")
            os.chmod(path, 0o644)
            while True:
                found = subprocess.run(user + [MDQ, "--host", "words", f"kMDItemTextContent == '{word}'cdw"],
                                       capture_output=True, text=True, env=shared).stdout
                if path in found:
                    break
                if time.perf_counter() - begun > 60:
                    sys.exit(f"{path} was not found within 60 s")
            delays.append(time.perf_counter() - begun)

        lines = [
            f"Corpus: {args.files} text files, {size / 1e6:.1f} MB ({private} of them 0600, their owner's "
            f"alone), Benchmarks/shared-words.py seed {args.seed}; one run on {time.strftime('%Y-%m-%d')}. "
            "Times are the `mdq` command per invocation as `nobody` (median of "
            f"{args.runs}), beside raw SQL (`psql`, unfiltered).",
            "",
            "| figure | mdq | raw SQL | answer |",
            "|---|---|---|---|",
            f"| crawl, import and publish of every file's words (one import worker) | {publish:.1f} s | | "
            f"{args.files} files |",
            f"| words in the shared index (`mdq.content`, its GIN index included) | "
            f"{content_bytes / args.files:.0f} B per file | | {content_bytes / 1e6:.1f} MB |",
        ]
        for label, median, out, raw in rows:
            lines.append(f"| {label} | {median * 1000:.1f} ms | "
                         f"{'' if raw is None else f'{raw * 1000:.1f} ms'} | {out} |")
        lines.append(f"| a file written → found by `mdq --host words` | p50 {percentile(delays, 50) * 1000:.0f} ms, "
                     f"p99 {percentile(delays, 99) * 1000:.0f} ms | | {args.trials} trials |")
        report = "\n".join(lines) + "\n"
        print(report)
        if args.out:
            with open(args.out, "w") as f:
                f.write(report)
    finally:
        if daemon and daemon.poll() is None:
            daemon.terminate()
            daemon.wait()
        if cluster:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
