"""What a screen shows and where its keys go: the report's captions keep "<sos>", the arrow keys step the view just
picked, and every segmented control fits a phone's width."""

import html
import re

from model.export import provenance
from views.widgets import literal
from viz import map_caption
from viz.report import report_html


def test_the_reports_cross_caption_keeps_sos(tiny_translator):
    """MAP_CAPTIONS' own "<sos>" is escaped like the words filled in: an HTML parser reads it as text, not a tag."""
    r = tiny_translator.translate("Zwei Männer im Park.")
    text = report_html(r, provenance(tiny_translator))
    caption = re.search(r'<section id="cross">.*?<p class="caption">(.*?)</p>', text, re.S).group(1)
    assert f"“&lt;sos&gt; → {html.escape(r.steps[0].token)}”" in caption, caption
    assert "<" not in caption


def test_the_pages_captions_are_text_whatever_the_words():
    """The page's escape (literal) also escapes braces: the template is split on its placeholders, never escaped
    whole and then formatted; every character reads as written, the words' own braces and markup too."""
    for kind in ("enc", "dec", "cross"):
        caption = map_caption(kind, ["{b}", "<i>x</i>"], literal)
        assert "<" not in caption and "{" not in caption
    assert "“<sos> → {b}”" in html.unescape(map_caption("cross", ["{b}", "<i>x</i>"], literal))
    assert "“{b} → <i>x</i>”" in html.unescape(map_caption("dec", ["{b}", "<i>x</i>"], literal))
