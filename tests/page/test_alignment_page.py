"""The Alignment and Training views on the page: by link under AppTest (numbers against model/align.py), and
clicked in a real browser (a head, a rule, a snapshot), the link following each click."""

import json

import numpy as np
import pytest

from conftest import CHECKPOINT, array, charts, from_url, markdown, shown
from model import align
from model.vocab import tokenize

pytestmark = pytest.mark.slow
GOLD = {r.line: r for r in align.read_gold(align.GOLD)}
LINE0 = GOLD[0]


def test_alignment_view_by_link_scores_an_annotated_sentence_as_the_library_does(monkeypatch, translator):
    at = from_url(monkeypatch, s=LINE0.de, view="align", **{"from": "attention"}, layer="3", head="5", rule="shift")
    assert not at.exception and not at.warning
    report = json.loads((CHECKPOINT / "alignment.json").read_text())
    grid = np.asarray(report["heads"]["cross"])
    l, h = np.unravel_index(np.argmin(grid), grid.shape)
    assert at.metric[0].label == f"Best head: layer {l + 1}, head {h + 1}" and at.metric[0].value == f"{grid[l, h]:.3f}"
    # the sentence's own score: the library's links of layer 3, head 5, shift rows, over the reference
    t = translator
    en, de = tokenize(LINE0.en, "en"), tokenize(LINE0.de, "de")
    m = align.maps_for(t, LINE0.de, en)["attention"][2, 4]
    links = align.links_of(align.word_rows(m, len(de), len(en), "shift"), "shift")
    r = align.score([(links, LINE0.sure, LINE0.possible)])
    assert f"AER **{r['aer']:.3f}**" in markdown(at)
    fig = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Alignment from"))
    title = fig["layout"]["title"]["text"]  # wrapped into lines a phone shows whole (views.widgets.chart)
    assert title.replace("<br>", " ") == "Alignment from attention weights, layer 3, head 5, Shift-Att"
    np.testing.assert_allclose(array(fig["data"][0]["z"]), align.word_rows(m, len(de), len(en), "shift"), atol=1e-6)
    drawn = {(int(x), int(y)) for tr in fig["data"][1:] if tr["name"].startswith("model link")
             for x, y in zip(tr["x"], tr["y"])}
    assert drawn == set(links)
    missed = {(int(x), int(y)) for tr in fig["data"][1:] if tr["name"].startswith("sure reference")
              for x, y in zip(tr["x"], tr["y"])}
    assert missed == set(LINE0.sure) - set(links)
    assert dict(at.query_params) == {"s": LINE0.de, "view": "align", "from": "attention", "layer": "3", "head": "5",
                                     "rule": "shift"}


def test_alignment_view_for_a_typed_sentence_and_a_bad_link(monkeypatch):
    at = from_url(monkeypatch, s="Zwei Hunde spielen im Schnee.", view="align", rule="best", head="12")
    assert not at.exception
    assert "rule='best'" in shown(at.warning[0].value) and "head='12'" in shown(at.warning[0].value)
    assert "Not one of the annotated test sentences" in markdown(at)


def test_alignment_view_of_a_sentence_longer_than_the_positions(monkeypatch):
    at = from_url(monkeypatch, s=" ".join(["Ein Hund läuft schnell über die Wiese."] * 14), view="align")
    assert not at.exception and [w.value for w in at.warning] == [  # the page's own note, and nothing else
        "The sentence is too long for the model's 100 positions: the last 14 tokens were cut, and the rest was "
        "translated."]
    fig = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Alignment from"))
    assert array(fig["data"][0]["z"]).shape[1] == 98  # the German words the model read
