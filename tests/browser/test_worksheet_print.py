"""The worksheet prints (lesson/worksheet.py): three exercises, the tallest three of a long sentence, take at most two
A4 pages, printed to PDF by headless Chromium as a browser's "Print" does; the whole sheet, at most six (it took
eleven before its print layout)."""

import re

import pytest

from lesson import worksheet
from lesson.exercises import exercises
from model import cli
from conftest import CHECKPOINT

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese, während eine Frau ein Buch liest."


def pdf_pages(pdf: bytes) -> int:
    """The pages of a PDF: its page objects, "/Type /Page" (the page tree's nodes are "/Type /Pages")."""
    return len(re.findall(rb"/Type\s*/Page(?![A-Za-z])", pdf))


def printed(browser, page_html: str) -> int:
    pg = browser.new_page()
    pg.set_content(page_html)
    pages = pdf_pages(pg.pdf(format="A4"))
    pg.close()
    return pages


def tallest(exs, n: int = 3) -> list[int]:
    """The numbers of the n exercises with the most to print: question, choices and link."""
    size = {ex.number: len(ex.question) + 8 * len(ex.options) + len(worksheet.link(ex, "x")) for ex in exs}
    return sorted(sorted(size, key=lambda k: -size[k])[:n])


@pytest.mark.slow
@pytest.mark.browser
def test_three_exercises_print_on_at_most_two_a4_pages(browser, translator, call, tmp_path, monkeypatch):
    tree = b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >> << /Type /Page >> <</Type/Page>>"
    assert pdf_pages(tree) == 2  # the counter: page objects, not the page tree
    monkeypatch.setattr(cli, "load_translator", lambda args: translator)
    exs = exercises(translator, CHECKPOINT, SENTENCE)
    three = ",".join(str(n) for n in tallest(exs))
    out = tmp_path / "sheet.html"
    status, _, err = call(worksheet.main, "--out", out, "--sentence", SENTENCE, "--exercises", three)
    assert status == 0, err
    assert out.read_text(encoding="utf-8").count("</h2>") == 3
    assert printed(browser, out.read_text(encoding="utf-8")) <= 2
    whole = worksheet.worksheet_html(exs, worksheet.DEFAULT_SERVER, worksheet.TITLE)
    assert printed(browser, whole) <= 6

