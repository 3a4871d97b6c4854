#!/usr/bin/env python3
"""Runs mdfind and mdls command lines as people type them (the forms in
Apple's manual pages and in common scripts) through mdq's personalities, on
a generated tree, and writes a markdown table of what each prints.

    Benchmarks/mdfind-lines.py [--build DIR] [--work DIR] [--out FILE]

--build names the folder holding mdq and mdq-full (default: what
Scripts/build-release stages, .build/mdq-release; the debug build works
too). The work folder (default /tmp/mdq-mdfind-lines) gets `home`, a tree of
`make-tree.py --files 3000`, and `extra`, five files made for the content
keys (a PDF with a title and an author, a PNG, texts, a zip; tags, origin
URLs and a comment in user.xdg.* extended attributes; older dates on
three). No index daemon runs (private, empty MDQ_RUNTIME_DIR and
MDQ_STATE_DIR), so each search crawls its -onlyin folders, and `mdfind`
without -onlyin (everything indexed) says no daemon runs. Each command runs once with `bash -c`;
the table shows the first line or the count, and the status when not 0.
"""
import argparse, calendar, os, re, shutil, struct, subprocess, sys, time, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
EXAMPLE = os.path.join(TOP, "Examples/ExampleContainer")

COMMANDS = [
    ('mdfind image',
     'search everything indexed for "image"'),
    ('mdfind -onlyin {home} image',
     '"image" in names/content under ~/home'),
    ('mdfind -onlyin {home} -count image',
     'number of "image" hits'),
    ('mdfind -onlyin {home} -count invoice 2024',
     'items matching both words'),
    ('mdfind -onlyin {home} -name stdlib.h',
     'files named stdlib.h'),
    ('mdfind -onlyin {home} -name report',
     'names containing "report"'),
    ('mdfind -count -onlyin {home} -name REPORT',
     'same, upper case, count'),
    ('mdfind -onlyin {home} -name resume',
     'name match ignoring accents (résumé)'),
    ('mdfind -onlyin {extra} "kMDItemAuthors == \'*MyFavoriteAuthor*\'"',
     'documents by that author'),
    ('timeout 2 mdfind -live -onlyin {home} "kMDItemFSName == \'*.pdf\'"',
     'PDFs, then keep updating'),
    ('timeout 2 mdfind -live -count -onlyin {ec} "kMDItemFSName == \'*.png\'c"',
     'live count of PNGs'),
    ('mdfind -count -onlyin {home} "kMDItemFSName == \'*.pdf\'"',
     'number of PDFs'),
    ('mdfind -0 -onlyin {ec} "kMDItemFSName == \'*.md\'" | xargs -0 ls -1',
     'NUL-separated, for xargs -0'),
    ('mdfind -onlyin {ec} -attr kMDItemFSSize "kMDItemFSName == \'*.png\'c"',
     'PNGs with their sizes'),
    ('mdfind -attr kMDItemFSSize -attr kMDItemKind -onlyin {ec} report',
     '"report" hits, size and kind'),
    ('mdfind -onlyin {extra} -attr kMDItemFSContentChangeDate -attr kMDItemUserTags "kMDItemUserTags == \'*\'"',
     'tagged files, date and tags'),
    ('mdfind -literal -onlyin {ec} "kMDItemFSName == \'todo.md\'"',
     'raw query, no interpretation'),
    ('mdfind -literal -onlyin {ec} report',
     '"report" as a raw query: not a valid one'),
    ('mdfind -interpret -onlyin {home} "pdf files from this week"',
     'natural-language query'),
    ('mdfind -reprint -onlyin {home} "kMDItemFSName == \'*.pdf\'"',
     'print results again on each change'),
    ('mdfind -s "Recent PDFs"',
     'run a Finder saved search'),
    ('mdfind -onlyin {home}',
     'no query given'),
    ('mdfind -onlyin /no/such/folder image',
     'folder that does not exist'),
    ('mdfind -onlyin {home} "kMDItemContentTypeTree == \'public.image\'"',
     'every image'),
    ('mdfind -onlyin {home} "kMDItemContentType == \'com.adobe.pdf\'"',
     'PDFs by UTI'),
    ('mdfind -onlyin {home} "kMDItemContentType == \'public.png\'"',
     'PNGs by UTI'),
    ('mdfind -onlyin {home} "kMDItemKind == \'PDF document\'"',
     'PDFs by kind'),
    ('mdfind -onlyin {home} "kMDItemKind == \'Folder\'"',
     'folders'),
    ("mdfind -onlyin {home} 'kMDItemFSContentChangeDate >= $time.today(-7)'",
     'changed in the last 7 days'),
    ("mdfind -onlyin {extra} 'kMDItemFSContentChangeDate < $time.today(-7)'",
     'not changed for 7 days'),
    ("mdfind -onlyin {extra} 'kMDItemContentModificationDate > $time.iso(2024-01-01)'",
     'modified after 2024-01-01'),
    ("mdfind -onlyin {extra} 'kMDItemFSContentChangeDate > $time.now(-3600)'",
     'changed in the last hour'),
    ("mdfind -onlyin {extra} 'kMDItemFSCreationDate >= $time.this_week'",
     'created this week'),
    ('mdfind -onlyin {home} "kMDItemFSSize > 10000000"',
     'files over 10 MB'),
    ('mdfind -onlyin {home} -count "kMDItemFSSize >= 4096"',
     'files of 4 KB or more'),
    ('mdfind -onlyin {home} \'kMDItemFSName == "*.txt"c\'',
     '.txt, any case'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'*.PDF\'"',
     '.PDF, case-sensitive'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'*.PDF\'c"',
     '.PDF, any case'),
    ('mdfind -onlyin {home} "kMDItemDisplayName == \'report*\'cd"',
     'display name starts with report'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'*resume*\'cd"',
     'resume, any case/accents'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'*resume*\'c"',
     'resume, accents significant'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'budget\'wc"',
     'the word budget in the name'),
    ('mdfind -onlyin {home} "kMDItemFSName == \'*.png\' && kMDItemFSSize < 1000"',
     'small PNGs'),
    ('mdfind -onlyin {home} "InRange(kMDItemFSSize, 1000, 5000)"',
     'size 1000..5000 bytes'),
    ('mdfind -onlyin {extra} "kMDItemTextContent == \'*invoice*\'cd"',
     'text contains invoice'),
    ('mdfind -onlyin {extra} invoice',
     'word search incl. content'),
    ('mdfind -onlyin {extra} "kMDItemUserTags == \'Red\'"',
     'Finder tag Red'),
    ('mdfind -onlyin {extra} "kMDItemWhereFroms == \'*github.com*\'"',
     'downloaded from GitHub'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'*.png\' || kMDItemFSName == \'*.jpg\'"',
     'PNG or JPEG'),
    ('mdfind -onlyin {ec} "kMDItemFSName == \'*.md\' && kMDItemFSName != \'todo*\'"',
     '.md except todo*'),
    ('mdfind -onlyin {ec} "kMDItemFSName == \'*.md\' && !(kMDItemFSName == \'*conflict*\')"',
     '.md, NOT conflict copies'),
    ('mdfind -onlyin {home} -count "kMDItemFSName = \'*.c\'"',
     'single = form'),
    ('mdfind -onlyin {home}/Projects1 -onlyin {extra} -name report',
     'two scopes'),
    ('cd {home}/Projects1 && mdfind -onlyin . -name invoice',
     'relative scope (prints full paths)'),
    ('mdfind -onlyin {home} "kMDItemFSName == \'*.pdf"',
     'unterminated quote'),
    ("mdfind -onlyin {home} 'kMDItemFSContentChangDate > $time.today'",
     'misspelt key'),
    ('mdls "{ec}/Documents/Reports/Q3 report.pdf"',
     'all attributes of a file'),
    ('mdls {extra}/annual-report.pdf',
     'all attributes, imported PDF'),
    ('mdls -name kMDItemContentType -name kMDItemFSSize {extra}/red-dot.png',
     'two attributes'),
    ('mdls -name kMDItemPixelWidth -name kMDItemPixelHeight {extra}/red-dot.png',
     'image dimensions'),
    ('mdls -name kMDItemAuthors {extra}/annual-report.pdf',
     'an array value'),
    ('mdls -name kMDItemFSContentChangeDate {extra}/notes.md',
     'a date value'),
    ('mdls -name kMDItemWhereFroms -name kMDItemUserTags {extra}/mdq-main.zip',
     'download origin, missing tags'),
    ('mdls -raw -name kMDItemFSName {extra}/annual-report.pdf',
     'just the value'),
    ('mdls -raw -name kMDItemFSName -name kMDItemFSSize {extra}/red-dot.png | od -c',
     'two raw values, bytes shown'),
    ('mdls -raw -name kMDItemAuthors {extra}/annual-report.pdf',
     'raw array value'),
    ('mdls -nullMarker NONE -name kMDItemAuthors {extra}/notes.md',
     'marker (only used with -raw)'),
    ('mdls -raw -nullMarker NONE -name kMDItemAuthors {extra}/notes.md',
     'raw, missing value as NONE'),
    ('mdls -name kMDItemFSName {extra}/notes.md {extra}/red-dot.png',
     'two files'),
    ('mdls -name kMDItemFSSize {home}/Projects1',
     "a folder's size"),
    ('mdls -name kMDItemNoSuchKey {extra}/notes.md',
     'unknown key'),
    ('mdls {extra}/no-such-file.txt',
     'missing file'),
    ('mdls -plist - {extra}/notes.md',
     'attributes as an XML plist'),
    ('timeout 2 mdfind -live -onlyin {extra} "kMDItemUserTags == \'Red\'"',
     'live query on Finder tags'),
    ('mdfind -onlyin {ec} -name "q3 REPORT"',
     'name with a space, any case'),
    ('mdfind -onlyin {ec} "kMDItemFSName == \'übersicht*\'c"',
     'umlaut name, any case'),
    ('mdfind -onlyin {ec} -count "kMDItemContentTypeTree == \'public.text\'"',
     'every text file'),
    ('mdfind -onlyin {home} -count "kMDItemFSName == \'报告*\'"',
     'CJK name prefix'),
    ('mdfind -onlyin {home} -count "(kMDItemFSName == \'*.h\' || kMDItemFSName == \'*.c\') && kMDItemFSSize > 0"',
     'non-empty C sources/headers'),
    ('mdls -name kMDItemContentTypeTree -name kMDItemKind {ec}/Documents/Photos/IMG_0002.PNG',
     'type tree of an upper-case .PNG'),
    ('mdls -raw -name kMDItemFSName {extra}/notes.md {extra}/red-dot.png | od -c',
     'raw values of two files'),
    ('w=$(mdls -raw -name kMDItemPixelWidth {extra}/red-dot.png); echo "width=$w"',
     'raw value in a shell variable'),
    ('mdfind -0 -count -onlyin {ec} -name todo',
     'count (with -0 in a script)'),
]


def make_extra(folder):
    """Files for the content keys, with fixed dates and extended attributes."""
    os.makedirs(folder, exist_ok=True)
    path = lambda name: os.path.join(folder, name)
    with open(path("invoice-march.txt"), "w") as f:
        f.write("INVOICE #42\nConsulting services, March 2024.\nTotal due: 1200 EUR\n")
    with open(path("notes.md"), "w") as f:
        f.write("# Meeting notes\nDiscussed the budget and the new Invoice template.\n")
    # A one-page PDF with a title and an author, written by hand (the
    # corpus generator's PDFs need groff).
    stream = b"BT /F1 24 Tf 72 700 Td (Annual report: invoice totals) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (Annual Report 2024) /Author (Jane MyFavoriteAuthor Doe) /Creator (mdfind-lines.py) >>",
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        pdf += b"%010d 00000 n \n" % offset
    pdf += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    with open(path("annual-report.pdf"), "wb") as f:
        f.write(pdf)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    pixels = b"".join(b"\x00" + b"\xff\x00\x00" * 3 for _ in range(2))
    with open(path("red-dot.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b""))
    with open(path("mdq-main.zip"), "wb") as f:
        f.write(b"PK\x05\x06" + b"\x00" * 18)
    os.setxattr(path("red-dot.png"), "user.xdg.tags", b"Red, Work")
    os.setxattr(path("mdq-main.zip"), "user.xdg.origin.url", b"https://codeload.github.com/example/mdq/zip/main")
    os.setxattr(path("mdq-main.zip"), "user.xdg.referrer.url", b"https://github.com/example/mdq")
    os.setxattr(path("invoice-march.txt"), "user.xdg.tags", b"Red")
    os.setxattr(path("invoice-march.txt"), "user.xdg.comment", b"paid")
    for name, day in [("notes.md", "2023-06-01"), ("annual-report.pdf", "2024-02-10"),
                      ("invoice-march.txt", "2024-03-15")]:
        stamp = calendar.timegm(time.strptime(day + " 12:00:00", "%Y-%m-%d %H:%M:%S"))
        os.utime(path(name), (stamp, stamp))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(TOP, ".build/mdq-release"))
    parser.add_argument("--work", default="/tmp/mdq-mdfind-lines")
    parser.add_argument("--out")
    a = parser.parse_args()
    work = os.path.abspath(a.work)
    home, extra, bin_dir = (os.path.join(work, name) for name in ("home", "extra", "bin"))
    if not os.path.exists(home):
        subprocess.run([sys.executable, os.path.join(HERE, "make-tree.py"), "--files", "3000", home], check=True,
                       stdout=subprocess.DEVNULL)
    shutil.rmtree(extra, ignore_errors=True)
    make_extra(extra)
    os.makedirs(bin_dir, exist_ok=True)
    for name in ("mdfind", "mdls"):
        link = os.path.join(bin_dir, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join(os.path.abspath(a.build), "mdq"), link)
    env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"],
               MDQ_RUNTIME_DIR=os.path.join(work, "run"), MDQ_STATE_DIR=os.path.join(work, "state"))
    for folder in ("run", "state"):
        os.makedirs(os.path.join(work, folder), mode=0o700, exist_ok=True)
    places = [(home, "~/home"), (extra, "~/extra"), (EXAMPLE, "$EC")]

    def short(text):
        text = text.replace(os.path.join(work, "run/daemon.sock"), "…/daemon.sock")
        for full, name in places:
            text = text.replace(full, name)
        return text

    def elided(path):
        path = short(path)
        for _, name in places:
            if path.startswith(name + "/"):
                rest = path[len(name) + 1:].split("/")
                return name + "/" + ("…/" if len(rest) > 1 else "") + rest[-1]
        return path

    def code(text):
        return "`" + text.replace("|", "\\|").replace("`", "'") + "`"

    def answer(command, result):
        out, err, status = result.stdout, result.stderr.decode("utf-8", "replace").strip(), result.returncode
        lines = [line for line in out.decode("utf-8", "replace").split("\n") if line != ""]
        first_error = code(short(err.split("\n")[0])) if err else ""
        if status == 124 and command.startswith("timeout"):
            note = ", then waits for changes (stopped by `timeout`)"
        else:
            note = f" (status {status})" if status != 0 else ""
        if err and not out:
            return first_error + note
        if b"\0" in out and not command.startswith(("mdls", "w=")):
            paths = [p for p in out.split(b"\0") if p]
            return f"{len(paths)} paths, each ended by NUL" + note
        if "-raw" in command and "od -c" not in command:
            text = short(out.decode("utf-8", "replace")).rstrip("\n")
            return code(text.replace("\0", "\\0").replace("\n", "\\n")) + note \
                + (" · stderr: " + first_error if err else "")
        if "-count" in command and len(lines) == 1 and re.fullmatch(r"\d+", lines[0]):
            return code(lines[0]) + note
        if not lines:
            return "nothing" + note + (" · stderr: " + first_error if err else "")
        if command.startswith(("mdfind", "cd ", "timeout")) and "-attr" not in command:
            return f"{len(lines)} path{'s' if len(lines) != 1 else ''}, first {code(elided(lines[0]))}" + note
        head = " · ".join(code(" ".join(short(line).split())) for line in lines[:3])
        return head + (f" (+{len(lines) - 3} lines)" if len(lines) > 3 else "") + note

    rows = []
    for number, (template, meaning) in enumerate(COMMANDS, 1):
        command = template.replace("{home}", home).replace("{extra}", extra).replace("{ec}", EXAMPLE)
        result = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, timeout=60)
        rows.append(f"| {number} | {code(short(command))} | {meaning} | {answer(command, result)} |")
    files = sum(len(names) for _, _, names in os.walk(home))
    text = "\n".join([
        f"{len(COMMANDS)} command lines, run {time.strftime('%Y-%m-%d')} by `Benchmarks/mdfind-lines.py` "
        f"on a tree of {files} files (`make-tree.py --files 3000`, `~/home`), five files made for the content "
        "keys (`~/extra`) and the bundled example container (`$EC`), with no index daemon running; paths "
        "are shortened (`…` for folders).",
        "",
        "| # | command line | meaning on a Mac | what mdq's personality prints |",
        "|---|---|---|---|",
    ] + rows) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
