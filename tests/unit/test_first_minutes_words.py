"""The words the page's downloads and its Causes view use about themselves (model/contrast.py changed_words,
model/export.py NUMBERING): a pair's changed words counted from the pair, and the BertViz file saying how it numbers."""

import io

import numpy as np
import pytest

from model.contrast import changed_words, swapped
from model.export import NUMBERING, bertviz_npz, load_bertviz_npz, numbered


@pytest.mark.parametrize("clean, corrupt, n", [
    ("Ein Mann spielt Gitarre.", "Eine Frau spielt Gitarre.", 2),
    ("Zwei Hunde laufen.", "Drei Hunde laufen.", 1),
    ("Ein Hund läuft.", "Ein Hund läuft.", 0),
    ("Ein großer Hund läuft.", "Ein Hund läuft.", 1),  # a word left out
])
def test_a_pair_counts_the_words_it_changes(clean, corrupt, n):
    assert changed_words(clean, corrupt) == n


def test_the_automatic_pair_of_a_man_changes_two_words():
    clean = "Ein Mann spielt Gitarre auf der Straße."
    corrupt = swapped(clean)[0][1]  # what Causes puts in its box
    assert corrupt == "Eine Frau spielt Gitarre auf der Straße." and changed_words(clean, corrupt) == 2


def test_the_downloads_say_they_count_from_0(tiny_translator):
    assert numbered({"step": 0}) == {"numbering": NUMBERING, "step": 0}
    assert "count from 0" in NUMBERING and "the page's layer 1" in NUMBERING
    data = bertviz_npz(tiny_translator.translate("Ein Hund läuft."))
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        assert str(z["numbering"]) == NUMBERING
    assert "numbering" not in load_bertviz_npz(data)  # model_view's arguments only
