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


# What a pasted text brings: each through the translator and the chips here; all of them through every view of the
# page in the two sentences of tests/page/test_app.py (ODD_SENTENCES).
ODD_INPUTS = {"nul": "Ein\x00Hund läuft\x00", "only_nul": "\x00", "controls": "Ein \x01\x1b[31mHund\x7f läuft \x08.",
              "zero_width": "Ein\u200b Hund\u200c\u200d läuft\ufeff \u2060.", "bidi": "\u202eEin Hund läuft.\u202c",
              "one_long_token": "Hund" * 125, "numbers": "123 456,78 % 1.000", "punctuation": "?! … „“ -- ;:"}


@pytest.mark.parametrize("name", ODD_INPUTS)
def test_odd_input_is_translated_and_its_chips_show_it_as_text(tiny_translator, name):
    """Each odd input on its own: the translator takes it (a token for what it does not know, never an error) with
    maps of its own length, and its chips show every token as typed, nothing for Markdown, KaTeX or HTML to act on."""
    r = tiny_translator.translate(ODD_INPUTS[name])
    assert r.src_tokens[0] == "<sos>" and r.src_tokens[-1] == "<eos>" and len(r.src_tokens) >= 3, r.src_tokens
    assert r.steps and r.cross_attentions.shape[-2:] == (len(r.steps), len(r.src_tokens)), r.cross_attentions.shape
    markup = token_chips(r.src_tokens)
    assert not ACTIVE & set(shown_text(markup)), markup
    assert not ADDRESS.search(html.unescape(re.sub(r"<[^>]*>", "", markup))), markup


@pytest.mark.parametrize("raw, low, high, number", [
    ("3", 1, 8, 3), (" 3 ", 1, 8, 3), ("0", 0, 5, 0), ("9", 1, 8, None), ("²", 1, 8, None), ("١", 1, 8, None),
    ("٣", 1, 8, None), ("5" * 5000, 1, 8, None), ("9" * 10, 0, 10**12, None), ("", 1, 8, None), ("+3", 1, 8, None),
    ("-1", -5, 8, None), ("3.0", 1, 8, None), ("0x3", 1, 8, None), ("1_0", 1, 99, None), ("３", 1, 8, None)])
def test_a_link_number_is_ascii_digits_of_bounded_length(raw, low, high, number):
    assert whole_number(raw, low, high) == number


# Every parameter any view reads from a link, each given the same hostile value at once: each view's own reader of
# the link (views.registry, View.read) with every hostile value. tests/page/test_hostile.py opens every view once by a
# link of these values on the page.
LINK_PARAMS = ["layer", "head", "stop", "beam", "step", "query", "at", "off", "vs", "kind", "draw", "values", "whatif",
               "ref", "s2", "stat", "from", "model"]
HOSTILE_VALUES = {"superscript": "²", "arabic_indic": "-١", "5000_digits": "7" * 5000,
                  "markdown": "[Anmelden](https://evil.example/login) **b** $x$", "empty": ""}


@pytest.fixture
def session_state():
    """Streamlit's session state outside a server (bare mode), emptied again after the test."""
    import streamlit as st

    before = set(st.session_state.keys())
    yield st.session_state
    for key in set(st.session_state.keys()) - before:
        del st.session_state[key]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_every_views_link_reader_takes_hostile_values_as_short_inert_notes(session_state, value):
    """Each view's reader of the link, every parameter hostile at once: no exception, and each note it writes is short
    (a 5000-digit value is not repeated whole) and, shown as the page shows it (app.py say_unused: literal), leaves
    nothing for Markdown, KaTeX or HTML to act on."""
    from conftest import tiny_config
    from views.registry import VIEWS

    for slug, view in VIEWS.items():
        notes = []
        view.read({k: HOSTILE_VALUES[value] for k in LINK_PARAMS}, tiny_config(), notes)
        for note in notes:
            assert len(note) < 400, (slug, note[:100])
            shown = literal(note)
            assert not ACTIVE & set(shown_text(shown)), (slug, shown)
            assert not ADDRESS.search(html.unescape(re.sub(r"<[^>]*>", "", shown))), (slug, shown)
            assert html.unescape(shown).replace("\u2060", "") == note  # it reads as written



@pytest.mark.parametrize("cell", ["-١", "+٣", "-１", "@١", "-1\u0660"])
def test_a_csv_cell_with_non_ascii_digits_is_text_and_neutralised(cell):
    """Python's \\d takes Arabic-Indic and full-width digits: "-١" passed as a number and reached a spreadsheet as a
    formula. Only ASCII digits make a number."""
    from model.export import csv_cell

    assert csv_cell(cell) == "'" + cell
