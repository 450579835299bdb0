"""Training evidence (model/evidence.py, views/evidence.py): the lexical table, the step index, and the view."""

import pytest

from conftest import from_url, shown
from views.widgets import highlight


@pytest.mark.slow
def test_the_evidence_view_says_where_a_word_and_a_step_were_learned(monkeypatch):
    at = from_url(monkeypatch, s="Der Zug nach Berlin hat Verspätung.", view="evidence", word="2", step="2")
    assert not at.exception and not at.error
    text = shown("\n".join(m.value for m in at.markdown))
    assert "“zug” occurs in **92** of the 29,000 training sentences" in text
    assert highlight("Zug") in text  # a training pair with the word marked
    frames = [d.value for d in at.dataframe]
    assert frames[0]["English word"].iloc[0] == "train"
    assert len(frames[1]) == 5 and at.select_slider(key="evidence_step").value == 1
    assert dict(at.query_params) == {"s": "Der Zug nach Berlin hat Verspätung.", "view": "evidence", "word": "2",
                                     "step": "2"}
    at.segmented_control(key="evidence_word").set_value(6).run()  # "verspätung": never in training
    assert "never occurs in the training data" in shown("\n".join(m.value for m in at.markdown))
