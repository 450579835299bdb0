"""Familiarity (model/familiarity.py): the training index, the measures, the verdict, and the page's note."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import CHECKPOINT, ROOT
from model.data import default_data_dir, load_split
from model.evidence import DIMS, TRAIN_TEXTS
from model.familiarity import INDEX_FILE, MEASURES, THRESHOLDS_FILE, Index, language, measure, sentence_vectors

DATA = ROOT / "tests/data"
EVERYDAY = (DATA / "everyday.de.txt").read_text(encoding="utf-8").splitlines()
NOT_GERMAN = [line.split("\t") for line in (DATA / "not_german.txt").read_text(encoding="utf-8").splitlines()]
FOLDERS = [CHECKPOINT, CHECKPOINT / "sinusoidal"]


def lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()


@pytest.fixture(scope="module")
def models(shipped_models):
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    return {str(f): (shipped_models(f), Index(f)) for f in FOLDERS}


def test_the_shipped_index_and_thresholds_are_small_and_complete():
    train = {lang: lines(p) for lang, p in TRAIN_TEXTS.items()}
    assert len(train["de"]) == len(train["en"]) == 29_000
    if default_data_dir():  # the shipped copy is the data set's training split
        assert train["de"] == load_split(default_data_dir(), "train")[0]
    for folder in FOLDERS:
        with np.load(folder / INDEX_FILE) as f:
            v = f["vectors"]
        assert v.shape == (29_000, DIMS) and v.dtype == np.int8
        assert (folder / INDEX_FILE).stat().st_size < 2_000_000  # 1.9 MB of int8, compressed
        norms = np.linalg.norm(v.astype(np.float32) / 127, axis=1)
        assert np.allclose(norms, 1, atol=0.02)  # unit rows, up to int8 rounding
        t = json.loads((folder / THRESHOLDS_FILE).read_text())
        assert all(len(t["values"][m]) == t["validation_sentences"] == 1014 for m in MEASURES)
        assert 0 < t["score"]["unusual"] < t["score"]["unfamiliar"]


@pytest.mark.parametrize("folder", [str(f) for f in FOLDERS])
def test_a_training_sentence_is_its_own_nearest_neighbour(models, folder):
    translator, index = models[folder]
    de = index.texts()["de"]
    picks = [0, 1, 4_321, 17_000, 28_999]
    vectors = sentence_vectors(translator, [de[i] for i in picks])
    for i, v in zip(picks, vectors):
        first = index.nearest(v, 3)[0]
        assert de[first.line] == de[i] and first.distance < 1e-3  # 0 up to the int8 rounding of the index


def test_sentence_vectors_are_mean_pooled_last_encoder_states(models):
    """The batched, padded route equals one sentence alone, averaged by hand over its positions."""
    import torch

    translator, _ = models[str(CHECKPOINT)]
    sentences = ["Ein Hund läuft.", "Zwei Männer spielen Fußball auf einer großen grünen Wiese."]
    batched = sentence_vectors(translator, sentences)
    for s, v in zip(sentences, batched):
        ids = torch.tensor([translator.source_ids(s)[1]])
        memory, _ = translator.model.encode(ids)
        mean = memory[0].mean(0).detach().numpy()
        assert np.allclose(v, mean / np.linalg.norm(mean), atol=1e-5)


@pytest.mark.skipif(default_data_dir() is None, reason="no Multi30k data")
def test_the_language_check_names_every_validation_sentence_right(models):
    """Data no threshold of it was set on: every German validation source is German, every English reference is
    not (and is named English)."""
    from model.vocab import tokenize

    translator, _ = models[str(CHECKPOINT)]
    de, en = load_split(default_data_dir(), "val")
    name = lambda s: language(tokenize(s, "de"), translator.src_vocab, translator.tgt_vocab)[0]  # noqa: E731
    assert [name(s) for s in de].count("German") == len(de)
    assert [name(s) for s in en].count("English") == len(en)


@pytest.mark.parametrize("lang, sentence", NOT_GERMAN)
def test_english_and_other_languages_are_named_not_german(models, lang, sentence):
    translator, index = models[str(CHECKPOINT)]
    f = measure(translator, translator.translate(sentence), index)
    assert f.language != "German" and f.verdict == "unfamiliar"
    assert any("does not look German" in r for r in f.reasons)
    if lang == "en" and f.language_counts["english_marks"] >= 3:
        assert f.language == "English"


@pytest.mark.slow
@pytest.mark.skipif(default_data_dir() is None, reason="no Multi30k data")
@pytest.mark.parametrize("folder", [str(f) for f in FOLDERS])
def test_held_out_photo_descriptions_are_familiar_and_everyday_german_is_not(models, folder):
    """200 test2016 sentences (the thresholds keep 95% of validation and of test2016 each without a note): at least 90% familiar. At least 30
    everyday German sentences written for this test (weather, trains, work, school, news): at least 90% not."""
    translator, index = models[folder]
    test = load_split(default_data_dir(), "test")[0][500:700]
    verdicts = [measure(translator, r, index).verdict for r in translator.translate_batch(test, with_maps=False)]
    assert verdicts.count("familiar") >= 0.9 * len(test), verdicts.count("familiar")
    assert len(EVERYDAY) >= 30
    verdicts = [measure(translator, r, index).verdict for r in translator.translate_batch(EVERYDAY, with_maps=False)]
    flagged = [s for s, v in zip(EVERYDAY, verdicts) if v != "familiar"]
    assert len(flagged) >= 0.9 * len(EVERYDAY), set(EVERYDAY) - set(flagged)
