"""Familiarity (model/familiarity.py): the training index, the measures, the verdict, and the page's note."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import CHECKPOINT, ROOT, from_url, shown
from model.data import default_data_dir, load_split
from model.evidence import DIMS, TRAIN_TEXTS
from model.familiarity import (INDEX_FILE, MEASURES, THRESHOLDS_FILE, Index, language, measure, score,
                               sentence_vectors, tail, thresholds_from)
from model.translator import Translator

DATA = ROOT / "tests/data"
EVERYDAY = (DATA / "everyday.de.txt").read_text(encoding="utf-8").splitlines()
NOT_GERMAN = [line.split("\t") for line in (DATA / "not_german.txt").read_text(encoding="utf-8").splitlines()]
FOLDERS = [CHECKPOINT, CHECKPOINT / "sinusoidal"]


def lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()


@pytest.fixture(scope="module")
def models():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    return {str(f): (Translator.load(str(f), "cpu"), Index(f)) for f in FOLDERS}


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


def test_tails_and_the_fisher_score_have_their_known_values():
    ref = [0.0, 0.0, 0.1, 0.2, 0.5]
    assert tail("unknown_share", 0.0, ref) == 1.0  # no unknown word: as familiar as can be
    assert tail("unknown_share", 0.2, ref) == pytest.approx(0.4)
    assert tail("unknown_share", 0.9, ref) == pytest.approx(1 / 6)  # beyond everything: 1/(N+1)
    assert tail("mean_logprob", -5.0, [-1.0, -0.5, -0.1]) == pytest.approx(1 / 4)  # lower is stranger
    assert tail("mean_logprob", -0.5, [-1.0, -0.5, -0.1]) == pytest.approx(2 / 3)
    assert score({m: 1.0 for m in MEASURES}) == 0.0
    assert score({"a": 0.1, "b": 0.5}) == pytest.approx(-2 * (np.log(0.1) + np.log(0.5)))
    rng = np.random.default_rng(0)
    values = {m: rng.random(2000).tolist() for m in MEASURES}
    t = thresholds_from(values)
    scores = [score({m: tail(m, values[m][i], values[m]) for m in MEASURES}) for i in range(2000)]
    assert np.mean(np.asarray(scores) > t["score"]["unusual"]) == pytest.approx(0.05, abs=0.002)


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
    """200 test2016 sentences (thresholds were set on validation data only): at least 90% familiar. At least 30
    everyday German sentences written for this test (weather, trains, work, school, news): at least 90% not."""
    translator, index = models[folder]
    test = load_split(default_data_dir(), "test")[0][500:700]
    verdicts = [measure(translator, r, index).verdict for r in translator.translate_batch(test, with_maps=False)]
    assert verdicts.count("familiar") >= 0.9 * len(test), verdicts.count("familiar")
    assert len(EVERYDAY) >= 30
    verdicts = [measure(translator, r, index).verdict for r in translator.translate_batch(EVERYDAY, with_maps=False)]
    flagged = [s for s, v in zip(EVERYDAY, verdicts) if v != "familiar"]
    assert len(flagged) >= 0.9 * len(EVERYDAY), set(EVERYDAY) - set(flagged)


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
def test_an_output_stopped_at_the_length_limit_says_so(monkeypatch, model):
    """Four test sentences in one: the sinusoidal model runs into the 50-token limit without <eos> (the learned one
    ends): the page says the translation is cut exactly when the model's own output has no <eos>."""
    from model.translator import MAX_OUTPUT

    sentence = " ".join(load_split(default_data_dir(), "test")[0][16:20])
    r = Translator.load(str(CHECKPOINT / "sinusoidal") if model == "sinusoidal" else None, "cpu").translate(sentence)
    cut = r.steps[-1].token != "<eos>"
    assert cut == (model == "sinusoidal") and (len(r.steps) == MAX_OUTPUT) == cut
    at = from_url(monkeypatch, s=sentence, **({"model": model} if model == "sinusoidal" else {}))
    assert not at.exception
    said = [w.value for w in at.warning if "limit of 50 output tokens" in w.value]
    assert len(said) == cut
