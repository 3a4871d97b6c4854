#!/usr/bin/env python3
"""Generates a reproducible corpus of documents, images and media for the
content-indexing benchmarks (Benchmarks/content-compare.py): the same seed
gives the same files.

    Benchmarks/make-content-corpus.py OUT [--files N] [--seed S]

Every file is written by the tool or library made for its format:
python-docx, openpyxl, python-pptx and odfpy (office), groff's PDF device
(PDF), Pillow (JPEG with EXIF, PNG), ffmpeg (MP3, FLAC, M4A, MP4), plain
Python (text, Markdown, HTML, CSV, source). Needs: pip install python-docx
openpyxl python-pptx odfpy pillow; apt-get install groff ffmpeg.

Known content, for the queries the benchmark asks:
- every text-bearing file holds 150-600 words drawn from a Zipf-distributed
  vocabulary of 20,000 words (common words are very common);
- about 30 % hold the word "invoice" (the common-word query);
- file i holds the word "zq<i>x" exactly once (rare-word queries: one
  file each);
- images carry camera make/model and pixel sizes, audio carries tags.

The mix for N files: 40 % text formats, 15 % office, 10 % PDF, 25 %
images, 10 % audio and video (media are made once per distinct tag set and
copied: ffmpeg is slow and indexers read them as separate files).
Writes OUT/MANIFEST.json with the counts and the queries' expected answers.
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile
from concurrent.futures import ProcessPoolExecutor

SYLLABLES = ["ka", "lo", "mi", "ren", "sa", "tu", "vel", "dor", "an", "is", "quo", "ber", "ni", "pha", "gru", "et"]


def vocabulary(seed):
    rng = random.Random(seed)
    words = set()
    while len(words) < 20000:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    words = sorted(words)
    rng.shuffle(words)
    common = ["the", "and", "of", "to", "report", "meeting", "budget", "project", "review", "plan"]
    return common + words


def text_for(i, seed, words, weights):
    rng = random.Random(seed * 1_000_003 + i)
    body = rng.choices(words, weights=weights, k=rng.randint(150, 600))
    if rng.random() < 0.3:
        body.insert(rng.randrange(len(body)), "invoice")
    body.insert(rng.randrange(len(body)), "zq%dx" % i)
    sentences, line = [], []
    for word in body:
        line.append(word)
        if len(line) >= rng.randint(8, 16):
            sentences.append(" ".join(line).capitalize() + ".")
            line = []
    if line:
        sentences.append(" ".join(line).capitalize() + ".")
    return sentences


def write_text(path, kind, sentences, i):
    if kind == "txt":
        data = "\n".join(sentences)
    elif kind == "md":
        data = "# Note %d\n\n" % i + "\n\n".join(sentences)
    elif kind == "html":
        data = "<html><head><title>Page %d</title></head><body>%s</body></html>" % (
            i, "".join("<p>%s</p>" % s for s in sentences))
    elif kind == "csv":
        data = "line,text\n" + "\n".join('%d,"%s"' % (n, s) for n, s in enumerate(sentences))
    else:  # py
        data = "# Module %d\n" % i + "\n".join('def f%d():\n    """%s"""\n' % (n, s) for n, s in enumerate(sentences))
    with open(path, "w") as f:
        f.write(data)


def write_office(path, kind, sentences, i):
    title = "Document %d" % i
    if kind == "docx":
        import docx
        d = docx.Document()
        d.add_heading(title, 1)
        for s in sentences:
            d.add_paragraph(s)
        d.core_properties.title = title
        d.core_properties.author = "Author %d" % (i % 50)
        d.save(path)
    elif kind == "xlsx":
        import openpyxl
        wb = openpyxl.Workbook()
        ws = wb.active
        for n, s in enumerate(sentences, 1):
            ws.cell(row=n, column=1, value=s)
        wb.properties.title = title
        wb.save(path)
    elif kind == "pptx":
        import pptx
        p = pptx.Presentation()
        for n in range(0, len(sentences), 4):
            slide = p.slides.add_slide(p.slide_layouts[1])
            slide.shapes.title.text = "%s, slide %d" % (title, n // 4 + 1)
            slide.placeholders[1].text = " ".join(sentences[n:n + 4])
        p.core_properties.title = title
        p.save(path)
    else:  # odt
        from odf.opendocument import OpenDocumentText
        from odf.text import P, H
        from odf import dc
        t = OpenDocumentText()
        t.text.addElement(H(outlinelevel=1, text=title))
        for s in sentences:
            t.text.addElement(P(text=s))
        t.meta.addElement(dc.Title(text=title))
        t.save(path)


def write_pdf(path, sentences, i):
    source = ".TL\nReport %d\n.AU\nAuthor %d\n" % (i, i % 50)
    for n in range(0, len(sentences), 5):
        source += ".PP\n" + " ".join(sentences[n:n + 5]) + "\n"
    pdf = subprocess.run(["groff", "-ms", "-Tpdf"], input=source.encode(), capture_output=True, check=True).stdout
    with open(path, "wb") as f:
        f.write(pdf)


def write_image(path, i, seed):
    from PIL import Image
    rng = random.Random(seed * 7 + i)
    width, height = rng.choice([(640, 480), (800, 600), (1024, 768), (4000, 3000)])
    # A small picture with large claimed dimensions would be a lie: scale
    # the big ones down in pixels but keep them real.
    if width > 1024:
        width, height = 1600, 1200
    image = Image.new("RGB", (width, height), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    if path.endswith(".jpg"):
        exif = Image.Exif()
        exif[0x010F] = rng.choice(["Canon", "NIKON CORPORATION", "FUJIFILM", "Apple"])
        exif[0x0110] = "Model %d" % (i % 20)
        image.save(path, quality=60, exif=exif)
    else:
        image.save(path, optimize=False)


MEDIA = ["mp3", "flac", "m4a", "mp4"]


def make_media_templates(folder, count, seed):
    rng = random.Random(seed)
    made = []
    for n in range(count):
        kind = MEDIA[n % len(MEDIA)]
        out = os.path.join(folder, "template-%d.%s" % (n, kind))
        tags = ["-metadata", "title=Track %d" % n, "-metadata", "artist=Artist %d" % (n % 7),
                "-metadata", "album=Album %d" % (n % 5), "-metadata", "date=%d" % (1990 + n % 30)]
        tone = ["-f", "lavfi", "-i", "sine=frequency=%d:duration=1" % rng.randint(200, 900)]
        if kind == "mp4":
            args = ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=1"] + tone + [
                "-c:v", "mpeg4", "-c:a", "aac", "-shortest"]
        else:
            codec = {"mp3": ["-c:a", "libmp3lame", "-b:a", "64k"], "flac": ["-c:a", "flac"], "m4a": ["-c:a", "aac"]}
            args = tone + codec[kind]
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y"] + args + tags + [out], check=True)
        made.append(out)
    return made


def plan(files, seed):
    """(relative path, kind) for every file, in a stable order."""
    rng = random.Random(seed)
    mix = [("txt", 0.14), ("md", 0.1), ("html", 0.06), ("csv", 0.04), ("py", 0.06), ("docx", 0.05),
           ("xlsx", 0.03), ("pptx", 0.03), ("odt", 0.04), ("pdf", 0.10), ("jpg", 0.20), ("png", 0.05),
           ("media", 0.10)]
    kinds = rng.choices([k for k, _ in mix], weights=[w for _, w in mix], k=files)
    out = []
    for i, kind in enumerate(kinds):
        folder = "%s/%02d" % (rng.choice(["Documents", "Projects", "Pictures", "Music", "Downloads", "Archive"]),
                              rng.randrange(40))
        extension = kind if kind != "media" else MEDIA[i % len(MEDIA)]
        out.append(("%s/file-%06d.%s" % (folder, i, extension), kind))
    return out


def make_one(job):
    root, relative, kind, i, seed, templates = job
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if kind in ("jpg", "png"):
        write_image(path, i, seed)
        return kind, i, False
    if kind == "media":
        extension = relative.rsplit(".", 1)[1]
        candidates = [t for t in templates if t.endswith("." + extension)]
        shutil.copyfile(candidates[i % len(candidates)], path)
        return kind, i, False
    words = WORDS
    sentences = text_for(i, seed, words, WEIGHTS)
    if kind in ("txt", "md", "html", "csv", "py"):
        write_text(path, kind, sentences, i)
    elif kind == "pdf":
        write_pdf(path, sentences, i)
    else:
        write_office(path, kind, sentences, i)
    return kind, i, any("invoice" in s for s in sentences)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if os.path.exists(os.path.join(args.out, "MANIFEST.json")):
        print("%s exists; remove it to make it again" % args.out, file=sys.stderr)
        return
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        templates = make_media_templates(scratch, 40, args.seed)
        jobs = [(args.out, rel, kind, i, args.seed, templates) for i, (rel, kind) in enumerate(plan(args.files, args.seed))]
        with ProcessPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            results = list(pool.map(make_one, jobs, chunksize=64))
    counts, invoices, texts = {}, [], []
    for (kind, i, invoice), job in zip(results, jobs):
        counts[kind] = counts.get(kind, 0) + 1
        if kind not in ("jpg", "png", "media"):
            texts.append(job[1])
        if invoice:
            invoices.append(job[1])
    manifest = {
        "files": args.files, "seed": args.seed, "counts": counts,
        "bytes": sum(os.path.getsize(os.path.join(args.out, j[1])) for j in jobs),
        "common_word": "invoice", "common_files": sorted(invoices),
        "rare_word_of": {"format": "zq%dx", "note": "file i holds zq<i>x when it bears text"},
        "text_files": sorted(texts),
    }
    with open(os.path.join(args.out, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("%d files (%s), %.1f MB, in %s" % (
        args.files, ", ".join("%s %d" % kv for kv in sorted(counts.items())), manifest["bytes"] / 1e6, args.out))


WORDS = vocabulary(1)
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(WORDS))]

if __name__ == "__main__":
    main()
