"""The Causes view on the page (slow tier: AppTest and Chromium on the shipped model): the maps are model/patch.py's
own effects read back from the charts, the link keeps the second sentence and the direction, a contrast pair picked
becomes the page's sentences, and a second sentence of another length is a plain warning."""

import numpy as np
import pytest

from conftest import array, charts, from_url, markdown, shown
from model import patch as P
from views.patch import DIR_KEY, PAIR_KEY, contrast_pairs

pytestmark = pytest.mark.slow

CLEAN, CORRUPT = "Zwei Hunde rennen durch den Schnee.", "Zwei Katzen rennen durch den Schnee."


def chart(at, title: str) -> dict:
    found = [c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith(title)]
    assert found, [c["layout"].get("title", {}).get("text") for c in charts(at)]
    return found[0]


@pytest.mark.parametrize("direction", ["denoising", "noising"])
def test_the_maps_are_the_librarys_effects(monkeypatch, translator, direction):
    at = from_url(monkeypatch, s=CLEAN, view="patch", s2=CORRUPT, **({"dir": direction} if direction == "noising"
                                                                       else {}))
    assert not at.exception and not at.error and not at.warning, (at.exception, [e.value for e in at.error])
    assert at.session_state[DIR_KEY] == direction
    assert dict(at.query_params) == {"s": CLEAN, "view": "patch", "s2": CORRUPT,
                                     **({"dir": direction} if direction == "noising" else {})}
    p = P.patch(translator, CLEAN, CORRUPT)  # the second route: the library called here
    np.testing.assert_allclose(array(chart(at, "Encoder: the residual")["data"][0]["z"]), p.encoder[direction],
                               atol=1e-4)
    np.testing.assert_allclose(array(chart(at, "Decoder: the residual")["data"][0]["z"]), p.decoder[direction],
                               atol=1e-4)
    np.testing.assert_allclose(array(chart(at, "Cross-attention heads")["data"][0]["z"]),
                               p.heads[direction]["cross"], atol=1e-4)
    assert f"**Where the difference travels:** {p.summary()}" in shown(markdown(at))
    code = "\n".join(c.value for c in at.code)
    assert f"python -m model.patch --clean '{CLEAN}' --corrupt '{CORRUPT}'" in code


def test_a_sentence_with_a_swap_gets_one_suggested_and_another_length_is_a_warning(monkeypatch):
    at = from_url(monkeypatch, s="Ein Mann spielt Gitarre auf der Straße.", view="patch")
    assert at.session_state.s2 == "Eine Frau spielt Gitarre auf der Straße."  # model/contrast.py's first swap
    assert not at.exception and not at.error
    at = from_url(monkeypatch, s=CLEAN, view="patch", s2="Zwei kleine Katzen rennen durch den Schnee.")
    assert not at.exception and not at.error
    assert any("the same number of tokens" in shown(w.value) for w in at.warning)


def test_a_contrast_pair_picked_becomes_the_pages_two_sentences(monkeypatch):
    at = from_url(monkeypatch, s=CLEAN, view="patch", s2=CORRUPT)
    pair = contrast_pairs()[7]
    at.selectbox(key=PAIR_KEY).select_index(7).run()
    assert not at.exception and not at.error
    assert at.session_state.sentence == pair["clean"] and at.session_state.s2 == pair["corrupt"]
    assert dict(at.query_params)["s"] == pair["clean"] and dict(at.query_params)["s2"] == pair["corrupt"]
