"""The walk through the model: every stop by link, its pictures drawn from the model's own numbers, and its way
into the detailed views (AppTest on the shipped model: slow tier)."""

import numpy as np
import pytest

from conftest import array, charts, from_url, markdown, shown
from views.walk import STOPS

pytestmark = pytest.mark.slow

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."


def walk(monkeypatch, stop: int):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop=str(stop))
    assert not at.exception and not at.error and not at.warning, (at.exception, at.error, at.warning)
    return at


def test_every_stop_opens_by_link_and_keeps_its_place(monkeypatch):
    for stop in range(1, len(STOPS) + 1):
        at = walk(monkeypatch, stop)
        assert STOPS[stop - 1].title in markdown(at)
        assert at.query_params["stop"] == str(stop) and at.query_params["view"] == "walk"
        assert any(f"Stop {stop} of {len(STOPS)}" in c.value for c in at.caption)
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop=str(len(STOPS) + 1))
    assert f"stop='{len(STOPS) + 1}' is not a number from 1 to {len(STOPS)}" in shown(at.warning[0].value)


def test_next_and_previous_step_and_stop_at_the_ends(monkeypatch):
    at = walk(monkeypatch, 1)
    assert at.button(key="walk_prev").disabled
    at.button(key="walk_next").click().run()
    assert at.query_params["stop"] == "2" and STOPS[1].title in markdown(at)
    at.button(key="walk_prev").click().run()
    assert at.query_params["stop"] == "1"
    at = walk(monkeypatch, len(STOPS))
    assert at.button(key="walk_next").disabled


def test_the_pictures_are_the_models_own_numbers(monkeypatch, translator):
    r = translator.translate(SENTENCE)
    inside = translator.inside(SENTENCE)
    at = walk(monkeypatch, 2)  # token embedding x sqrt(D), position, their sum: the first layer's input
    rows = array(charts(at)[0]["data"][0]["z"])
    e = inside.embedding["src"]
    np.testing.assert_allclose(rows, np.stack([e["tokens"][1], e["positions"][1], inside.sublayers["enc"]["x"][0, 1]]),
                               atol=1e-6)
    at = walk(monkeypatch, 3)  # one head's weights: the row of encoder layer 1, head 1 of the translation's map
    weights = array(charts(at)[0]["data"][2]["x"])
    np.testing.assert_allclose(weights, r.encoder_attentions[0, 0, 1], atol=1e-6)
    at = walk(monkeypatch, 9)  # cross-attention: the last layer's mean map
    np.testing.assert_allclose(array(charts(at)[0]["data"][0]["z"]), r.cross_attentions[-1].mean(0), atol=1e-6)
    at = walk(monkeypatch, 10)  # the first step's candidates and their probabilities
    bars = charts(at)[0]["data"][0]
    np.testing.assert_allclose(array(bars["x"]), [p for _, p in r.steps[0].top], atol=1e-6)
    at = walk(monkeypatch, 1)  # the ids the model reads
    table = at.dataframe[0].value
    assert table["token"].tolist() == r.src_tokens and table["id"].tolist() == translator.source_ids(SENTENCE)[1]


@pytest.mark.parametrize("stop, view, layer", [(3, "inside", None), (4, "enc", 0), (9, "cross", 2),
                                               (10, "trace", None)])
def test_a_stop_opens_its_detailed_view(monkeypatch, stop, view, layer):
    at = walk(monkeypatch, stop)
    at.button(key="walk_open").click().run()
    assert at.session_state.view == view and not at.exception
    if layer is not None:
        assert at.query_params["layer"] == str(layer + 1) and at.query_params["view"] == view
