"""Tokenization, vocabulary order, batching and device choice."""

import gzip

import pytest
import torch

from model.data import bucket_batches, load_split, pad, read_lines
from model.device import DEVICE_NAMES, pick_device
from model.errors import InputError
from model.vocab import SPECIALS, Vocab, tokenize


def test_tokenize_lowercases_with_spacy_rules():
    assert tokenize("Ein Mann, der läuft.", "de") == ["ein", "mann", ",", "der", "läuft", "."]
    assert tokenize("  A man's dog.\n", "en") == ["a", "man", "'s", "dog", "."]


def test_vocab_order_specials_then_count_then_alphabet():
    v = Vocab.build([["b", "a", "c", "a"], ["b", "a", "d", "c", "e"]], min_freq=2)
    assert v.itos == list(SPECIALS) + ["a", "b", "c"]  # a:3; b,c:2 (alphabetical); d,e seen once
    assert v.encode(["a", "zzz"]) == [4, 0]
    assert v.decode([4, 5]) == ["a", "b"]


@pytest.mark.parametrize("itos,message", [
    (["<pad>", "<unk>", "<sos>", "<eos>"], "must start with"),
    (["<unk>", "<pad>", "<sos>", "<eos>", "a", "b", "a"], "duplicate tokens: \\['a'\\]"),
    (["<unk>", "<pad>", "<sos>", "<eos>", "a", 7], "must be strings, got 7"),
    ("<unk> <pad> <sos> <eos>", "a list of tokens")])
def test_vocab_rejects_a_wrong_list(itos, message):
    with pytest.raises(ValueError, match=message):  # raised, not asserted: vocabularies come from JSON
        Vocab(itos)


def test_missing_split_names_the_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.de.gz"):
        load_split(tmp_path, "train")


def test_read_lines_plain_and_gz(tmp_path):
    (tmp_path / "a.txt").write_text("eins\nzwei\n", encoding="utf-8")
    with gzip.open(tmp_path / "a.gz", "wt", encoding="utf-8") as f:
        f.write("eins\nzwei\n")
    assert read_lines(tmp_path / "a.txt") == read_lines(tmp_path / "a.gz") == ["eins", "zwei"]


def test_bucketing_covers_every_pair_once_and_groups_lengths():
    src = [[0] * n for n in [5, 1, 9, 3, 7, 2, 8, 4]]
    batches = bucket_batches(src, src, 3)
    assert sorted(i for b in batches for i in b) == list(range(8))
    assert [len(src[i]) for i in batches[0]] == [1, 2, 3]
    shuffled = bucket_batches(src, src, 3, seed=1)
    assert sorted(i for b in shuffled for i in b) == list(range(8))
    assert shuffled == bucket_batches(src, src, 3, seed=1)  # seeded: reproducible


def test_pad():
    assert pad([[2, 5, 3], [2, 3]]).tolist() == [[2, 5, 3], [2, 3, 1]]


def test_device_choice(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")
    assert pick_device("cpu") == torch.device("cpu")
    monkeypatch.delenv("TRANSFORMER_DEVICE")
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert pick_device().type == expected
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            pick_device("cuda")


@pytest.mark.parametrize("name", ["tpu", "CPU", "Cuda", "bogus:7", "cpu:0 ", "cuda:", "cuda:x", "meta", "", " cpu"])
def test_device_names_outside_the_list_are_input_errors(name):
    with pytest.raises(InputError) as e:
        pick_device(name)
    assert f"unknown device {name!r}" in str(e.value) and DEVICE_NAMES in str(e.value)


def test_device_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_DEVICE", "tpu")
    with pytest.raises(InputError, match=r"unknown device 'tpu' \(from \$TRANSFORMER_DEVICE\)"):
        pick_device()
    assert pick_device("cpu") == torch.device("cpu")  # an explicit argument wins over the environment
    monkeypatch.setenv("TRANSFORMER_DEVICE", "")  # empty: as if unset
    assert pick_device() == pick_device("auto")


def test_unavailable_devices_say_so():
    if not torch.cuda.is_available():
        for name in ("cuda", "cuda:0", "cuda:3"):
            with pytest.raises(InputError, match=f"'{name}' asked for, but CUDA is not available here"):
                pick_device(name)
    else:
        n = torch.cuda.device_count()
        assert pick_device("cuda:0") == torch.device("cuda", 0)
        with pytest.raises(InputError, match=f"only {n} CUDA devices"):
            pick_device(f"cuda:{n}")
    if not torch.backends.mps.is_available():
        with pytest.raises(InputError, match="MPS is not available here"):
            pick_device("mps")
