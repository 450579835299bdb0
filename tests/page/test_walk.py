"""The walk through the model: every stop by link, its pictures drawn from the model's own numbers, and its way
into the detailed views (AppTest on the shipped model: slow tier)."""

import numpy as np
import pytest

from conftest import array, charts, from_url, literal_head_divergence, maps_data, markdown, shown
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


@pytest.mark.parametrize("stop, view, layer", [(3, "inside", None), (4, "enc", "varied"), (9, "cross", 2),
                                               (10, "trace", None)])
def test_a_stop_opens_its_detailed_view(monkeypatch, translator, stop, view, layer):
    if layer == "varied":  # the multi-head stop's layer: where the heads differ most on this sentence
        layer = int(np.argmax(literal_head_divergence(translator.translate(SENTENCE).encoder_attentions)))
    at = walk(monkeypatch, stop)
    at.button(key="walk_open").click().run()
    assert at.session_state.view == view and not at.exception
    if layer is not None:
        assert at.query_params["layer"] == str(layer + 1) and at.query_params["view"] == view


def test_the_multi_head_stop_and_the_self_attention_views_open_where_the_heads_differ(monkeypatch, translator):
    """Stop 4 shows the encoder layer whose heads differ most on this sentence (the mean Jensen-Shannon divergence
    between heads' rows, by the literal loops), names it and the measure, and the encoder and decoder views open on
    their own such layer; on the shipped model that is never the first layer, whose heads are near-uniform."""
    r = translator.translate(SENTENCE)
    enc, dec = literal_head_divergence(r.encoder_attentions), literal_head_divergence(r.decoder_attentions, 1)
    layer = int(np.argmax(enc))
    assert layer != 0 and enc[0] < 0.1 < enc[layer]  # the measured reason for the choice
    at = walk(monkeypatch, 4)
    said = " ".join(c.value for c in at.caption)
    assert f"Here encoder layer {layer + 1}, the layer whose heads differ most" in said
    assert f"{enc[layer]:.2f} bits" in said and f"{enc[0]:.2f} in layer 1" in said
    figure = charts(at)[0]
    assert figure["layout"]["title"]["text"].startswith(f"Encoder layer {layer + 1}: all 8 heads")
    assert figure["layout"]["yaxis"]["ticktext"] == [f"layer {layer + 1}"]  # the tiles' row names the model's layer
    for kind, measured in (("enc", enc), ("dec", dec)):
        at = from_url(monkeypatch, s=SENTENCE, view=kind)
        assert not at.exception
        data = maps_data(at)[0]
        assert data["pick"]["layer"] == int(np.argmax(measured)), kind
