"""Long sentences on the shipped models (model/familiarity.py): the lengths in familiarity.json are the training
split's as the model reads it, and the verdict's calibration on Multi30k's validation and test2016 sets."""

import json

import pytest

from conftest import CHECKPOINT, ROOT
from model.data import default_data_dir, load_split
from model.familiarity import THRESHOLDS_FILE, Index, measure

FOLDERS = [CHECKPOINT, CHECKPOINT / "sinusoidal"]
EVERYDAY = (ROOT / "tests/data/everyday.de.txt").read_text(encoding="utf-8").splitlines()
# In-domain words, far longer than the photo descriptions: the learned model is sure of it and invents an ending.
LONG = ("Eine Gruppe von jungen Männern in roten Trikots spielt auf einem großen grünen Feld Fußball, während "
        "viele Zuschauer am Rand stehen und laut jubeln, weil ihre Mannschaft gerade ein Tor geschossen hat.")


@pytest.mark.parametrize("folder", FOLDERS, ids=["learned", "sinusoidal"])
def test_the_shipped_lengths_are_the_training_splits_and_the_limit_is_their_quantile(folder):
    from model.familiarity import LONGER, length_quantile

    t = json.loads((folder / THRESHOLDS_FILE).read_text())
    counts = {int(n): c for n, c in t["length"]["counts"].items()}
    table = json.loads((ROOT / "assets/train_lengths.json").read_text())["source"]  # model.train_lengths' count
    assert counts == {int(n): c for n, c in table.items()} and sum(counts.values()) == t["training_sentences"]
    assert t["length"]["longest_usual"] == length_quantile(counts, LONGER) == 35


@pytest.mark.slow
@pytest.mark.skipif(default_data_dir() is None, reason="no Multi30k data")
@pytest.mark.parametrize("folder", FOLDERS, ids=["learned", "sinusoidal"])
def test_in_domain_sentences_pass_everyday_german_and_the_long_sentence_do_not(shipped_models, folder):
    """At least 95% of the validation sources and of the test2016 sources (1,014 and 1,000) get no note; at least
    90% of the everyday German sentences do; the long sentence is unusual, and its length is the reason given."""
    translator, index = shipped_models(folder), Index(folder)

    def verdicts(sentences):
        return [measure(translator, r, index) for r in translator.translate_batch(sentences, with_maps=False)]

    for split in ("val", "test"):
        sources = load_split(default_data_dir(), split)[0]
        familiar = sum(f.verdict == "familiar" for f in verdicts(sources))
        assert familiar >= 0.95 * len(sources), (split, familiar / len(sources))
    flagged = sum(f.verdict != "familiar" for f in verdicts(EVERYDAY))
    assert flagged >= 0.9 * len(EVERYDAY), flagged / len(EVERYDAY)
    f = measure(translator, translator.translate(LONG), index)
    assert f.verdict == "unusual" and f.length == 37
    said = "it is longer than 99.9% of the training sentences: 37 tokens"
    assert any(r.startswith(said) for r in f.reasons), f.reasons
