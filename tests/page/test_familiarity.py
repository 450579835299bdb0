"""Familiarity (model/familiarity.py): the training index, the measures, the verdict, and the page's note."""

import pytest

from conftest import CHECKPOINT, from_url, shown
from model.data import default_data_dir, load_split


@pytest.mark.slow
def test_the_page_says_when_a_sentence_is_unlike_the_training_data(monkeypatch):
    """An everyday sentence gets the note with the nearest training sentences as buttons; one picked is
    translated; a photo description gets no note."""
    at = from_url(monkeypatch, s="Ich habe heute keine Zeit.")
    assert not at.exception and not at.error
    note = shown(at.warning[0].value)
    assert "unlike anything the model learned from" in note and "29,000 short descriptions of photos" in note
    buttons = [b for b in at.button if b.key and b.key.startswith("neighbour_")]
    assert len(buttons) == 3
    picked = shown(buttons[0].label)
    buttons[0].click().run()
    assert not at.exception and at.session_state.sentence == picked
    at = from_url(monkeypatch, s="Ein Typ arbeitet an einem Gebäude.")  # a built-in example from test2016
    assert not at.exception and not at.warning and not at.info
    assert not [b for b in at.button if b.key and b.key.startswith("neighbour_")]


@pytest.mark.slow
@pytest.mark.skipif(default_data_dir() is None, reason="no Multi30k data")
@pytest.mark.parametrize("model", ["learned", "sinusoidal"])
def test_an_output_stopped_at_the_length_limit_says_so(monkeypatch, model, shipped_models):
    """Four test sentences in one: the sinusoidal model runs into the 50-token limit without <eos> (the learned one
    ends): the page says the translation is cut exactly when the model's own output has no <eos>."""
    from model.translator import MAX_OUTPUT

    sentence = " ".join(load_split(default_data_dir(), "test")[0][16:20])
    r = shipped_models(CHECKPOINT / "sinusoidal" if model == "sinusoidal" else CHECKPOINT).translate(sentence)
    cut = r.steps[-1].token != "<eos>"
    assert cut == (model == "sinusoidal") and (len(r.steps) == MAX_OUTPUT) == cut
    at = from_url(monkeypatch, s=sentence, **({"model": model} if model == "sinusoidal" else {}))
    assert not at.exception
    said = [w.value for w in at.warning if "limit of 50 output tokens" in w.value]
    assert len(said) == cut
