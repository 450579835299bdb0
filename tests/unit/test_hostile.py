"""A public classroom server against a hostile visitor: raw WebSocket messages, crafted links, typed and pasted
text. Each test here failed on the code before the fix it guards."""

import html
import re

import pytest

from views.state import whole_number
from views.widgets import diff_chips, literal, token_chips

# What Markdown, KaTeX or HTML would act on in a text shown on the page.
ACTIVE = set("\\`*_{}[]()#+-.!|~$<>&\"'=")
# What remark-gfm links in text once character references are decoded (mdast-util-gfm-autolink-literal).
ADDRESS = re.compile(r"https?://|www\.|[\w.+-]@[\w-]", re.IGNORECASE)
MARKUP = ["[Anmelden](https://evil.example/login)", "![x](https://evil.example/x.png)", "**fett**", "$x^2$",
          "`code`", "<b>b</b>", "https://evil.example", "~~weg~~", "_kursiv_", "www.evil.example", "info@evil.example",
          "HTTP://EVIL.EXAMPLE", "WWW.evil.example", ":smile:", ":material/lock:", ":red[rot]", ":+1:", ":-1:"]
# What Streamlit's Markdown turns into an emoji, an icon or coloured text once character references are decoded.
SHORTCODE = re.compile(r":[\w/+-]")


def shown_text(markup: str) -> str:
    """What is left of an HTML snippet for Markdown to act on: the text between the tags, less character references."""
    return re.sub(r"&#[0-9]+;|&[a-z]+;", "", re.sub(r"<[^>]*>", "", markup))


@pytest.mark.parametrize("text", MARKUP)
def test_chips_leave_nothing_for_markdown_latex_or_html(text):
    tokens = text.split() + list(text)  # whole, and each character on its own, as spaCy may split it
    for markup in (token_chips(tokens), diff_chips([("same", t) for t in tokens]), literal(text)):
        assert not ACTIVE & set(shown_text(markup)), markup
        assert not ADDRESS.search(html.unescape(re.sub(r"<[^>]*>", "", markup))), markup
        assert not SHORTCODE.search(html.unescape(re.sub(r"<[^>]*>", "", markup))), markup
    assert html.unescape(literal(text)).replace("\u2060", "") == text  # it reads as typed


@pytest.mark.parametrize("raw, low, high, number", [
    ("3", 1, 8, 3), (" 3 ", 1, 8, 3), ("0", 0, 5, 0), ("9", 1, 8, None), ("²", 1, 8, None), ("١", 1, 8, None),
    ("٣", 1, 8, None), ("5" * 5000, 1, 8, None), ("9" * 10, 0, 10**12, None), ("", 1, 8, None), ("+3", 1, 8, None),
    ("-1", -5, 8, None), ("3.0", 1, 8, None), ("0x3", 1, 8, None), ("1_0", 1, 99, None), ("３", 1, 8, None)])
def test_a_link_number_is_ascii_digits_of_bounded_length(raw, low, high, number):
    assert whole_number(raw, low, high) == number


# Every parameter any view reads from a link, each given the same hostile value at once.


@pytest.mark.parametrize("cell", ["-١", "+٣", "-１", "@١", "-1\u0660"])
def test_a_csv_cell_with_non_ascii_digits_is_text_and_neutralised(cell):
    """Python's \\d takes Arabic-Indic and full-width digits: "-١" passed as a number and reached a spreadsheet as a
    formula. Only ASCII digits make a number."""
    from model.export import csv_cell

    assert csv_cell(cell) == "'" + cell
