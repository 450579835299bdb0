"""Metrics from per-sentence statistics equal the corpus metrics; the paired bootstrap is exact where it can be."""

import random

import numpy as np
import pytest
import sacrebleu

from conftest import GERMAN, seeded_translator
from model.data import encode_pairs
from model.head_importance import head_importance
from model.metrics import (bleu, bleu_from_stats, bleu_stats, corpus_score, evaluate_loss, loss_stats,
                           paired_bootstraps, score)


@pytest.fixture(scope="module")
def tr():
    return seeded_translator()


@pytest.fixture(scope="module")
def corpus(tr):
    """24 German lines of tiny-vocabulary words; the references are the unmasked model's own outputs,
    so the baseline scores high and switching a head off shows as a drop."""
    rng = random.Random(0)
    src = [" ".join(rng.choice(GERMAN[4:]) for _ in range(rng.randint(2, 8))) for _ in range(24)]
    ref = [r.text for r in tr.translate_batch(src, with_maps=False)]
    return src, ref


def test_bleu_from_sentence_statistics_equals_corpus_bleu():
    hyps = ["a dog runs in the park .", "two men", "", "the the the the", "a man runs ."]
    refs = ["A dog runs in the park.", "Two men play soccer.", "A cat.", "The dog.", "A man runs in the snow."]
    stats = bleu_stats(hyps, refs)
    assert stats.shape == (5, 10)
    assert bleu_from_stats(stats.sum(0)) == bleu(hyps, refs)  # bit for bit: the same sums, the same formula
    assert stats[0, 0] == 7 and stats[0, 2] == 7  # output length; every unigram matches
    assert bleu_from_stats(stats[:1].sum(0)) == sacrebleu.corpus_bleu(
        [hyps[0]], [["a dog runs in the park ."]], tokenize="none").score


def test_per_sentence_losses_add_up_to_the_corpus_loss(tr, corpus):
    src, ref = corpus
    s_ids, t_ids = encode_pairs(src, ref, tr.src_vocab, tr.tgt_vocab, tr.cfg.max_positions)
    mean, sums, counts = loss_stats(tr.model, s_ids, t_ids, tr.device, batch_size=5)
    assert mean == evaluate_loss(tr.model, s_ids, t_ids, tr.device, batch_size=5)
    assert counts.tolist() == [len(t) - 1 for t in t_ids]  # every target token after <sos>, <eos> included
    assert sums.sum() / counts.sum() == pytest.approx(mean, rel=1e-6)
    for i in (0, 7):  # one sentence alone: its own mean loss
        alone = evaluate_loss(tr.model, s_ids[i:i + 1], t_ids[i:i + 1], tr.device)
        assert sums[i] / counts[i] == pytest.approx(alone, rel=1e-5)


def test_score_is_the_summary_of_corpus_score(tr, corpus):
    src, ref = corpus
    full = corpus_score(tr, src, ref)
    assert score(tr, src, ref) == full.summary()
    assert full.bleu == bleu(full.hyps, ref) and full.bleu > 90  # the references are the model's own outputs


def test_interval_contains_the_point_estimate_and_repeats_exactly(tr, corpus):
    src, ref = corpus
    base = corpus_score(tr, src, ref)
    widths = []
    for heads in ("cross.1.2", "enc.0.1", "dec.1.3", "cross.0.*"):
        masked = corpus_score(tr, src, ref, heads_off=heads)
        ci = paired_bootstraps(base, [masked], resamples=500, seed=7)[0]
        lo, hi = ci["bleu_drop"]
        assert lo <= base.bleu - masked.bleu <= hi, (heads, ci)
        lo, hi = ci["loss_rise"]
        assert lo <= masked.loss - base.loss <= hi, (heads, ci)
        assert paired_bootstraps(base, [masked], resamples=500, seed=7) == [ci]
        widths.append(hi - lo)
    assert min(widths) > 0  # the heads really change something: the intervals are not trivial
    assert paired_bootstraps(base, [masked], resamples=500, seed=8) != [ci]


def test_bootstraps_of_several_runs_equal_each_run_alone(tr, corpus):
    """The base's resampled scores are shared between runs: each run's interval is what it gets alone."""
    src, ref = corpus
    base = corpus_score(tr, src, ref)
    runs = [corpus_score(tr, src, ref, heads_off=h) for h in ("cross.1.2", "enc.0.1", "dec.1.3")]
    together = paired_bootstraps(base, runs, resamples=300, seed=3)
    assert together == [paired_bootstraps(base, [r], resamples=300, seed=3)[0] for r in runs]
    assert len({str(ci) for ci in together}) == 3


def test_a_head_that_changes_nothing_has_a_zero_interval(tr, corpus):
    src, ref = corpus
    base, nothing = corpus_score(tr, src, ref), corpus_score(tr, src, ref, heads_off="")
    assert paired_bootstraps(base, [nothing], resamples=300) == [{"bleu_drop": (0.0, 0.0), "loss_rise": (0.0, 0.0)}]


def test_bootstrap_refuses_runs_over_different_sentences(tr, corpus):
    src, ref = corpus
    with pytest.raises(ValueError, match="same sentences"):
        paired_bootstraps(corpus_score(tr, src, ref), [corpus_score(tr, src[:-1], ref[:-1])])


def test_head_importance_table_holds_the_intervals(tr, corpus):
    src, ref = corpus
    src, ref = src[:10], ref[:10]
    table = head_importance(tr, src, ref, progress=False, resamples=200, seed=5)
    assert table["bootstrap"] == {"resamples": 200, "seed": 5, "level": 0.95}
    for kind, v in table["kinds"].items():
        assert np.array(v["bleu_drop_ci"]).shape == np.array(v["loss_rise_ci"]).shape == (2, 4, 2)
    # two routes: the table's interval for a head is the bootstrap of that head against the baseline
    ci = paired_bootstraps(corpus_score(tr, src, ref), [corpus_score(tr, src, ref, heads_off="cross.1.2")], 200, 5)[0]
    assert table["kinds"]["cross"]["bleu_drop_ci"][1][2] == [round(x, 2) for x in ci["bleu_drop"]]
    assert table["kinds"]["cross"]["loss_rise_ci"][1][2] == [round(x, 4) for x in ci["loss_rise"]]
    assert head_importance(tr, src, ref, progress=False, resamples=200, seed=5) == table
