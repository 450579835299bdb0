"""viz/: each figure's traces, shapes, colour scale, labels (repeated and hostile tokens) and masked cells."""

import ast
import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

import viz
from model.minimal import sinusoidal_table  # a second route, in torch
from model.result import Step


def rows_summing_to_one(Q, K, seed=0, causal=False):
    rng = np.random.default_rng(seed)
    w = rng.random((Q, K))
    if causal:
        w = np.tril(w)
    return w / w.sum(-1, keepdims=True)


def test_heatmap_keeps_repeated_tokens_apart():
    q = ["<sos>", "a", "dog", "and", "a", "cat"]
    w = rows_summing_to_one(6, 6)
    fig = viz.attention_heatmap(w, q, q)
    hm = fig.data[0]
    assert list(hm.x) == list(range(6)) and list(hm.y) == list(range(6))  # positions, not labels
    np.testing.assert_array_equal(np.array(hm.z), w)
    assert list(fig.layout.xaxis.ticktext) == ["&lt;sos&gt;", "a", "dog", "and", "a", "cat"]
    assert hm.customdata[4][1][1] == "1: a" and hm.customdata[1][4][1] == "4: a"  # hover tells the two apart


def test_heatmap_fixed_colour_scale_and_axis_titles():
    fig = viz.attention_heatmap(rows_summing_to_one(2, 3), ["x", "y"], ["a", "b", "c"])
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert fig.data[0].coloraxis == "coloraxis"
    assert "query" in fig.layout.yaxis.title.text and "key" in fig.layout.xaxis.title.text
    assert "%{z:.4f}" in fig.data[0].hovertemplate and "query" in fig.data[0].hovertemplate
    assert list(fig.layout.yaxis.range) == [1.5, -0.5]  # first query on top, as the matrix reads


def test_causal_heatmap_draws_future_cells_as_masked():
    w = rows_summing_to_one(4, 4, causal=True)
    fig = viz.attention_heatmap(w, list("abcd"), list("abcd"), causal=True)
    assert len(fig.data) == 2
    z, masked = np.array(fig.data[0].z, dtype=float), np.array(fig.data[1].z, dtype=float)
    future = np.triu(np.ones((4, 4), bool), 1)
    assert np.isnan(z[future]).all() and not np.isnan(z[~future]).any()
    assert (masked[future] == 1).all() and np.isnan(masked[~future]).all()
    assert fig.data[1].colorscale[0][1] == viz.MASKED_COLOR and fig.data[1].showscale is False
    assert "masked" in fig.data[1].hovertemplate


def test_non_causal_heatmap_has_no_masked_trace():
    assert len(viz.attention_heatmap(rows_summing_to_one(3, 3), list("abc"), list("abc")).data) == 1


def test_long_tokens_are_shortened_on_the_axis_but_whole_in_hover():
    long = "<sehr-langes-wort-mit-bindestrichen>"
    fig = viz.attention_heatmap(rows_summing_to_one(1, 2), ["a"], [long, "b"])
    assert fig.layout.xaxis.ticktext[0] == "&lt;sehr-langes-wo…"
    assert fig.data[0].customdata[0][0][1] == "0: &lt;sehr-langes-wort-mit-bindestrichen&gt;"


def test_hostile_tokens_are_escaped_everywhere():
    toks = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "&amp;", " "]
    w = rows_summing_to_one(4, 4)
    for fig in (viz.attention_heatmap(w, toks, toks), viz.model_view(w[None, None], toks, toks),
                viz.heads_at_step(w[None, :1], toks), viz.candidates_bar([(t, 0.2) for t in toks], toks[0])):
        text = fig.to_json()
        assert "<script>" not in text and "<img" not in text
        assert "&lt;script&gt;" in text
    assert viz.plain("&amp;") == "&amp;amp;" and viz.plain(" ") == "␣"


def test_mismatched_shapes_raise_clear_errors():
    with pytest.raises(ValueError, match="3 query tokens"):
        viz.attention_heatmap(rows_summing_to_one(2, 2), ["a", "b", "c"], ["a", "b"])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        viz.attention_heatmap(np.full((2, 2), 3.0), ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="4 dimensions"):
        viz.model_view(rows_summing_to_one(2, 2), ["a", "b"], ["a", "b"])
    with pytest.raises(TypeError, match="list of strings"):
        viz.attention_heatmap(rows_summing_to_one(2, 2), "ab", ["a", "b"])


def test_model_view_tiles_every_layer_and_head():
    L, H, Q, K = 3, 8, 4, 5
    rng = np.random.default_rng(1)
    maps = rng.random((L, H, Q, K))
    maps /= maps.sum(-1, keepdims=True)
    fig = viz.model_view(maps, list("abcd"), list("vwxyz"))
    z, custom = np.asarray(fig.data[0].z, float), np.asarray(fig.data[0].customdata)
    assert z.shape == (L * (Q + 1) - 1, H * (K + 1) - 1) and custom.shape == z.shape + (4,)
    assert (fig.data[0].x0, fig.data[0].dx, fig.data[0].y0, fig.data[0].dy) == (0, 1, 0, 1)  # cell (r, c) at x=c, y=r
    for layer, head in [(0, 0), (1, 5), (2, 7)]:
        r, c = layer * (Q + 1), head * (K + 1)
        np.testing.assert_array_equal(z[r:r + Q, c:c + K], maps[layer, head])
        assert list(custom[r, c]) == [str(layer + 1), str(head + 1), "0: a", "0: v"]  # counted from 1 like the page
        # A click names its tile: views/maps.js opens layer and head customdata[0] and [1] (counted from 1).
        assert list(custom[r + Q - 1, c + 2]) == [str(layer + 1), str(head + 1), "3: d", "2: x"]
    assert np.isnan(z[Q, :]).all() and np.isnan(z[:, K]).all()  # gaps between tiles, without hover
    assert (custom[Q, :] == "").all() and fig.data[0].hoverongaps is False
    assert np.isnan(z).sum() == z.size - maps.size
    assert list(fig.layout.yaxis.ticktext) == ["layer 1", "layer 2", "layer 3"]
    assert len(fig.layout.xaxis.ticktext) == H
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1


def test_model_view_masks_the_future_in_every_tile():
    maps = np.stack([np.stack([rows_summing_to_one(3, 3, causal=True)] * 2)] * 2)  # (2, 2, 3, 3)
    fig = viz.model_view(maps, list("abc"), list("abc"), causal=True)
    z, masked = (np.asarray(t.z, float) for t in fig.data)
    assert np.nansum(masked) == 2 * 2 * 3  # 3 future cells per tile
    assert masked[0, 1] == 1 and np.isnan(masked[1, 0]) and np.isnan(z[0, 1]) and z[1, 0] == maps[0, 0, 1, 0]
    assert (np.isnan(z) | np.isnan(masked)).all()  # a cell is drawn by one trace at most
    assert fig.data[1].colorscale[0][1] == viz.MASKED_COLOR and "masked" in fig.data[1].hovertemplate


def test_cells_are_square_and_large_enough_and_labels_thin_out():
    """Readable maps: >= 14 px cells up to ~45 tokens, capped for the longest input, no two tick labels closer
    than a label needs."""
    for n in (5, 12, 29, 45):
        assert viz.cell_px(n) >= 14, n
    assert viz.cell_px(100) * 100 <= 720  # the longest input keeps a bounded size
    for n in (5, 29, 45, 98):
        cell = viz.cell_px(n)
        step = viz.label_step(cell)
        assert step * cell >= 20 and (step == 1 or (step - 1) * cell < 20)  # as dense as possible, never closer
        toks = [f"w{i}" for i in range(n)]
        fig = viz.attention_heatmap(rows_summing_to_one(n, n), toks, toks)
        assert list(fig.layout.xaxis.tickvals) == list(range(0, n, step))
        assert list(fig.layout.xaxis.ticktext) == toks[::step]
        assert fig.layout.yaxis.scaleanchor == "x"  # square cells
        assert len(fig.data[0].customdata[0]) == n  # hover keeps every token, thinned or not


def test_decoder_rows_say_what_they_predict():
    rows = viz.predicting(["<sos>", "two", "men"], ["two", "men", "<eos>"])
    assert rows == ["<sos> → two", "two → men", "men → <eos>"]
    fig = viz.attention_heatmap(rows_summing_to_one(3, 2), rows, ["zwei", "männer"])
    assert list(fig.layout.yaxis.ticktext) == ["&lt;sos&gt; → two", "two → men", "men → &lt;eos&gt;"]
    assert fig.data[0].customdata[0][0][0] == "0: &lt;sos&gt; → two"
    with pytest.raises(ValueError, match="2 decoder inputs but 3"):
        viz.predicting(["<sos>", "a"], ["a", "b", "c"])


def test_stretched_colours_reach_the_maps_maximum():
    w = rows_summing_to_one(3, 3) * 0.5
    fig = viz.attention_heatmap(w, list("abc"), list("abc"), stretch=True)
    assert fig.layout.coloraxis.cmax == pytest.approx(w.max())
    assert viz.attention_heatmap(w, list("abc"), list("abc")).layout.coloraxis.cmax == 1


def test_select_head_and_mean():
    maps = np.random.default_rng(0).random((2, 3, 4, 4))
    np.testing.assert_array_equal(viz.select_head(maps / 2, 1, 2), maps[1, 2] / 2)
    np.testing.assert_allclose(viz.select_head(maps / 2, 0, None), maps[0].mean(0) / 2)
    with pytest.raises(ValueError, match="head 3 out of range"):
        viz.select_head(maps / 2, 0, 3)


def test_heads_at_step_rows_are_layer_major():
    rows = np.random.default_rng(2).random((3, 8, 6)) / 6
    fig = viz.heads_at_step(rows, list("abcdef"))
    z = np.array(fig.data[0].z)
    assert z.shape == (24, 6)
    np.testing.assert_array_equal(z[8 + 3], rows[1, 3])
    assert fig.layout.yaxis.ticktext[11] == "L2 H4"


def test_candidates_bar_marks_the_chosen_token():
    fig = viz.candidates_bar([("dog", 0.7), ("cat", 0.2), ("<eos>", 0.05)], "dog")
    bar = fig.data[0]
    assert list(bar.x) == [0.7, 0.2, 0.05]
    assert bar.marker.color[0] != bar.marker.color[1]
    assert "chosen" in fig.layout.yaxis.ticktext[0] and "&lt;eos&gt;" == fig.layout.yaxis.ticktext[2]


def test_steps_table():
    steps = [Step("a", 0.9, 0.4, (("a", 0.9), ("the", 0.05))), Step("dog", 0.5, 1.2, (("cat", 0.6), ("dog", 0.5)))]
    df = viz.steps_table(steps)
    assert list(df["token"]) == ["a", "dog"]
    assert list(df["runner-up"]) == ["the", "cat"]
    assert df["margin"].tolist() == [pytest.approx(0.85), pytest.approx(-0.1)]


def test_numpy_sinusoids_equal_the_models_torch_table():
    """Two independent routes to the paper's encodings must agree."""
    np.testing.assert_allclose(viz.sinusoidal(100, 256), sinusoidal_table(100, 256).numpy(), atol=1e-6)


def test_position_figures():
    table = viz.sinusoidal(20, 8)
    sim = viz.cosine_similarity(table)
    np.testing.assert_allclose(np.diag(sim), 1.0)
    np.testing.assert_allclose(sim, sim.T)
    fig = viz.similarity_heatmap(table, used=5)
    assert fig.data[0].zmin == -1 and fig.data[0].zmax == 1
    assert len(fig.layout.shapes) == 2 and fig.layout.shapes[0].y1 == 4.5  # the sentence's 5 positions
    fig = viz.position_heatmap(table, used=7)
    assert np.array(fig.data[0].z).shape == (20, 8) and fig.layout.shapes[0].y1 == 6.5
    fig = viz.dimension_curves(table, [0, 3], used=7)
    assert [t.name for t in fig.data] == ["dim 0", "dim 3"]
    np.testing.assert_allclose(fig.data[1].y, table[:, 3])
    with pytest.raises(ValueError, match="out of range"):
        viz.dimension_curves(table, [9])


def test_viz_never_imports_torch():
    for path in Path(viz.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not any(n.startswith("torch") for n in names), path


# --- does attention explain the translation? norms, source shares, contributions ---------------------------

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "&amp;", " "]


def test_norms_draw_on_the_same_map_with_their_own_colour_range():
    norms = np.array([[0.5, 3.0], [2.0, 0.0]])  # lengths: above 1 is fine
    fig = viz.attention_heatmap(norms, ["a", "b"], ["x", "y"], norms=True, title="t")
    np.testing.assert_array_equal(np.array(fig.data[0].z), norms)
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 3.0
    assert fig.layout.coloraxis.colorbar.title.text == viz.NORM_LABEL
    assert viz.NORM_LABEL + " %{z:.4f}" in fig.data[0].hovertemplate and "weight" not in fig.data[0].hovertemplate
    causal = viz.attention_heatmap(norms + 1, ["a", "b"], ["a", "b"], norms=True, causal=True)
    assert causal.layout.coloraxis.cmax == 3.0 and causal.data[1].name == "masked"  # the future (4.0) sets no colour
    grid = viz.model_view(np.stack([norms, 2 * norms])[None], ["a", "b"], ["x", "y"], norms=True)  # (1, 2, 2, 2)
    assert grid.layout.coloraxis.cmax == 6.0 and viz.NORM_LABEL in grid.data[0].hovertemplate
    with pytest.raises(ValueError, match="norms \\(finite, >= 0\\)"):
        viz.attention_heatmap(-norms, ["a", "b"], ["x", "y"], norms=True)
    with pytest.raises(ValueError, match="cannot be drawn together"):
        viz.attention_heatmap(norms, ["a", "b"], ["x", "y"], norms=True, signed=True)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):  # weights stay checked
        viz.attention_heatmap(norms, ["a", "b"], ["x", "y"])


def test_norm_lines_are_scaled_to_the_layers_largest_and_hover_names_the_norms():
    norms = np.zeros((2, 2, 2))
    norms[0, 0, 1], norms[1, 1, 0] = 4.0, 1.0  # strengths 1 and 0.25 of the largest
    fig = viz.attention_lines(norms, ["a", "b"], ["x", "y"], norms=True)
    drawn = [t for t in fig.data if t.mode == "lines" and t.x]
    assert len(drawn) == 2 and {t.legendgroup for t in drawn} == {"head0", "head1"}
    query = next(t for t in fig.data if t.name == "query tokens")
    assert "key 1: 4.000" in query.hovertemplate[0] and viz.NORM_LABEL in query.hovertemplate[0]


def test_source_share_bars_flag_the_steps_below_the_threshold():
    shares = np.array([0.8, 0.3, 0.6, 0.41])
    steps = viz.predicting(["<sos>", "a", "b", "c"], ["a", "b", "c", "<eos>"])
    fig = viz.source_share_bars(steps, shares, median=0.7, threshold=0.444, title="t")
    bars = fig.data[0]
    np.testing.assert_array_equal(np.array(bars.y), shares)
    assert viz.low_steps(shares, 0.444) == [1, 3] and viz.low_steps(shares, None) == []
    low = [t for t, c in enumerate(bars.marker.color) if c != bars.marker.color[0]]
    assert low == [1, 3]
    assert "below the test set's low-share threshold" in bars.customdata[1][1] and bars.customdata[0][1] == ""
    assert bars.customdata[0][0] == "1: &lt;sos&gt; → a"  # steps count from 1, as on the page; escaped
    lines = {t.name: list(t.y) for t in fig.data[1:]}
    assert lines == {"test-set median 0.700": [0.7, 0.7], "low-share threshold 0.444": [0.444, 0.444]}
    assert len(viz.source_share_bars(steps, shares).data) == 1  # no distribution: no lines
    with pytest.raises(ValueError, match="one value per step"):
        viz.source_share_bars(steps, shares[:3])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        viz.source_share_bars(steps, shares * 3)


def test_weights_and_norms_side_by_side_with_the_length_in_the_hover():
    w, n = np.array([0.75, 0.25, 0.0]), np.array([1.5, 2.0, 0.0])
    fig = viz.weights_and_norms(["a", "b", "c"], w, n, mask=[True, True, False], title="t")
    assert len(fig.data) == 2
    np.testing.assert_array_equal(np.array(fig.data[0].x), w)
    np.testing.assert_array_equal(np.array(fig.data[1].x), n)
    assert "‖f(x)‖ 2.000" in fig.data[0].hovertext[0] and "‖f(x)‖ 8.000" in fig.data[1].hovertext[1]
    assert fig.data[1].text[2] == "masked" and "masked" in fig.data[0].hovertext[2]
    with pytest.raises(ValueError, match="one value per key"):
        viz.weights_and_norms(["a", "b"], w, n)


def test_contribution_map_names_contributions_and_steps():
    c = np.tril(np.full((3, 3), 1 / 3))
    steps = viz.predicting(["<sos>", "a", "b"], ["a", "b", "<eos>"])
    fig = viz.contribution_map(c, steps, ["<sos>", "a", "b"], causal=True, title="prefix")
    np.testing.assert_allclose(np.nan_to_num(np.array(fig.data[0].z, dtype=float)), c)
    assert fig.layout.coloraxis.colorbar.title.text == "contribution"
    assert fig.layout.coloraxis.cmax == pytest.approx(1 / 3)  # its own range
    assert "contribution %{z:.4f}" in fig.data[0].hovertemplate and "step %{customdata[0]}" in fig.data[0].hovertemplate
    assert list(fig.data[0].customdata[2][0]) == ["3: b → &lt;eos&gt;", "0: &lt;sos&gt;"]
    assert "a later decoder input" in fig.data[1].hovertemplate


def test_hostile_tokens_are_escaped_in_the_contribution_figures():
    w = rows_summing_to_one(4, 4)
    figures = (viz.source_share_bars(HOSTILE, w[:, 0], median=0.5, threshold=0.2),
               viz.contribution_map(w, HOSTILE, HOSTILE), viz.weights_and_norms(HOSTILE, w[0], 3 * w[0]),
               viz.attention_heatmap(3 * w, HOSTILE, HOSTILE, norms=True),
               viz.attention_lines(3 * w[None], HOSTILE, HOSTILE, norms=True))
    for fig in figures:
        text = fig.to_json()
        assert "<script>" not in text and "<img" not in text
        assert "&lt;script&gt;" in text


def test_model_view_without_cells_is_the_same_figure_less_its_cells():
    """What the page sends (views/maps.js places the cells itself): the layout, the traces and their look."""
    m = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 5))  # (L, H, Q, K), rows sum to 1
    full, bare = (viz.model_view(m, list("abcde"), list("vwxyz"), causal=True, cells=c) for c in (True, False))
    assert full.layout == bare.layout and len(full.data) == len(bare.data) == 2
    for a, b in zip(full.data, bare.data):
        assert b.z is None and b.customdata is None and a.z is not None
        cells = ("z", "customdata")
        assert {k: v for k, v in a.to_plotly_json().items() if k not in cells} == b.to_plotly_json()


def test_line_figure_without_segments_is_the_same_figure_less_its_lines_which_layer_lines_gives():
    """What the page sends for the line view (views/maps.js puts each layer's lines in): the layout, the traces and
    their look; layer_lines gives the x, y and token hover the full figure has."""
    m = np.random.default_rng(1).dirichlet(np.ones(4), size=(3, 5))  # (H, Q, K), rows sum to 1
    q, k = list("abcde"), list("wxyz")
    full, bare = (viz.attention_lines(m, q, k, title="t", segments=s) for s in (True, False))
    drawn = viz.layer_lines(m, q, k)
    assert full.layout == bare.layout and len(full.data) == len(bare.data)
    lines = [(a, b) for a, b in zip(full.data, bare.data) if a.mode == "lines"]
    assert len(lines) == len(drawn["lines"]) == 3 * len(viz.lines.LEVELS)
    for (a, b), (x, y) in zip(lines, drawn["lines"]):
        assert b.x is None and b.y is None and (list(a.x), list(a.y)) == (x, y)
        assert {k: v for k, v in a.to_plotly_json().items() if k not in ("x", "y")} == b.to_plotly_json()
    for a, b in zip(full.data, bare.data):
        if a.mode != "lines":
            assert a == b and list(a.hovertemplate) == drawn["hovers"][a.name.split()[0]]


def test_a_long_title_wraps_into_the_fewest_even_lines_and_keeps_its_words():
    from viz.labels import wrap_title

    assert wrap_title("Cross-attention, mean of 3 layers × 8 heads", 46) == "Cross-attention, mean of 3 layers × 8 heads"
    assert wrap_title("Alignment from attention weights, layer 3, head 4, Shift-Att", 46) == \
        "Alignment from attention weights,<br>layer 3, head 4, Shift-Att"  # two lines, no word alone on one
    long = "Training sentences reaching each position, and where this sentence ends, on both models' tables"
    lines = wrap_title(long, 40).split("<br>")
    assert len(lines) == 3 and " ".join(lines) == long
    assert wrap_title("a<br>b c", 46) == "a<br>b c"  # its own lines kept
    assert wrap_title("x" * 60, 46) == "x" * 60  # one word: nowhere to break


def test_the_figures_built_unchecked_pass_plotlys_checks_unchanged():
    """The maps' figures skip plotly's checks as they are built (viz.attention.unchecked, viz.lines): checked anew by
    plotly (a figure made of their dict, which raises on any property plotly does not know), each has the same JSON,
    in every variant the page draws."""
    m = np.random.default_rng(2).dirichlet(np.ones(5), size=(2, 3, 5))  # (L, H, Q, K), rows sum to 1
    q, k, unk = list("abcde"), list("vwxyz"), [False, True, False, False, False]
    figures = [viz.attention_heatmap(m[0, 1], q, k, causal=True, title="t", subtitle="s", query_unknown=unk),
               viz.attention_heatmap(m[0, 1] - m[1, 2], q, k, signed=True, stretch=True),
               viz.attention_heatmap(m[1, 0] * 3, q, k, norms=True, key_unknown=unk),
               viz.model_view(m, q, k, causal=True, title="grid"), viz.model_view(m, q, k, cells=False),
               viz.model_view(m * 2, q, k, norms=True),
               viz.attention_lines(m[0], q, k, title="lines", heads=[0, 2], focus=("key", 1)),
               viz.attention_lines(m[1] * 2, q, k, norms=True, segments=False)]
    for fig in figures:
        assert json.loads(go.Figure(fig.to_dict()).to_json()) == json.loads(fig.to_json())


def test_a_features_histogram_is_its_counts_on_a_log_axis_with_few_labels():
    edges, counts = np.linspace(0, 4, 5), [3, 700, 20, 0]
    fig = viz.feature_histogram(edges, counts, title="enc.2.7")
    bar = fig.data[0]
    np.testing.assert_allclose(bar.x, [0.5, 1.5, 2.5, 3.5])  # each bar at its bin's middle, as wide as the bin
    np.testing.assert_allclose(bar.width, [1, 1, 1, 1])
    np.testing.assert_array_equal(bar.y, counts)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.dtick == 1  # 3 to 700: powers of ten only
    assert viz.feature_histogram(edges, [3, 20, 9, 0]).layout.yaxis.dtick == "D2"  # under two decades: 1, 2, 5
    assert viz.feature_histogram(edges, [0, 0, 0, 0]).data[0].y is not None  # a silent feature still draws
    with pytest.raises(ValueError, match="one longer than counts"):
        viz.feature_histogram(edges, counts[:3])


def test_a_title_in_hangul_wraps_by_its_width_not_its_length():
    """Hangul draws about twice as wide as Latin letters: 30 of them take the room of 60 (East Asian Width W), so a
    phone's title of 46 columns breaks them into two lines where 30 Latin letters stay on one."""
    from viz.labels import columns, wrap_title

    korean, latin = "인코더 셀프 어텐션 층의 헤드 평균 가중치를 봅니다 여기", "Encoder self-attention: the mean"
    assert columns("헤드 ab") == 2 * 2 + 1 + 2 and columns(latin) == len(latin)
    assert columns(korean) > 46 and len(korean) < 46
    assert wrap_title(latin, 46) == latin
    lines = wrap_title(korean, 46).split("<br>")
    assert len(lines) == 2 and all(columns(line) <= 46 for line in lines) and " ".join(lines) == korean
