"""The self-contained HTML report (viz/report.py, and its command python -m viz.report): its structure, every map
in it, hostile text kept as text, the CLI; in a real browser from disk with the network off, and the page's download
against the CLI's file."""

import json
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import plotly.offline
import pytest

from conftest import assert_error_line
from model.export import provenance
from model.translator import Translator
from viz import report
from viz.report import DIGITS, report_html

SENTENCE = "Zwei Männer im Park."
HOSTILE = 'Ein Hund </script><script>window.__pwned=1</script> <img src=x onerror="window.__pwned=2"> & "zwei"'
KINDS = {"enc": "encoder_attentions", "dec": "decoder_attentions", "cross": "cross_attentions"}


class Document(HTMLParser):
    """Every start tag with its attributes, the text of every script, each select's option values, and the text
    of every element with an id or class (by that name)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self.options, self.text, self._open = [], [], {}, {}, []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        self._open.append((tag, attrs.get("id") or attrs.get("class")))
        if tag == "script":
            self.scripts.append([attrs, ""])
        elif tag == "select":
            self.options[attrs["id"]] = []
        elif tag == "option":
            self.options[list(self.options)[-1]].append(attrs["value"])

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open and self._open[-1][0] == "script":
            self.scripts[-1][1] += data
        elif self._open and self._open[-1][1]:
            self.text[self._open[-1][1]] = self.text.get(self._open[-1][1], "") + data


def data_block(doc: Document) -> dict:
    (blob,) = [text for attrs, text in doc.scripts if attrs.get("id") == "report-data"]
    return json.loads(blob)


def expected_cells(maps, causal: bool) -> list:
    a = np.round(np.asarray(maps, dtype=np.float64), DIGITS)
    if causal:
        a = np.where(np.triu(np.ones(a.shape[-2:], bool), k=1), np.nan, a)
    return np.where(np.isnan(a), None, a).tolist()


@pytest.fixture
def tiny_report(tiny_translator):
    r = tiny_translator.translate(SENTENCE)
    return r, report_html(r, provenance(tiny_translator))


def test_the_report_is_one_document_with_every_map(tiny_translator, tiny_report):
    r, text = tiny_report
    assert text.startswith("<!DOCTYPE html>\n<html") and text.rstrip().endswith("</html>")
    doc = Document(text)
    # Three scripts, none loaded from anywhere: plotly.js itself, the data, the switches. No links, no images.
    assert [attrs for attrs, _ in doc.scripts] == [{}, {"type": "application/json", "id": "report-data"}, {}]
    assert doc.scripts[0][1] == plotly.offline.get_plotlyjs()
    assert not [t for t, attrs in doc.tags if t in ("link", "img", "iframe") or "src" in attrs or "href" in attrs]
    assert "Plotly.react" in doc.scripts[2][1]

    data = data_block(doc)
    assert set(data["kinds"]) == {"enc", "dec", "cross"}
    L, H = r.encoder_attentions.shape[:2]
    for kind, field in KINDS.items():
        k = data["kinds"][kind]
        maps = getattr(r, field)
        assert k["maps"] == expected_cells(maps, causal=kind == "dec")  # every layer and head, 4 decimals
        assert np.array(k["maps"], dtype=float).shape == maps.shape
        assert "z" not in k["figure"]["data"][0]  # the values come from maps, once
        assert k["figure"]["data"][0]["type"] == "heatmap"
        assert [t["name"] for t in k["figure"]["data"]] == (["attention", "masked"] if kind == "dec" else ["attention"])
        assert doc.options[f"{kind}-layer"] == [str(i) for i in range(L)]
        assert doc.options[f"{kind}-head"] == [str(i) for i in range(H)]
        assert ("div", {"id": f"{kind}-map", "class": "map"}) in doc.tags
    assert text.count("<tr><td class=num>") == len(r.steps)  # the trace: one row per step
    assert doc.text["translation"] == r.text and doc.text["sentence"] == SENTENCE
    assert json.loads(doc.text["provenance"]) == provenance(tiny_translator)


def test_maps_of_a_kind_are_that_field(tiny_report):
    """Translation.maps(kind): the one kind -> field table the report, the views, head_stats and replay read."""
    r, _ = tiny_report
    for kind, field in KINDS.items():
        assert r.maps(kind) is getattr(r, field)
    with pytest.raises(ValueError, match="'self' is not one of enc, dec, cross"):
        r.maps("self")


def test_the_same_result_gives_the_same_bytes(tiny_translator, tiny_report):
    r, text = tiny_report
    assert report_html(tiny_translator.translate(SENTENCE), provenance(tiny_translator)) == text


def test_hostile_text_stays_text(tiny_translator):
    r = tiny_translator.translate(HOSTILE)
    # Tokens the model could never write, in every place a token is shown: the trace, the rows, the candidates.
    bad = ["</script>", "<img src=x onerror=alert(1)>", "&amp;", "<!--"]
    tgt = ["<sos>", *(bad[i % 4] for i in range(1, len(r.tgt_tokens)))]
    steps = [replace(s, token=bad[i % 4], top=((bad[i % 4], s.prob), ("</SCRIPT >", 0.0)))
             for i, s in enumerate(r.steps)]
    r = replace(r, tgt_tokens=tgt, steps=steps, output_tokens=[s.token for s in steps[:-1]])
    text = report_html(r, provenance(tiny_translator))
    doc = Document(text)
    assert len(doc.scripts) == 3 and len(doc.options) == 6 and not [t for t, _ in doc.tags if t == "img"]
    assert text.lower().count("<script") == 3 and text.lower().count("</script") == 3
    assert "<!--" not in text.replace(plotly.offline.get_plotlyjs(), "")
    assert doc.text["sentence"] == HOSTILE and doc.text["translation"] == r.text
    data = data_block(doc)  # still one JSON document: nothing broke out of it
    figure = data["kinds"]["dec"]["figure"]
    assert "&lt;/script&gt;" in json.dumps(figure["layout"]["yaxis"]["ticktext"])  # escaped for Plotly's labels
    assert data["kinds"]["cross"]["maps"] == expected_cells(r.cross_attentions, causal=False)


def test_a_result_without_maps_is_refused(tiny_translator):
    r = tiny_translator.translate_batch([SENTENCE], with_maps=False)[0]
    with pytest.raises(ValueError, match="no attention maps"):
        report_html(r, provenance(tiny_translator))


# the command line ---------------------------------------------------------------------------------
def test_the_cli_writes_the_library_report(tiny_checkpoint, tmp_path, call):
    out = tmp_path / "report.html"
    status, stdout, err = call(report.main, SENTENCE, "--out", out, "--checkpoint", tiny_checkpoint, "--device", "cpu")
    assert (status, stdout, err) == (0, "", "")
    tr = Translator.load(tiny_checkpoint, "cpu")
    assert out.read_text(encoding="utf-8") == report_html(tr.translate(SENTENCE), provenance(tr))


@pytest.mark.parametrize("argv,fragment", [
    (["", "--out", "{tmp}/r.html"], "the sentence is empty"),
    ([SENTENCE, "--out", "{tmp}/nowhere/r.html"], "does not exist"),
    ([SENTENCE], "--out"),
    ([SENTENCE, "--out", "{tmp}/r.html", "--device", "tpu"], "tpu"),
    ([SENTENCE, "--out", "{tmp}/r.html", "--checkpoint", "{tmp}/none"], "none"),
])
def test_cli_errors_are_one_line_and_write_nothing(argv, fragment, tmp_path, tiny_checkpoint, call):
    argv = [a.format(tmp=tmp_path) for a in argv]
    if "--checkpoint" not in argv:
        argv += ["--checkpoint", tiny_checkpoint]
    status, stdout, err = call(report.main, *argv)
    assert_error_line(status, err, fragment)
    assert stdout == "" and not list(tmp_path.rglob("*.html"))


# in a real browser (slow) -------------------------------------------------------------------------
# Three charts, each with its heatmap drawn (as an <image> in the trace's .hm group).
