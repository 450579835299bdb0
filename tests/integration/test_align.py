"""Word alignment (model/align.py, model/silver.py): AER on cases whose answer is known and against a literal
recount, the argmax and Shift-Att rows on a tiny model, grow-diag-final-and by hand, the shipped references'
indices, and the shipped alignment.json reproduced by the command."""

import gzip
import json

import numpy as np
import pytest

from conftest import ROOT, assert_error_line, seeded_translator
from model import align
from model.align import read_gold, read_silver, maps_for, pair_links
from model.errors import InputError
from model.vocab import tokenize

DATA = ROOT.parent / "shared/data/multi30k"
SRC, REF = DATA / "test_2016_flickr.de.gz", DATA / "test_2016_flickr.en.gz"


def lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


# the measure ----------------------------------------------------------------------------------------------------


# links from maps -------------------------------------------------------------------------------------------------


# the silver aligner's symmetrisation -----------------------------------------------------------------------------


# the shipped references --------------------------------------------------------------------------------------
def test_gold_reference_indices_match_the_tokenization():
    gold = read_gold(align.GOLD)
    de, en = lines(SRC), lines(REF)
    assert len(gold) >= 100 and [g.line for g in gold] == sorted({g.line for g in gold})
    examples = json.loads((ROOT / "assets/examples.json").read_text(encoding="utf-8"))["examples"]
    assert {de.index(e["de"]) for e in examples} <= {g.line for g in gold}  # every built-in example annotated
    for g in gold:
        n_de, n_en = len(tokenize(de[g.line], "de")), len(tokenize(en[g.line], "en"))
        assert g.sure and g.sure <= g.possible
        assert all(i < n_de and j < n_en for i, j in g.possible), g.line
    n_sure = sum(len(g.sure) for g in gold)
    assert n_sure > 0.6 * sum(len(tokenize(en[g.line], "en")) for g in gold)  # most words have a sure link


def test_silver_alignment_covers_test2016():
    silver = read_silver(align.SILVER)
    de, en = lines(SRC), lines(REF)
    assert sorted(silver) == list(range(len(de)))
    for line, links in silver.items():
        n_de, n_en = len(tokenize(de[line], "de")), len(tokenize(en[line], "en"))
        assert all(i < n_de and j < n_en for i, j in links), line


@pytest.mark.parametrize("text, fragment", [
    ('{"line": 0, "sure": [[0, 0]], "possible": []}', "not among the possible"),
    ('{"line": 0, "sure": [[0]], "possible": [[0]]}', "pairs of whole numbers"),
    ('{"line": -1, "sure": [], "possible": []}', "expected"),
    ("not json", "not JSON"),
    ('{"line": 0, "sure": [], "possible": []}\n{"line": 0, "sure": [], "possible": []}', "twice"),
    ("", "no annotated pair"),
])
def test_malformed_gold_is_one_error_line(tmp_path, call, text, fragment):
    gold = tmp_path / "g.jsonl"
    gold.write_text(text)
    with pytest.raises(InputError, match=fragment):
        read_gold(gold)
    status, _, err = call(align.main, "--src", SRC, "--ref", REF, "--gold", gold)
    assert_error_line(status, err, fragment)


def test_a_link_past_the_tokens_is_an_error(tmp_path, call):
    gold = tmp_path / "g.jsonl"
    gold.write_text('{"line": 0, "sure": [[40, 0]], "possible": [[40, 0]]}\n')
    status, _, err = call(align.main, "--src", SRC, "--ref", REF, "--gold", gold, "--silver", "none",
                          "--out", tmp_path / "a.json", "--no-progress")
    assert_error_line(status, err, "line 0", "point past")


# the command and the shipped file ----------------------------------------------------------------------------------
def test_command_reproduces_the_shipped_json_on_the_first_pairs(tmp_path, call):
    shipped = json.loads((ROOT / "checkpoints/alignment.json").read_text())
    n = 12  # the first 12 lines of test2016: the annotated ones among them
    for path, name in ((SRC, "de"), (REF, "en")):
        (tmp_path / name).write_text("\n".join(lines(path)[:n]) + "\n", encoding="utf-8")
    status, out, err = call(align.main, "--src", tmp_path / "de", "--ref", tmp_path / "en", "--gold", align.GOLD,
                            "--out", tmp_path / "a.json", "--no-progress")
    assert status == 0, err
    mine = json.loads((tmp_path / "a.json").read_text())
    assert mine["lines"] == [line for line in shipped["lines"] if line < n] and mine["n_pairs"] >= 10
    assert mine["per_line"] == {k: v for k, v in shipped["per_line"].items() if int(k) < n}
    # the summary of the shipped file follows from its own per-line counts
    for m, r in shipped["methods"].items():
        total = np.sum([v[m] for v in shipped["per_line"].values()], axis=0)
        assert {k: round(v, 4) for k, v in align.rates(total).items()} == \
            {k: r[k] for k in ("aer", "precision", "recall")}
    assert shipped["n_pairs"] == len(read_gold(align.GOLD))
    best = min(shipped["methods"], key=lambda m: shipped["methods"][m]["aer"])
    assert shipped["best_method"] == best


# the figures ----------------------------------------------------------------------------------------------------


def test_shift_att_reads_the_row_one_step_later_on_a_tiny_model():
    t = seeded_translator()
    de, en = "ein hund läuft im park .", ["a", "dog", "runs", "in", "the", "park", "."]
    maps = maps_for(t, de, en)
    cross = t.score_reference(de, " ".join(en)).translation.cross_attentions  # the page's route: (L, H, T, S)
    np.testing.assert_allclose(maps["attention"], cross, atol=1e-6)
    n_de, n_en = len(tokenize(de, "de")), len(en)
    methods, heads = pair_links(maps, n_de, n_en)
    for l in range(cross.shape[0]):
        for h in range(cross.shape[1]):
            want_argmax = {(int(np.argmax(cross[l, h, t_, 1:1 + n_de])), t_) for t_ in range(n_en)}
            want_shift = {(int(np.argmax(cross[l, h, t_ + 1, 1:1 + n_de])), t_) for t_ in range(n_en)}
            assert heads["argmax"][l][h] == want_argmax and heads["shift"][l][h] == want_shift
        mean = cross[l].mean(0)
        assert methods[f"attention L{l + 1} shift"] == {(int(np.argmax(mean[t_ + 1, 1:1 + n_de])), t_)
                                                         for t_ in range(n_en)}
    assert set(methods) == set(align.method_names(cross.shape[0]))
    assert all(len(methods[m]) == n_en for m in methods if not m.endswith("threshold"))


def test_a_source_longer_than_the_positions_is_cut_as_everywhere_and_a_gold_line_is_not():
    t = seeded_translator()
    long = " ".join(["ein hund läuft im park ."] * 20)  # 120 tokens: the model reads the first 98
    maps = maps_for(t, long, ["a", "dog", "."])
    assert maps["attention"].shape[-2:] == (4, t.cfg.max_positions)
    with pytest.raises(InputError, match="positions"):
        maps_for(t, "ein hund .", ["a"] * t.cfg.max_positions)
    gold = [align.Reference(0, frozenset({(0, 0)}), frozenset({(0, 0)}))]
    with pytest.raises(InputError, match="gold line 0 is longer"):
        align.evaluate(t, [long], ["a dog ."], gold)
