"""Per-head attention statistics (model/head_stats.py): against a loop-by-loop recomputation from the
`model.translate --json` maps, exact values on hand-made maps, and the CLI's usage errors."""

import json
import math
import unicodedata

import numpy as np
import pytest

from conftest import CHECKPOINT, seeded_translator
from model.export import provenance, result_json
from model.head_stats import DEFINITIONS, corpus_mean, is_punctuation, main, sentence_stats, translation_stats

SENTENCES = ["Ein Hund läuft im Park.", "Zwei Männer, die Fußball spielen, stehen auf einer Wiese.",
             "Eine Frau mit einem roten Hut"]
MAPS = {"enc": "encoder_attentions", "dec": "decoder_attentions", "cross": "cross_attentions"}
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
def punctuation(token):
    if token == "":
        return False
    for c in token:
        if unicodedata.category(c)[0] != "P":
            return False
    return True


def mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def average_ranks(values):
    """1-based ranks, ties sharing the mean of the places they take."""
    ordered = sorted(values)
    ranks = []
    for v in values:
        places = [p + 1 for p, u in enumerate(ordered) if u == v]
        ranks.append(sum(places) / len(places))
    return ranks


def pearson(xs, ys):
    mx, my = mean(xs), mean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))
    return num / den if den > 0 else math.nan


def head_by_loops(kind, rows, keys, eos_step):
    """{stat: value} for one head's map (a list of rows) of one sentence."""
    per_query = {stat: [] for stat in APPLICABLE[kind]}
    has_punct = any(punctuation(t) for t in keys)
    for i, row in enumerate(rows):
        if kind == "dec" and i == 0:
            continue  # the <sos> query sees only itself
        seen = i + 1 if kind == "dec" else len(row)
        h = 0.0
        for x in row:
            if x > 0:
                h -= x * math.log(x)
        per_query["entropy"].append(h)
        per_query["relative_entropy"].append(h / math.log(seen))
        per_query["max_weight"].append(max(row))
        per_query["sos_share"].append(row[0])
        if kind != "dec":
            per_query["eos_share"].append(row[len(row) - 1])
        if has_punct:
            per_query["punctuation_share"].append(sum(x for x, t in zip(row, keys) if punctuation(t)))
        if kind != "cross":
            per_query["mean_distance"].append(sum(x * abs(i - j) for j, x in enumerate(row)))
            per_query["diagonal_share"].append(row[i])
            if i >= 1:
                per_query["previous_share"].append(row[i - 1])
            if kind == "enc" and i + 1 < len(row):
                per_query["next_share"].append(row[i + 1])
    out = {stat: mean(v) for stat, v in per_query.items()}
    if kind == "cross":
        steps = rows[:-1] if eos_step else rows
        argmax = []
        for row in steps:
            best = 0
            for j, x in enumerate(row):
                if x > row[best]:
                    best = j
            argmax.append(best)
        pairs = [argmax[t + 1] >= argmax[t] for t in range(len(argmax) - 1)]
        out["monotonicity"] = sum(pairs) / len(pairs) if pairs else math.nan
        out["alignment_spearman"] = (pearson(list(range(len(argmax))), average_ranks(argmax))
                                     if len(argmax) >= 2 else math.nan)
    return out


def sentence_by_loops(line):
    """{stat: {kind: L x H nested list}} from one parsed `model.translate --json` line."""
    eos_step = line["steps"][-1]["token"] == "<eos>"
    out = {stat: {} for stat in DEFINITIONS}
    for kind, name in MAPS.items():
        keys = line["tgt_tokens"] if kind == "dec" else line["src_tokens"]
        heads = [[head_by_loops(kind, head, keys, eos_step) for head in layer] for layer in line[name]]
        for stat in APPLICABLE[kind]:
            out[stat][kind] = [[h[stat] for h in layer] for layer in heads]
    return out


def assert_same(stats, expected, atol=1e-6):
    """stats ({stat: {kind: array or None}}) against expected ({stat: {kind: lists}}, a kind absent = None)."""
    assert set(stats) == set(DEFINITIONS)
    for stat, by_kind in stats.items():
        for kind in MAPS:
            if stat not in APPLICABLE[kind]:
                assert by_kind[kind] is None, (stat, kind)
                continue
            got = np.array(by_kind[kind], dtype=float)
            np.testing.assert_allclose(got, np.array(expected[stat][kind], dtype=float), atol=atol,
                                       err_msg=f"{stat} {kind}")


@pytest.fixture(scope="module")
def json_lines(translator):
    """The `model.translate --json` lines of SENTENCES (result_json, through JSON text and back)."""
    prov = provenance(translator)
    return [json.loads(json.dumps(result_json(r, prov)))
            for r in translator.translate_batch(SENTENCES)]


def test_each_sentence_matches_a_recomputation_from_the_json_maps(json_lines):
    for line in json_lines:
        stats = sentence_stats({k: np.array(line[m]) for k, m in MAPS.items()}, line["src_tokens"],
                               line["tgt_tokens"], line["steps"][-1]["token"] == "<eos>")
        assert_same(stats, sentence_by_loops(line))


def test_the_cli_writes_the_corpus_mean_of_the_recomputation(json_lines, translator, tmp_path, capsys):
    src = tmp_path / "s.de"
    src.write_text("\n".join([SENTENCES[0], "", *SENTENCES[1:]]) + "\n", encoding="utf-8")
    out = tmp_path / "stats.json"
    assert main(["--src", str(src), "--checkpoint", str(CHECKPOINT), "--device", "cpu",
                 "--out", str(out), "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 1
    written = json.loads(out.read_text())
    assert written["n"] == len(SENTENCES) and written["definitions"] == DEFINITIONS
    assert written["checkpoint"] == translator.checkpoint_id
    per_sentence = [sentence_by_loops(line) for line in json_lines]
    expected, counts = {}, {}
    for stat in DEFINITIONS:
        expected[stat], counts[stat] = {}, {}
        for kind in (k for k in MAPS if stat in APPLICABLE[k]):
            values = np.array([s[stat][kind] for s in per_sentence], dtype=float)  # (N, L, H)
            counts[stat][kind] = (~np.isnan(values)).sum(0).tolist()
            expected[stat][kind] = np.nanmean(values, axis=0)
    assert_same(written["stats"], expected, atol=2e-6)  # the file holds 6 decimals
    for stat in DEFINITIONS:
        for kind in MAPS:
            assert written["counts"][stat][kind] == counts[stat].get(kind), (stat, kind)
    # one sentence has no punctuation; a dec map has no "." key before its last query
    assert written["counts"]["punctuation_share"]["enc"][0][0] == len(SENTENCES) - 1


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
