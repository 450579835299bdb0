"""Decoder self-attention's key axis on the page: the decoder's inputs (<sos>, then every output token but the last),
not the rows' "<sos> → two" (the labels themselves: tests/unit/test_labels_decoder.py)."""

import pytest

from conftest import from_url, maps_data
from viz.labels import positioned

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."


@pytest.mark.slow
def test_the_decoder_self_attention_view_labels_its_keys_with_the_inputs(monkeypatch, translator):
    r = translator.translate(SENTENCE)
    at = from_url(monkeypatch, s=SENTENCE, view="dec")
    assert not at.exception
    panel = maps_data(at)[0]["panels"][0]
    inputs = r.tgt_tokens[:3]  # <sos>, then the first outputs
    assert panel["labels"]["k"][:3] == positioned(inputs) and not any("→" in k for k in panel["labels"]["k"])
    assert panel["labels"]["q"][:2] == positioned([f"{inputs[0]} → {inputs[1]}", f"{inputs[1]} → {inputs[2]}"])
    assert panel["csv"]["cols"][:3] == [f'{i},"{t}"' for i, t in enumerate(inputs)]  # the model's own tokens
