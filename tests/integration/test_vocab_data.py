"""Tokenization, vocabulary order, batching and device choice."""

import pytest

from model.data import load_split
from model.vocab import Vocab, tokenize


@pytest.mark.slow
def test_real_vocabulary_sizes_and_order(data_dir):
    """docs/contract.md: 7,853 German and 5,893 English tokens from the training split."""
    de, en = load_split(data_dir, "train")
    assert len(de) == len(en) == 29000
    vde = Vocab.build(tokenize(s, "de") for s in de)
    ven = Vocab.build(tokenize(s, "en") for s in en)
    assert (len(vde), len(ven)) == (7853, 5893)
    assert vde.itos[4:9] == [".", "ein", "einem", "in", "eine"]
    assert ven.itos[4:9] == ["a", ".", "in", "the", "on"]


@pytest.mark.slow
def test_shipped_vocabulary_equals_a_rebuild(data_dir, translator):
    de, en = load_split(data_dir, "train")
    assert translator.src_vocab.itos == Vocab.build(tokenize(s, "de") for s in de).itos
    assert translator.tgt_vocab.itos == Vocab.build(tokenize(s, "en") for s in en).itos
