"""Long sentences on the page (views/familiarity.py): a sentence far longer than the photo descriptions gets the
familiarity note, with its length as the reason."""

import pytest

from conftest import from_url, shown
from integration.test_long_sentences import LONG


@pytest.mark.slow
def test_the_long_sentence_gets_the_note_with_its_length_as_the_reason(monkeypatch):
    at = from_url(monkeypatch, s=LONG)
    assert not at.exception and not at.error
    notes = [shown(n.value) for n in at.info if "unusual for the model" in n.value]
    assert len(notes) == 1, [n.value for n in at.info]
    assert ("it is longer than 99.9% of the training sentences: 37 tokens, <sos> and <eos> included, where half of "
            "them have 14 or fewer") in notes[0]
    assert len([b for b in at.button if b.key and b.key.startswith("neighbour_")]) == 3
