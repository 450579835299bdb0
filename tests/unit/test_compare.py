"""Comparing two runs in the attention views, the line view, the model choice, live importance, head statistics."""

import numpy as np
import pytest

import viz


def test_line_view_draws_one_line_per_weight_above_the_floor_in_its_level():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(6), size=(4, 5))  # (H, Q, K)
    fig = viz.attention_lines(maps, [f"q{i}" for i in range(5)], [f"k{j}" for j in range(6)])
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 4 * len(viz.lines.LEVELS)
    drawn = {h: 0 for h in range(4)}
    for t in lines:
        h = int(t.legendgroup.removeprefix("head"))
        drawn[h] += len([x for x in t.x if x is None])  # one None ends each segment
    for h in range(4):
        assert drawn[h] == int((maps[h] > viz.lines.FLOOR).sum())
    # Each segment goes from query i at x=0 to key j at x=1 and lies in its weight's level.
    for t in lines:
        h = int(t.legendgroup.removeprefix("head"))
        level = [t2 for t2 in lines if t2.legendgroup == t.legendgroup].index(t)
        low, high = ([0.0, *viz.lines.LEVELS])[level], viz.lines.LEVELS[level]
        for k in range(0, len(t.x), 3):
            i, j = t.y[k], t.y[k + 1]
            assert (t.x[k], t.x[k + 1]) == (0, 1) and low < maps[h, i, j] <= high


def test_line_view_focus_keeps_only_that_tokens_lines_and_heads_start_hidden():
    maps = np.full((2, 3, 3), 1 / 3)
    fig = viz.attention_lines(maps, ["a", "b", "c"], ["x", "y", "z"], heads=[1], focus=("key", 2))
    lines = [t for t in fig.data if t.mode == "lines" and t.x]
    assert lines and all(t.y[k + 1] == 2 for t in lines for k in range(0, len(t.x), 3))
    assert {t.visible for t in fig.data if t.mode == "lines" and t.legendgroup == "head0"} == {"legendonly"}
    tokens = [t for t in fig.data if t.mode == "markers+text"]
    # What a click on a token reports, and views/maps.js reads: its side and position (a tile's starts with a layer).
    assert list(tokens[1].customdata[2])[:2] == ["key", 2]
    assert {c[0] for t in tokens for c in t.customdata} == {"query", "key"}


def test_difference_map_is_signed_and_checked():
    a, b = np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.25, 0.75], [0.5, 0.5]])
    fig = viz.attention_heatmap(b - a, ["p", "q"], ["r", "s"], signed=True, stretch=True)
    assert np.allclose(np.array(fig.data[0].z, dtype=float), b - a)
    assert fig.layout.coloraxis.cmin == -0.75 and fig.layout.coloraxis.cmax == 0.75
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        viz.attention_heatmap(b - a, ["p", "q"], ["r", "s"])  # a difference is not a weight map
    with pytest.raises(ValueError, match="differences"):
        viz.attention_heatmap(np.full((2, 2), -1.5), ["p", "q"], ["r", "s"], signed=True)


def test_training_reach_is_the_share_of_sentences_longer_than_each_position():
    counts = {3: 2, 5: 1, 8: 1}  # 4 sentences using 3, 3, 5 and 8 positions
    got = viz.positions.reach(counts, 10)
    want = [sum(n for used, n in counts.items() if used > p) / 4 for p in range(10)]
    assert np.allclose(got, want)
    table = viz.sinusoidal(20, 16)
    cos = viz.neighbour_cosine(table)
    assert np.isclose(cos[5], table[5] @ table[6] / np.linalg.norm(table[5]) / np.linalg.norm(table[6]))
