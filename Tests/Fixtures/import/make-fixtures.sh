#!/usr/bin/env bash
# Remakes the importer fixtures (committed, a few KB each): a two-page PDF
# with document information written object by object as PDF 1.4 lays it
# out, its first half (a truncated PDF), and the same PDF encrypted by qpdf
# (AES-256, password "secret"). Needs python3 and qpdf.
set -euo pipefail
cd "$(dirname "$0")"
python3 - <<'PY'
def pdf(pages, info):
    objects = []
    def add(body):
        objects.append(body)
        return len(objects)
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    contents = []
    for text in pages:
        stream = ("BT /F1 18 Tf 72 720 Td (%s) Tj ET" % text).encode()
        contents.append(add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"))
    pages_id = len(objects) + len(pages) + 1
    page_ids = [add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (pages_id, font, c)) for c in contents]
    kids = b" ".join(b"%d 0 R" % p for p in page_ids)
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    info_id = add(b"<< " + b" ".join(b"/%s (%s)" % (k.encode(), v.encode()) for k, v in info.items()) + b" >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, info_id, xref)
    return out
data = pdf(["Invoice 2024 for Acme", "Total due: 1200 EUR"],
           {"Title": "Acme Invoice", "Author": "Jane Doe; John Roe", "Creator": "mdq fixture maker",
            "CreationDate": "D:20240315093000Z"})
open("invoice.pdf", "wb").write(data)
open("truncated.pdf", "wb").write(data[: len(data) // 2])
PY
qpdf --encrypt secret secret 256 -- invoice.pdf encrypted.pdf
