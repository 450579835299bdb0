"""Long sentences (model/familiarity.py): the training sources' lengths are a measure of their own, so that a
sentence far longer than the photo descriptions is unusual, however sure the model is of its words."""

import gzip
import json

import pytest

from conftest import GERMAN, seeded_translator, write_multi30k
from model.familiarity import Index, build, length_quantile, measure, shorter_share
from model.vocab import Vocab


def test_length_quantiles_and_shares_have_their_known_values():
    counts = {5: 2, 6: 5, 7: 2, 9: 1}  # ten sentences, by the positions they take
    assert [length_quantile(counts, q) for q in (0.1, 0.2, 0.5, 0.7, 0.71, 0.9, 0.999, 1.0)] == [5, 5, 6, 6, 7, 7, 9, 9]
    assert [shorter_share(counts, n) for n in (5, 6, 7, 8, 9, 10, 40)] == pytest.approx([0, 0.2, 0.7, 0.9, 0.9, 1, 1])


PAIRS = [("Ein Hund läuft im Park.", "A dog runs in the park."),  # 6 tokens: 8 positions with <sos> and <eos>
         ("Zwei Männer laufen.", "Two men run."),  # 6 positions
         ("Ein Hund.", "A dog.")] * 4  # 5 positions


def tiny_data(folder):
    """Multi30k's three splits, each the pairs above."""
    write_multi30k(folder, PAIRS)
    for lang, col in (("de", 0), ("en", 1)):
        with gzip.open(folder / f"test_2016_flickr.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(p[col] for p in PAIRS) + "\n")
    return folder


def test_the_tool_writes_the_training_lengths_and_a_longer_sentence_is_unusual_for_it(tmp_path):
    """A tiny index built by the tool: the training lengths counted as the model reads them, the longest usual
    length their LONGER quantile; a sentence one position past it is unusual and says so in plain words."""
    translator = seeded_translator()
    assert translator.src_vocab.itos == Vocab(GERMAN).itos
    folder = tmp_path / "ckpt"
    folder.mkdir()
    written = build(translator, folder, tiny_data(tmp_path / "data"), log=lambda *a: None)
    assert written["length"] == {"counts": {5: 4, 6: 4, 8: 4}, "longest_usual": 8}  # LONGER's quantile of the 12
    index = Index(folder)
    assert index.lengths == {5: 4, 6: 4, 8: 4} and index.thresholds["length"]["longest_usual"] == 8

    usual = measure(translator, translator.translate("Ein Hund läuft im Park."), index)
    assert (usual.length, usual.length_percentile) == (8, pytest.approx(100 * 8 / 12, abs=0.01))
    assert not any("longer than" in r for r in usual.reasons)

    longer = measure(translator, translator.translate("Ein Hund läuft im großen Park."), index)  # 9 positions
    assert (longer.length, longer.length_percentile) == (9, 100.0) and longer.verdict != "familiar"
    assert ("it is longer than 100% of the training sentences: 9 tokens, <sos> and <eos> included, where half of "
            "them have 6 or fewer") in longer.reasons


def test_an_index_made_before_the_length_measure_says_how_to_rebuild_it(tmp_path):
    from model.errors import InputError

    translator = seeded_translator()
    folder = tmp_path / "ckpt"
    folder.mkdir()
    build(translator, folder, tiny_data(tmp_path / "data"), log=lambda *a: None)
    t = json.loads((folder / "familiarity.json").read_text())
    del t["length"]
    (folder / "familiarity.json").write_text(json.dumps(t))
    with pytest.raises(InputError, match="python -m model.familiarity --checkpoint"):
        Index(folder)
