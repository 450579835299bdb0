"""Word alignment (model/align.py, model/silver.py): AER on cases whose answer is known and against a literal
recount, the argmax and Shift-Att rows on a tiny model, grow-diag-final-and by hand, the shipped references'
indices, and the shipped alignment.json reproduced by the command."""

import numpy as np
import pytest

from model.align import diagonal, links_of, score, word_rows
from model.silver import grow_diag_final_and


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


def test_grow_diag_final_and_by_hand():
    # grow: (2,1) and (1,2) neighbour (1,1) and each brings an unaligned word
    assert grow_diag_final_and({(0, 0), (1, 1), (2, 1)}, {(0, 0), (1, 1), (1, 2)}) == \
        {(0, 0), (1, 1), (2, 1), (1, 2)}
    # (0,1) neighbours (0,0) but both its words are aligned already: left out
    assert grow_diag_final_and({(0, 0), (1, 1), (0, 1)}, {(0, 0), (1, 1)}) == {(0, 0), (1, 1)}
    # final-and: (3,3) is nobody's neighbour, its two words are unaligned: added; (3,0) then is not (0 aligned)
    assert grow_diag_final_and({(0, 0), (3, 3)}, {(0, 0), (3, 0)}) == {(0, 0), (3, 3)}
    assert grow_diag_final_and(set(), set()) == set()


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
