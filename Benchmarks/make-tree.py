#!/usr/bin/env python3
"""Build a deterministic directory tree that looks like a real user's files.

    Benchmarks/make-tree.py DEST --files N [--seed S] [--container] [--sparse]

The project's reference corpus generator: Benchmarks/compare.sh and the test
suite use this copy, so a clone can build every corpus it measures on.

With --container, DEST is laid out like a sync container: DEST/Documents holds
about 60% of the files and the rest sit beside it (the "data" part).
Names mix extensions by frequency, spaces, dots, Unicode (NFC and NFD), a few
conflict-copy names, hidden files and deep folders, so that both the crawler
and the name matcher meet what they meet on real disks.  File contents are
empty except for a size-bearing minority, so the tree is cheap to build.
The same seed and count always give the same tree.  With --sparse the
sized files are made by setting their length, not writing it (the same
names and stat data; no data blocks): how the 10M-entry loop filesystem of
Benchmarks/system-index.py is filled in minutes.
"""
import argparse
import os
import random
import sys
import unicodedata

EXTENSIONS = [
    ("txt", 12), ("md", 6), ("png", 10), ("jpg", 10), ("pdf", 6), ("json", 6),
    ("swift", 5), ("c", 4), ("h", 4), ("py", 4), ("html", 3), ("css", 2),
    ("js", 4), ("docx", 2), ("xlsx", 2), ("key", 1), ("numbers", 1),
    ("pages", 1), ("mp3", 2), ("mov", 1), ("zip", 1), ("tar.gz", 1),
    ("bookmark", 2), ("", 3),
]
WORDS = [
    "report", "invoice", "photo", "notes", "draft", "final", "budget", "plan",
    "meeting", "summary", "readme", "index", "main", "test", "data", "config",
    "backup", "image", "scan", "letter", "résumé", "Übersicht", "报告", "写真",
    "naïve", "café", "project", "archive", "todo", "log", "chapter", "slide",
]
DIR_WORDS = [
    "src", "docs", "photos", "2023", "2024", "2025", "work", "personal",
    "Projects", "Archive", "Inbox", "tmp", "assets", "Library", "Reports",
    "Clients", "Fotos", "文档", "node_modules", "build", ".git", "Music",
]


def pick_ext(rng):
    total = sum(w for _, w in EXTENSIONS)
    x = rng.uniform(0, total)
    for ext, w in EXTENSIONS:
        x -= w
        if x <= 0:
            return ext
    return "txt"


def file_name(rng, i):
    style = rng.random()
    word = rng.choice(WORDS)
    if rng.random() < 0.3:
        # the same word written decomposed (NFD), as macOS-origin files are
        word = unicodedata.normalize("NFD", word)
    if style < 0.35:
        stem = f"{word}_{i}"
    elif style < 0.55:
        stem = f"{word.capitalize()} {rng.choice(WORDS)} {i % 97}"
    elif style < 0.70:
        stem = f"IMG_{i:05d}"
    elif style < 0.80:
        stem = f"{word}-{rng.randint(1, 9999)}.v{rng.randint(1, 5)}"
    elif style < 0.85:
        stem = f".{word}{i}"
    elif style < 0.88:
        stem = f"{word}_{i} (conflicted copy {rng.randint(2019, 2025)})"
    elif style < 0.90:
        stem = f"{word}_{i}.sync-conflict-2025{rng.randint(1, 12):02d}01-120000-ABCDEF1"
    else:
        stem = f"{word}{i}"
    ext = pick_ext(rng)
    return f"{stem}.{ext}" if ext else stem


def build(dest, files, seed, container, sparse=False):
    rng = random.Random(seed)
    roots = [dest]
    if container:
        roots = [os.path.join(dest, "Documents")] * 3 + [dest] * 2
    dirs = {r: 0 for r in set(roots)}
    for r in dirs:
        os.makedirs(r, exist_ok=True)
    dir_list = list(dirs)
    made = 0
    while made < files:
        # grow a new folder now and then, under an existing one, so the tree
        # gets both wide and deep parts
        if rng.random() < 0.06 or len(dir_list) < 4:
            parent = rng.choice(dir_list[-50:] if rng.random() < 0.4 else dir_list)
            if parent.count(os.sep) - dest.count(os.sep) < 10:
                d = os.path.join(parent, f"{rng.choice(DIR_WORDS)}{len(dir_list)}")
                os.makedirs(d, exist_ok=True)
                dir_list.append(d)
        root = rng.choice(roots)
        candidates = [d for d in dir_list[-200:] if d.startswith(root)] or [root]
        parent = rng.choice(candidates)
        path = os.path.join(parent, file_name(rng, made))
        size = rng.choice((0, 0, 0, 0, 17, 512, 4096))
        with open(path, "wb") as f:
            if size and sparse:
                f.truncate(size)
            elif size:
                f.write(b"x" * size)
        made += 1
    return made, len(dir_list)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", help="folder to create (or fill)")
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--container", action="store_true")
    ap.add_argument("--sparse", action="store_true", help="set sized files' length instead of writing it")
    a = ap.parse_args()
    made, ndirs = build(os.path.abspath(a.dest), a.files, a.seed, a.container, a.sparse)
    print(f"{made} files in {ndirs} folders under {a.dest}", file=sys.stderr)


if __name__ == "__main__":
    main()
