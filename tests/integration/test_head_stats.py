"""Per-head attention statistics (model/head_stats.py): against a loop-by-loop recomputation from the
`model.translate --json` maps, exact values on hand-made maps, and the CLI's usage errors."""

import json
import math
import unicodedata

import numpy as np
import pytest

from conftest import CHECKPOINT
from model.export import provenance, result_json
from model.head_stats import DEFINITIONS, main, sentence_stats
from unit.test_head_stats import APPLICABLE, mean, pearson


SENTENCES = ["Ein Hund läuft im Park.", "Zwei Männer, die Fußball spielen, stehen auf einer Wiese.",
             "Eine Frau mit einem roten Hut"]


MAPS = {"enc": "encoder_attentions", "dec": "decoder_attentions", "cross": "cross_attentions"}


def punctuation(token):
    if token == "":
        return False
    for c in token:
        if unicodedata.category(c)[0] != "P":
            return False
    return True


def average_ranks(values):
    """1-based ranks, ties sharing the mean of the places they take."""
    ordered = sorted(values)
    ranks = []
    for v in values:
        places = [p + 1 for p, u in enumerate(ordered) if u == v]
        ranks.append(sum(places) / len(places))
    return ranks


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
