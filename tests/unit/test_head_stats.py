"""Per-head attention statistics (model/head_stats.py): against a loop-by-loop recomputation from the
`model.translate --json` maps, exact values on hand-made maps, and the CLI's usage errors."""

import math

import numpy as np
import pytest

from conftest import literal_head_divergence, seeded_translator
from model.head_stats import DEFINITIONS, head_divergence, corpus_mean, is_punctuation, main, sentence_stats, translation_stats

# What each kind has, written out here rather than read from the module under test.
APPLICABLE = {
    "enc": {"entropy", "relative_entropy", "mean_distance", "diagonal_share", "previous_share", "next_share",
            "sos_share", "eos_share", "punctuation_share", "max_weight"},
    "dec": {"entropy", "relative_entropy", "mean_distance", "diagonal_share", "previous_share", "sos_share",
            "punctuation_share", "max_weight"},
    "cross": {"entropy", "relative_entropy", "sos_share", "eos_share", "punctuation_share", "max_weight",
              "monotonicity", "alignment_spearman"},
}


# an independent recomputation: plain loops over one --json line ---------------------------------


def mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def pearson(xs, ys):
    mx, my = mean(xs), mean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))
    return num / den if den > 0 else math.nan


# exact values on hand-made maps -------------------------------------------------------------------
SRC = ["<sos>", "ein", "hund", ".", "<eos>"]  # S = 5
TGT = ["<sos>", "a", "dog", "."]  # T = 4


def stats_of(enc, dec, cross, eos_step=True):
    """sentence_stats of maps given for one head, as one layer of two identical heads."""
    return sentence_stats({k: np.broadcast_to(np.asarray(m, float), (1, 2, *np.shape(m)))
                           for k, m in (("enc", enc), ("dec", dec), ("cross", cross))}, SRC, TGT, eos_step)


def uniform(Q, K, causal=False):
    w = np.tril(np.ones((Q, K))) if causal else np.ones((Q, K))
    return w / w.sum(-1, keepdims=True)


def one_hot(Q, K, cols):
    w = np.zeros((Q, K))
    w[np.arange(Q), cols] = 1.0
    return w


def value(stats, stat, kind):
    v = stats[stat][kind]
    assert v.shape == (1, 2) and v[0, 0] == v[0, 1] or np.isnan(v).all()
    return float(v[0, 0])


def test_a_one_hot_diagonal_map():
    s = stats_of(np.eye(5), np.eye(4), one_hot(4, 5, [1, 2, 3, 4]))
    for kind in ("enc", "dec"):
        assert value(s, "diagonal_share", kind) == 1.0 and value(s, "max_weight", kind) == 1.0
        assert value(s, "entropy", kind) == 0.0 and value(s, "relative_entropy", kind) == 0.0
        assert value(s, "mean_distance", kind) == 0.0 and value(s, "previous_share", kind) == 0.0
    assert value(s, "next_share", "enc") == 0.0
    assert value(s, "sos_share", "enc") == value(s, "eos_share", "enc") == value(s, "punctuation_share", "enc") == 0.2
    assert value(s, "sos_share", "dec") == 0.0  # the <sos> query is not counted
    assert value(s, "punctuation_share", "dec") == pytest.approx(1 / 3)  # queries a, dog, . ; only "." looks at "."
    assert value(s, "eos_share", "cross") == 0.25 and value(s, "sos_share", "cross") == 0.0
    assert s["mean_distance"]["cross"] is None and s["next_share"]["dec"] is None and s["eos_share"]["dec"] is None


def test_a_uniform_map_has_relative_entropy_one():
    s = stats_of(uniform(5, 5), uniform(4, 4, causal=True), uniform(4, 5))
    for kind in ("enc", "dec", "cross"):
        assert value(s, "relative_entropy", kind) == pytest.approx(1.0, abs=1e-12)
    assert value(s, "entropy", "enc") == pytest.approx(math.log(5))
    assert value(s, "entropy", "dec") == pytest.approx((math.log(2) + math.log(3) + math.log(4)) / 3)
    assert value(s, "max_weight", "enc") == pytest.approx(0.2)
    assert value(s, "mean_distance", "enc") == pytest.approx(sum(abs(i - j) for i in range(5) for j in range(5)) / 25)
    # every step's argmax is the first key: a constant alignment is monotone but has no rank correlation
    assert value(s, "monotonicity", "cross") == 1.0 and math.isnan(value(s, "alignment_spearman", "cross"))


def test_previous_and_next_token_heads():
    s = stats_of(one_hot(5, 5, [0, 0, 1, 2, 3]), one_hot(4, 4, [0, 0, 1, 2]), uniform(4, 5))
    assert value(s, "previous_share", "enc") == value(s, "previous_share", "dec") == 1.0
    assert value(s, "mean_distance", "enc") == 0.8 and value(s, "mean_distance", "dec") == 1.0
    s = stats_of(one_hot(5, 5, [1, 2, 3, 4, 4]), np.eye(4), uniform(4, 5))
    assert value(s, "next_share", "enc") == 1.0 and value(s, "previous_share", "enc") == 0.0
    assert value(s, "eos_share", "enc") == 0.4


def test_alignment_monotonicity_and_rank_correlation():
    enc, dec = np.eye(5), np.eye(4)
    s = stats_of(enc, dec, one_hot(4, 5, [0, 1, 3, 4]), eos_step=False)
    assert value(s, "monotonicity", "cross") == 1.0 and value(s, "alignment_spearman", "cross") == pytest.approx(1.0)
    s = stats_of(enc, dec, one_hot(4, 5, [3, 2, 1, 0]), eos_step=False)
    assert value(s, "monotonicity", "cross") == 0.0 and value(s, "alignment_spearman", "cross") == pytest.approx(-1.0)
    # the step that emits <eos> is left out: a jump back to the start there does not count
    jump = one_hot(4, 5, [1, 2, 3, 0])
    assert value(stats_of(enc, dec, jump), "monotonicity", "cross") == 1.0
    assert value(stats_of(enc, dec, jump, eos_step=False), "monotonicity", "cross") == pytest.approx(2 / 3)
    # two steps alike (ties): average ranks, step 0..2 -> argmax 1, 1, 3 -> ranks 1.5, 1.5, 3
    s = stats_of(enc, dec, one_hot(4, 5, [1, 1, 3, 0]))
    assert value(s, "alignment_spearman", "cross") == pytest.approx(pearson([0, 1, 2], [1.5, 1.5, 3]))


def test_a_first_output_of_eos_leaves_dec_and_alignment_undefined():
    maps = {"enc": np.ones((1, 1, 5, 5)) / 5, "dec": np.ones((1, 1, 1, 1)), "cross": np.ones((1, 1, 1, 5)) / 5}
    s = sentence_stats(maps, SRC, ["<sos>"], eos_step=True)
    assert all(np.isnan(s[stat]["dec"]).all() for stat in DEFINITIONS if stat in APPLICABLE["dec"])
    assert np.isnan(s["monotonicity"]["cross"]).all() and s["entropy"]["cross"][0, 0] == pytest.approx(math.log(5))
    means, counts = corpus_mean([s, s])
    assert counts["entropy"]["dec"].tolist() == [[0]] and np.isnan(means["entropy"]["dec"]).all()
    assert counts["entropy"]["enc"].tolist() == [[2]]


def test_punctuation_is_unicode_punctuation_only():
    assert all(is_punctuation(t) for t in (".", ",", "--", "\u201e", "!?", "(", "\u2019"))
    assert not any(is_punctuation(t) for t in ("", "<eos>", "+", "$", "a.", "3"))


def test_a_tiny_models_statistics_stay_in_range():
    tr = seeded_translator()
    for r in tr.translate_batch(["ein hund läuft .", "zwei männer"], max_len=6):
        s = translation_stats(r)
        for stat, by_kind in s.items():
            for kind, v in by_kind.items():
                if v is None or stat in ("entropy", "mean_distance", "alignment_spearman"):
                    continue
                ok = v[~np.isnan(v)]
                assert ((ok >= -1e-9) & (ok <= 1 + 1e-9)).all(), (stat, kind, v)


# usage errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case, says", [
    ("missing", "does not exist"),
    ("empty", "has no sentence to translate"),
    ("device", "unknown device 'tpu'"),
    ("checkpoint", "Checkpoint"),
    ("batch", "--batch-size must be at least 1"),
    ("out", "does not exist"),
])
def test_usage_errors_are_one_line_and_exit_2(case, says, tiny_checkpoint, tmp_path, capsys):
    src = tmp_path / "s.de"
    src.write_text("\n \n" if case == "empty" else "Ein Hund.\n", encoding="utf-8")
    args = {"--src": str(src), "--checkpoint": tiny_checkpoint, "--out": str(tmp_path / "o.json"), "--device": "cpu"}
    args.update({"missing": {"--src": str(tmp_path / "nope.de")}, "device": {"--device": "tpu"},
                 "checkpoint": {"--checkpoint": str(tmp_path / "none")}, "batch": {"--batch-size": "0"},
                 "out": {"--out": str(tmp_path / "no" / "o.json")}}.get(case, {}))
    assert main([x for kv in args.items() for x in kv] + ["--no-progress"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
    assert not (tmp_path / "o.json").exists()


def test_head_divergence_has_its_known_answers_and_equals_the_literal_loops():
    """Heads alike: 0 bits; heads with no key in common: 1 bit; one-hot (1, 0) against uniform (1/2, 1/2):
    (log2(4/3) + (log2(2/3) + 1) / 2) / 2 = 0.3113 bits. Random maps: the literal loops (tests/conftest.py)."""
    same = np.full((1, 3, 2, 4), 0.25)
    np.testing.assert_allclose(head_divergence(same), [0.0], atol=1e-12)
    apart = np.zeros((1, 2, 2, 2))
    apart[0, 0, :, 0] = apart[0, 1, :, 1] = 1.0
    np.testing.assert_allclose(head_divergence(apart), [1.0], atol=1e-12)
    half = np.array([[[[1.0, 0.0]], [[0.5, 0.5]]]])
    np.testing.assert_allclose(head_divergence(half), [(math.log2(4 / 3) + (math.log2(2 / 3) + 1) / 2) / 2],
                               atol=1e-12)
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(5), size=(3, 4, 6))  # (L, H, Q, K), rows on the simplex
    maps[..., 0, 1:] = 0.0  # a row with zeros, as a decoder's first row has
    maps[..., 0, 0] = 1.0
    for first_row in (0, 1):
        np.testing.assert_allclose(head_divergence(maps, first_row), literal_head_divergence(maps, first_row),
                                   atol=1e-12)
    assert head_divergence(maps[:, :1]).tolist() == [0.0, 0.0, 0.0]  # one head: nothing to differ from
