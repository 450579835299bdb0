"""The Alignment and Training views on the page: by link under AppTest (numbers against model/align.py), and
clicked in a real browser (a head, a rule, a snapshot), the link following each click."""

import json

import numpy as np
import pytest

from conftest import CHECKPOINT, array, charts, from_url, markdown, shown, wait_for_title
from model import align
from model.translator import Translator
from model.vocab import tokenize

pytestmark = pytest.mark.slow
GOLD = {r.line: r for r in align.read_gold(align.GOLD)}
LINE0 = GOLD[0]


def test_alignment_view_by_link_scores_an_annotated_sentence_as_the_library_does(monkeypatch):
    at = from_url(monkeypatch, s=LINE0.de, view="align", **{"from": "attention"}, layer="3", head="5", rule="shift")
    assert not at.exception and not at.warning
    report = json.loads((CHECKPOINT / "alignment.json").read_text())
    grid = np.asarray(report["heads"]["cross"])
    l, h = np.unravel_index(np.argmin(grid), grid.shape)
    assert at.metric[0].label == f"Best head: layer {l + 1}, head {h + 1}" and at.metric[0].value == f"{grid[l, h]:.3f}"
    # the sentence's own score: the library's links of layer 3, head 5, shift rows, over the reference
    t = Translator.load()
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


def test_alignment_and_training_views_in_the_browser(page, server):
    from appserver import wait_idle

    page.goto(f"{server}/?s={LINE0.de}&view=align")
    page.get_by_text("Annotated test sentence (line 0)").wait_for(timeout=60_000)
    page.get_by_role("radiogroup", name="Rule").get_by_role("radio", name="Shift-Att").click()
    page.wait_for_function("new URLSearchParams(location.search).get('rule') === 'shift'", timeout=30_000)
    page.get_by_role("radiogroup", name="Head").get_by_role("radio", name="4", exact=True).click()
    page.wait_for_function("new URLSearchParams(location.search).get('head') === '4'", timeout=30_000)
    wait_idle(page)
    wait_for_title(page, "Alignment from attention weights, layer 3, head 4, Shift-Att")
    assert page.locator("[data-testid='stException']").count() == 0
    if not (CHECKPOINT / "replay/replay.json").is_file():
        return
    m = json.loads((CHECKPOINT / "replay/replay.json").read_text())
    page.get_by_role("radio", name="Training", exact=True).click()
    page.wait_for_function("new URLSearchParams(location.search).get('view') === 'training'", timeout=60_000)
    wait_idle(page)
    slider = page.get_by_role("slider")
    slider.focus()
    slider.press("Home")  # the first snapshot: the untrained model
    first = m["snapshots"][0]["step"]
    page.wait_for_function(f"new URLSearchParams(location.search).get('at') === '{first}'", timeout=30_000)
    wait_idle(page)
    page.get_by_text(f"At step {first:,} (epoch").first.wait_for(timeout=30_000)
    assert page.locator("[data-testid='stException']").count() == 0


def test_alignment_view_of_a_sentence_longer_than_the_positions(monkeypatch):
    at = from_url(monkeypatch, s=" ".join(["Ein Hund läuft schnell über die Wiese."] * 14), view="align")
    assert not at.exception and [w.value for w in at.warning] == [  # the page's own note, and nothing else
        "The sentence is too long for the model's 100 positions: the last 14 tokens were cut, and the rest was "
        "translated."]
    fig = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Alignment from"))
    assert array(fig["data"][0]["z"]).shape[1] == 98  # the German words the model read
