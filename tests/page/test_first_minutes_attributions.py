"""The Attributions view on the page opens on the method the shipped faithfulness table trusts, and says why; a link
naming a method still wins."""

import json

import pytest

from conftest import CHECKPOINT, from_url, shown
from model.faithfulness import Table
from views.attributions import METHOD_KEY, trusted

pytestmark = pytest.mark.slow

S = "Ein Hund läuft."


def test_the_view_opens_on_the_method_the_faithfulness_table_trusts(monkeypatch):
    shipped = Table.from_json(json.loads((CHECKPOINT / "faithfulness.json").read_text()))
    best = trusted(shipped)[0]
    assert best != "input_x_gradient"  # the method the verdict calls neither faithful nor plausible
    at = from_url(monkeypatch, s=S, view="attribute")
    assert not at.exception and not at.error
    assert at.session_state[METHOD_KEY] == best and dict(at.query_params)["method"] == best
    said = [shown(c.value) for c in at.caption if "faithfulness table finds it faithful and plausible" in c.value]
    assert len(said) == 1 and f"on {shipped.n_sentences} sentences of test_2016_flickr" in said[0], said


def test_a_link_naming_a_method_wins(monkeypatch):
    at = from_url(monkeypatch, s=S, view="attribute", method="gradient")
    assert not at.exception and not at.error
    assert at.session_state[METHOD_KEY] == "gradient" and dict(at.query_params)["method"] == "gradient"
    assert not [c.value for c in at.caption if "the shipped faithfulness table finds" in c.value]
