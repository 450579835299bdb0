"""Word alignment (model/align.py, model/silver.py): AER on cases whose answer is known and against a literal
recount, the argmax and Shift-Att rows on a tiny model, grow-diag-final-and by hand, the shipped references'
indices, and the shipped alignment.json reproduced by the command."""

import gzip
import json

import numpy as np
import pytest

from conftest import ROOT, assert_error_line, seeded_translator
from model import align
from model.align import (diagonal, links_of, maps_for, pair_links, read_gold, read_silver, score,
                         word_rows)
from model.errors import InputError
from model.silver import grow_diag_final_and
from model.vocab import tokenize

DATA = ROOT.parent / "shared/data/multi30k"
SRC, REF = DATA / "test_2016_flickr.de.gz", DATA / "test_2016_flickr.en.gz"


def lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def slow_aer(pairs):
    """AER, precision, recall by counting link by link over the corpus, straight from Och & Ney's definition."""
    a = s = a_s = a_p = 0
    for links, sure, possible in pairs:
        for link in links:
            a += 1
            a_s += link in sure
            a_p += link in possible
        s += len(sure)
    return {"aer": 1 - (a_s + a_p) / (a + s), "precision": a_p / a, "recall": a_s / s}


# the measure ----------------------------------------------------------------------------------------------------
def test_aer_known_cases():
    s = {(0, 0), (1, 1), (2, 2)}
    assert score([(s, s, s)]) == {"aer": 0.0, "precision": 1.0, "recall": 1.0}
    assert score([({(0, 1), (1, 0)}, s, s)]) == {"aer": 1.0, "precision": 0.0, "recall": 0.0}
    p = s | {(2, 3)}
    assert score([(p, s, p)])["aer"] == 0.0  # all possible links claimed: no error (Och & Ney)
    # S = {(0,0)}, P = S + {(1,1)}, A = {(1,1), (2,2)}: |A&S| = 0, |A&P| = 1, |A| = 2, |S| = 1
    r = score([({(1, 1), (2, 2)}, {(0, 0)}, {(0, 0), (1, 1)})])
    assert r == pytest.approx({"aer": 1 - 1 / 3, "precision": 0.5, "recall": 0.0})
    assert score([(set(), s, s)]) == {"aer": 1.0, "precision": 1.0, "recall": 0.0}


def test_aer_is_counted_over_the_corpus_as_a_literal_recount():
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(30):
        cells = [(i, j) for i in range(6) for j in range(5)]
        pick = lambda p: {c for c in cells if rng.random() < p}  # noqa: E731
        sure = pick(0.15)
        pairs.append((pick(0.2), sure, sure | pick(0.1)))
    assert score(pairs) == pytest.approx(slow_aer(pairs), abs=1e-12)
    # not the mean of per-pair AERs
    assert score(pairs)["aer"] != pytest.approx(np.mean([score([p])["aer"] for p in pairs]), abs=1e-6)


# links from maps -------------------------------------------------------------------------------------------------
def test_rows_columns_argmax_and_threshold():
    m = np.zeros((4, 5))  # 3 English words + 1, 3 German words + <sos> + <eos>
    m[:, 0] = 0.9  # <sos> takes most weight everywhere: never a link
    m[0, 3], m[1, 1], m[2, 2], m[3, 1] = 0.05, 0.06, 0.04, 0.07
    m[2, 3] = 0.035
    assert word_rows(m, 3, 3, "argmax").shape == (3, 3)
    assert links_of(word_rows(m, 3, 3, "argmax"), "argmax") == {(2, 0), (0, 1), (1, 2)}
    assert links_of(word_rows(m, 3, 3, "shift"), "shift") == {(0, 0), (1, 1), (0, 2)}
    # renormalised over German words: row 2 is 0.04 / 0.075 and 0.035 / 0.075, both over 0.25
    assert links_of(word_rows(m, 3, 3, "threshold"), "threshold") == {(2, 0), (0, 1), (1, 2), (2, 2)}
    assert diagonal(3, 3) == {(0, 0), (1, 1), (2, 2)}
    assert diagonal(4, 2) == {(1, 0), (3, 1)} and diagonal(2, 4) == {(0, 0), (0, 1), (1, 2), (1, 3)}


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


# the silver aligner's symmetrisation -----------------------------------------------------------------------------
def test_grow_diag_final_and_by_hand():
    # grow: (2,1) and (1,2) neighbour (1,1) and each brings an unaligned word
    assert grow_diag_final_and({(0, 0), (1, 1), (2, 1)}, {(0, 0), (1, 1), (1, 2)}) == \
        {(0, 0), (1, 1), (2, 1), (1, 2)}
    # (0,1) neighbours (0,0) but both its words are aligned already: left out
    assert grow_diag_final_and({(0, 0), (1, 1), (0, 1)}, {(0, 0), (1, 1)}) == {(0, 0), (1, 1)}
    # final-and: (3,3) is nobody's neighbour, its two words are unaligned: added; (3,0) then is not (0 aligned)
    assert grow_diag_final_and({(0, 0), (3, 3)}, {(0, 0), (3, 0)}) == {(0, 0), (3, 3)}
    assert grow_diag_final_and(set(), set()) == set()


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
def test_link_classes_and_the_marks_drawn():
    import viz

    sure, possible = {(0, 0), (1, 1)}, {(0, 0), (1, 1), (2, 1)}
    links = {(0, 0), (2, 1), (2, 2)}
    classes = viz.link_classes(links, sure, possible)
    assert classes == {"hit": [(0, 0)], "possible": [(2, 1)], "extra": [(2, 2)], "missed": [(1, 1)]}
    assert viz.link_classes(links) == {"model": sorted(links)}
    rows = np.full((3, 3), 1 / 3)
    fig = viz.alignment_map(rows, ["a", "b", "c"], ["x", "y", "z"], links, sure, possible, title="t")
    marks = {tr.name: sorted(zip(tr.x, tr.y)) for tr in fig.data[1:]}
    assert marks == {viz.alignment.LINK_STYLES[k][2]: v for k, v in classes.items()}
    grid = np.array([[0.5, 0.4], [0.3, np.nan]])
    shape = viz.aer_grid(grid).layout.shapes[0]
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (-0.5, 0.5, 0.5, 1.5)  # layer 2, head 1: the lowest


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
