#!/usr/bin/env python3
"""Remakes the office and e-book fixtures (committed, a few KB each) with the
libraries that write those formats: python-docx, openpyxl, python-pptx, odfpy
and EbookLib (pip install python-docx openpyxl python-pptx odfpy EbookLib).
Each holds known text and properties that OfficeImportTests checks."""
import datetime, os
os.chdir(os.path.dirname(os.path.abspath(__file__)))

import docx
d = docx.Document()
d.add_heading("Quarterly Report", 1)
d.add_paragraph("Revenue grew in the northern region.")
d.add_paragraph("Zebra crossings were repainted.")
d.core_properties.title = "Q3 Report"
d.core_properties.author = "Ada Lovelace; Charles Babbage"
d.save("report.docx")

import openpyxl
wb = openpyxl.Workbook()
ws = wb.active
ws["A1"] = "Budget line"
ws["B1"] = "Amount"
ws["A2"] = "Telescope lenses"
ws["B2"] = 1200
wb.properties.title = "Budget 2025"
wb.properties.creator = "Grace Hopper"
wb.save("budget.xlsx")

import pptx
p = pptx.Presentation()
for title in ["Kickoff agenda", "Milestones and risks", "Questions"]:
    slide = p.slides.add_slide(p.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = "Notes about " + title.lower()
p.core_properties.title = "Project Kickoff"
p.core_properties.author = "Alan Turing"
p.save("kickoff.pptx")

from odf.opendocument import OpenDocumentText, OpenDocumentSpreadsheet, OpenDocumentPresentation
from odf.text import P, H
from odf import dc, meta
from odf.table import Table, TableRow, TableCell
from odf.draw import Page, Frame, TextBox
from odf.style import MasterPage, PageLayout

t = OpenDocumentText()
t.text.addElement(H(outlinelevel=1, text="Meeting minutes"))
t.text.addElement(P(text="The committee approved the lighthouse budget."))
t.meta.addElement(dc.Title(text="Minutes March"))
t.meta.addElement(meta.InitialCreator(text="Emmy Noether"))
t.save("minutes.odt")

s = OpenDocumentSpreadsheet()
table = Table(name="Inventory")
for cells in [["Item", "Count"], ["Anchors", "12"], ["Sextants", "3"]]:
    row = TableRow()
    for value in cells:
        cell = TableCell()
        cell.addElement(P(text=value))
        row.addElement(cell)
    table.addElement(row)
s.spreadsheet.addElement(table)
s.meta.addElement(dc.Title(text="Ship inventory"))
s.save("inventory.ods")

o = OpenDocumentPresentation()
layout = PageLayout(name="PL")
o.automaticstyles.addElement(layout)
master = MasterPage(name="Default", pagelayoutname=layout)
o.masterstyles.addElement(master)
for text in ["Harbour tour", "Lighthouse history"]:
    page = Page(masterpagename=master)
    frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
    box = TextBox()
    box.addElement(P(text=text))
    frame.addElement(box)
    page.addElement(frame)
    o.presentation.addElement(page)
o.meta.addElement(dc.Title(text="Harbour slides"))
o.save("harbour.odp")

from ebooklib import epub
book = epub.EpubBook()
book.set_identifier("mdq-fixture-1")
book.set_title("The Lighthouse Keeper")
book.set_language("en")
book.add_author("Mary Shelley")
chapters = []
for i, body in enumerate(["The storm rolled in over the cliffs.", "By morning the lamp still burned."], 1):
    c = epub.EpubHtml(title="Chapter %d" % i, file_name="chap_%d.xhtml" % i, lang="en")
    c.content = "<h1>Chapter %d</h1><p>%s</p>" % (i, body)
    book.add_item(c)
    chapters.append(c)
book.toc = chapters
book.add_item(epub.EpubNcx())
book.add_item(epub.EpubNav())
book.spine = ["nav"] + chapters
epub.write_epub("keeper.epub", book)
