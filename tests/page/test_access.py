"""Keyboard and screen-reader access: every map's "show as a table" alternative (views.widgets.map_table), the
decoding trace stepped with the arrow keys, a visible focus, and axe-core over every view in both themes.

axe-core comes inside the axe-playwright-python package (its axe.min.js is injected into the page: no network).
"""

import numpy as np
import pytest

import viz
from conftest import decoded, from_url, maps_data, show_view
from views.widgets import table_labels


@pytest.mark.slow
def test_the_map_table_holds_the_map_and_names_hostile_tokens_as_typed(monkeypatch, translator):
    """The attention views' tables are made in the browser (views/maps.js, as text nodes: no markup) from the
    values and names the page sends: every map to 4 decimals, the names with positions, as the model reads them."""
    hostile = "Zwei **Männer** <b>spielen</b> $x$ Fußball."
    at = from_url(monkeypatch, s=hostile, view="dec", layer="2", head="3")
    assert not at.table and not at.exception
    panel = maps_data(at)[0]["panels"][0]
    r = translator.translate(hostile)
    weights = r.decoder_attentions[1, 2]  # layer 2, head 3
    np.testing.assert_allclose(decoded(panel["maps"])[1, 2], weights, atol=5.01e-5)
    assert panel["causal"]  # the browser writes "masked" above the diagonal, as the chart greys it
    steps = table_labels(viz.predicting(r.tgt_tokens, [s.token for s in r.steps]))
    assert panel["table"]["rows"] == steps  # a row: what it read and predicts; a column: the input it reads
    assert panel["table"]["cols"] == table_labels(r.tgt_tokens)
    show_view(at, "enc")  # the source's names as typed: the browser sets them as text, never markup
    assert maps_data(at)[0]["panels"][0]["table"]["cols"] == table_labels(r.src_tokens, r.src_unknown)
    assert any("<" in name or "*" in name for name in table_labels(r.src_tokens))
    assert panel["titles"][1][2] + panel["table"]["axes"] == (
        "Decoder self-attention, layer 2, head 3, weights; rows: English steps (the token read → the token chosen), "
        "columns: English tokens so far (keys)")
