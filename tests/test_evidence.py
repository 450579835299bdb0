"""Training evidence (model/evidence.py, views/evidence.py): the lexical table, the step index, and the view."""

import gzip
import random

import numpy as np
import pytest

from conftest import CHECKPOINT, from_url, shown
from model.evidence import (DIMS, LEXICON, STEP_FILE, TRAIN_TEXTS, Lexicon, StepIndex, decoder_states, lexicon_table,
                            step_lines, step_state)
from model.silver import TRAIN_LINKS
from model.translator import Translator
from model.vocab import SOS_ID, tokenize


def test_the_lexical_table_of_a_small_corpus_is_its_known_counts():
    de = [["ein", "hund", "und", "ein", "ball"], ["der", "hund"], ["ein", "ball"]]
    en = [["a", "dog", "and", "a", "ball"], ["the", "dog"], ["a", "ball"]]
    links = [{(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)}, {(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 0)}]
    t = lexicon_table(de, en, links)
    assert t["ein"] == [2, 3, [("a", 3)], [0, 2]]
    assert t["hund"] == [2, 2, [("dog", 2)], [0, 1]]
    assert t["ball"] == [2, 2, [("ball", 2), ("a", 1)], [0, 2]]  # most linked first, then alphabetical
    assert t["der"] == [1, 1, [("the", 1)], [1]]


@pytest.fixture(scope="module")
def training():
    texts = {lang: gzip.decompress(p.read_bytes()).decode("utf-8").splitlines() for lang, p in TRAIN_TEXTS.items()}
    links = [{tuple(map(int, x.split("-"))) for x in line.split()}
             for line in gzip.decompress(TRAIN_LINKS.read_bytes()).decode().splitlines()]
    assert len(links) == len(texts["de"]) == 29_000
    return texts, links


def test_the_shipped_lexicon_equals_a_recount_of_the_shipped_links(training):
    """For 12 words drawn at random (and two named ones), every sentence that may hold the word is tokenized again
    and its links recounted: the sentences, occurrences, linked English words with counts and first lines are
    the table's."""
    texts, links = training
    table = Lexicon().table
    assert LEXICON.stat().st_size < 500_000 and len(table) > 18_000
    rng = random.Random(0)
    words = ["zug", "zeit"] + rng.sample(sorted(w for w, e in table.items() if 3 <= e[0] <= 40 and w.isalpha()), 12)
    for word in words:
        lines = [i for i, s in enumerate(texts["de"]) if word in s.lower()]  # a superset of the lines holding it
        de = [tokenize(texts["de"][i], "de") for i in lines]
        en = [tokenize(texts["en"][i], "en") for i in lines]
        recount = lexicon_table(de, en, [links[i] for i in lines])[word]
        assert table[word][:3] == [recount[0], recount[1], [list(a) for a in recount[2]]], word
        assert table[word][3] == [lines[j] for j in recount[3]], word


@pytest.fixture(scope="module")
def learned():
    if not (CHECKPOINT / STEP_FILE).is_file():
        pytest.skip("no shipped step index")
    return Translator.load(None, "cpu"), StepIndex(CHECKPOINT)


def test_the_step_index_is_small_and_a_training_step_finds_itself(learned, training):
    translator, index = learned
    texts, _ = training
    assert index.vectors.shape[1] == DIMS and index.basis.shape == (translator.cfg.d_model, DIMS)
    assert (CHECKPOINT / STEP_FILE).stat().st_size < 6_000_000
    assert sorted(set(index.line.tolist())) == step_lines(29_000)
    for line in (0, 5, 24_995):
        src = [SOS_ID, *translator.src_vocab.encode(tokenize(texts["de"][line], "de")), 3]
        tgt = [SOS_ID, *translator.tgt_vocab.encode(tokenize(texts["en"][line], "en"))]
        states = decoder_states(translator, [src], [tgt])[0]
        for step in (0, 2):
            row = int(np.flatnonzero((index.line == line) & (index.step == step))[0])
            own = 1 - float(index.vectors[row].numpy() @ index.project(states[step][None])[0])
            first = index.nearest(states[step], texts, k=3)[0]
            assert own < 0.01 and first.distance <= own + 1e-4  # itself, up to int8 rounding; nothing nearer (the
            # distances shown are rounded to 4 places)


def test_a_steps_state_is_the_teacher_forced_state_of_the_greedy_output(learned):
    """step_state (one teacher-forced pass) equals the state greedy decoding had, read by a hook on the output
    layer during the decoding itself."""
    translator, _ = learned
    result = translator.translate("Ein Hund rennt durch den Schnee.")
    seen = []
    hook = translator.model.generator.register_forward_hook(lambda m, i, o: seen.append(i[0][0, -1].detach().numpy()))
    try:
        translator.translate("Ein Hund rennt durch den Schnee.", top_k=1)
    finally:
        hook.remove()
    for t in range(len(result.steps)):
        assert np.allclose(step_state(translator, result, t), seen[t], atol=1e-4)


@pytest.mark.slow
def test_the_evidence_view_says_where_a_word_and_a_step_were_learned(monkeypatch):
    at = from_url(monkeypatch, s="Der Zug nach Berlin hat Verspätung.", view="evidence", word="2", step="2")
    assert not at.exception and not at.error
    text = shown("\n".join(m.value for m in at.markdown))
    assert "“zug” occurs in **92** of the 29,000 training sentences" in text
    assert "<mark>Zug</mark>" in text  # a training pair with the word marked
    frames = [d.value for d in at.dataframe]
    assert frames[0]["English word"].iloc[0] == "train"
    assert len(frames[1]) == 5 and at.select_slider(key="evidence_step").value == 1
    assert dict(at.query_params) == {"s": "Der Zug nach Berlin hat Verspätung.", "view": "evidence", "word": "2",
                                     "step": "2"}
    at.segmented_control(key="evidence_word").set_value(6).run()  # "verspätung": never in training
    assert "never occurs in the training data" in shown("\n".join(m.value for m in at.markdown))
