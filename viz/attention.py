"""Attention heatmaps: one head (or the mean of a layer's heads), every head at once, one decoding step.

Pure functions: numpy arrays and token lists in, a Plotly figure out. Cells sit at
integer positions and tokens are only tick labels, so repeated tokens keep their own
rows and columns. Figures use one fixed 0-1 colour scale unless asked to stretch it;
cells a query may not look at (future positions of the decoder) are drawn grey, not as
zeros.

Norm-based attention (Kobayashi et al., EMNLP 2020: ||alpha_ij f(x_j)||, model/contributions.py) draws on
the same figures with `norms=True`: the values are lengths, not shares, so they have no upper bound, and the
colour scale runs from 0 to the largest value shown (its own range, named on the colour bar).

Sizes are in screen pixels and chosen from the number of tokens, so labels stay legible: up to
ALL_LABELS tokens every token has its tick label, on square cells large enough for it (a map wider
than the screen scrolls sideways: views/explorer.js `fitted` keeps a fully labelled map's cells
legible); past that a capped size, and tick labels thinned so that none overlaps its neighbour
(hover always has every token).
"""

import functools
import math

import numpy as np
import plotly.graph_objects as go

from model.i18n import _

from .labels import check_tokens, check_weights, positioned, tick_labels

COLORSCALE = "Viridis"
DIVERGING = "RdBu_r"  # differences: red where the second map has more weight, blue where less, white 0
MASKED_COLOR = "#c8c8c8"
NORM_LABEL = "‖α·f(x)‖"  # the colour bar and hover name of norm-based attention (Kobayashi et al., 2020)
GAP = 1  # empty cells between tiles in the model view
MAP_PX = 680  # the longer side of one map's plot area at most, in pixels
CELL_PX = (7, 36)  # smallest and largest cell of one map
UPRIGHT_CELL = 28  # px: from this cell on, key labels at -45 degrees read best; narrower cells need vertical ones
LABEL_PX = 20  # room one tick label needs across its axis: 15 px for a 12 px font, with room to spare
#               for a figure drawn at 9/10 of its size (views/explorer.js shrinks a fully labelled map to 18 px cells)
ALL_LABELS = 50  # tokens on an axis up to which every one is labelled: the page's output limit (MAX_OUTPUT)
TICK_CHARS = 16  # tick labels longer than this are shortened (hover keeps them whole)
CHAR_PX = 7  # rough width of one tick-label character, for the margins
GRID_PX = 1000  # the model view's plot area is at most this wide
TILE_CELL_PX = (2, 12)  # smallest and largest cell of one model-view tile
TILE_LEGIBLE_PX = 4  # a narrow screen shrinks a model view's cells no further (layout.meta.min_width): it scrolls


@functools.cache  # once per process, on first use
def stops(name: str) -> list:
    """A named colour scale spelled out as plotly's check spells it, for the figures built unchecked (`unchecked`)."""
    return [list(stop) for stop in go.layout.Coloraxis(colorscale=name).colorscale]


def _coloraxis(title=None, cmax=1.0):
    title = _("weight") if title is None else title
    return dict(cmin=0.0, cmax=cmax, colorscale=stops(COLORSCALE),
                colorbar=dict(title=dict(text=title), thickness=10, len=0.9, xpad=6))


def check_norms(values, ndim: int, what: str) -> np.ndarray:
    """Norm-based attention as float numpy: finite and >= 0, any size (they are lengths, not shares)."""
    a = np.asarray(values, dtype=float)
    if a.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} dimensions, got shape {a.shape}")
    if a.size and (not np.isfinite(a).all() or a.min() < -1e-6):
        raise ValueError(f"{what} must hold norms (finite, >= 0), got values in [{np.nanmin(a):.3g}, "
                         f"{np.nanmax(a):.3g}]")
    return a


def causal_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """True where a decoder query may not look (a future position)."""
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


def select_head(maps, layer: int, head: int | None) -> np.ndarray:
    """(L, H, Q, K) -> (Q, K): one head, or the mean over the layer's heads when head is None."""
    maps = check_weights(maps, 4, "maps (layers, heads, queries, keys)")
    if not 0 <= layer < maps.shape[0]:
        raise ValueError(f"layer {layer} out of range: the maps have {maps.shape[0]} layers")
    if head is None:
        return maps[layer].mean(axis=0)
    if not 0 <= head < maps.shape[1]:
        raise ValueError(f"head {head} out of range: the maps have {maps.shape[1]} heads")
    return maps[layer, head]


def shared_px(n_tokens: int) -> int:
    """MAP_PX shared out among n_tokens, within CELL_PX."""
    return int(min(max(MAP_PX // max(n_tokens, 1), CELL_PX[0]), CELL_PX[1]))


def cell_px(n_tokens: int) -> int:
    """Side of one square cell for a map whose longer side has n_tokens: room for every tick label (LABEL_PX) up to
    ALL_LABELS tokens, even where that makes the map wider than MAP_PX; past that, MAP_PX shared out."""
    return max(shared_px(n_tokens), LABEL_PX) if n_tokens <= ALL_LABELS else shared_px(n_tokens)


def label_step(cell: int) -> int:
    """Show every k-th tick label so that neighbours, `cell` pixels apart, never overlap."""
    return math.ceil(LABEL_PX / cell)


def unchecked(data: list, layout: dict) -> go.Figure:
    """A figure of traces built with _validate=False and a layout of plain dicts, not checked by plotly: the maps'
    figures are built on every new sentence, and plotly's checks of their traces, arrays and layout were most of an
    attention view's run (65-95 ms of a page's CPU). Their JSON is what the checked figure's was (tests/unit/test_viz.py)."""
    return go.Figure(data, layout=layout, _validate=False)


def _ticks(tokens, unknown, cell: int):
    """Tick positions and labels, thinned to every k-th token where cells are too small for all."""
    step = label_step(cell)
    labels = tick_labels(tokens, unknown, TICK_CHARS)
    keep = list(range(0, len(tokens), step))
    return keep, [labels[i] for i in keep]


def _masked_trace(x, y, masked, hover, customdata):
    z = np.where(masked, 1.0, np.nan)
    return go.Heatmap(x=x, y=y, z=z, customdata=customdata, colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                      showscale=False, hovertemplate=hover + _("masked: a future position") + "<extra></extra>",
                      name="masked", xgap=0, ygap=0, _validate=False)


def heat_scale(weights, masked=None, *, stretch=False, norms=False, signed=False) -> tuple[float, float, str]:
    """The colour range and colour-bar title of one map: (cmin, cmax, title).

    Weights run on the fixed 0-1 scale, or 0..their largest when stretched; norms always 0..their largest;
    a difference (signed) +-its largest |value| when stretched, +-1 otherwise. masked: cells left out (the future).
    """
    w = np.asarray(weights, dtype=float)
    shown = w if masked is None else w[~np.asarray(masked, bool)]
    shown = np.abs(shown) if signed else shown
    cmax = max(float(shown.max()) if (stretch or norms) and shown.size else 1.0, 1e-6)
    if signed:
        return -cmax, cmax, _("difference")
    return 0.0, cmax, NORM_LABEL if norms else _("weight (stretched)") if stretch else _("weight")


def attention_heatmap(weights, query_tokens, key_tokens, *, causal=False, title="",
                      query_unknown=None, key_unknown=None, stretch=False, subtitle="", signed=False, norms=False,
                      query_axis=None, key_axis=None):
    """One (Q, K) attention map as a heatmap of square cells; hover shows query, key and the exact weight.

    stretch: colour from 0 to this map's largest weight instead of the fixed 0-1 scale (more contrast,
    but colours no longer compare across maps). subtitle: a line under the title (e.g. the sentence), so
    that a saved picture says what it shows. signed: `weights` is a difference of two maps (a comparison),
    drawn on a diverging scale centred on 0 (symmetric, -1..1, or stretched to the largest |difference|).
    norms: `weights` holds norm-based attention ||alpha f(x)|| (Kobayashi et al., 2020), coloured from 0 to its
    own largest value.
    """
    if signed and norms:
        raise ValueError("signed (a difference of weights) and norms cannot be drawn together")
    w = check_norms(weights, 2, "norms (queries, keys)") if norms else \
        check_weights(weights, 2, "weights (queries, keys)", signed=signed)
    check_tokens(query_tokens, "query_tokens")
    check_tokens(key_tokens, "key_tokens")
    Q, K = w.shape
    if (Q, K) != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights have shape {w.shape} but there are {len(query_tokens)} query tokens "
                         f"and {len(key_tokens)} key tokens")
    q_lab, k_lab = positioned(query_tokens, query_unknown), positioned(key_tokens, key_unknown)
    # A numpy string array, not an object array: Plotly deep-copies and serialises object arrays element by
    # element, which made the figures the largest cost of a page run under load (bench/load_test.py).
    custom = np.empty((Q, K, 2), dtype=object)
    custom[..., 0] = np.array(q_lab, dtype=object)[:, None]
    custom[..., 1] = np.array(k_lab, dtype=object)[None, :]
    custom = custom.astype(str)
    masked = causal_mask(Q, K) if causal else np.zeros((Q, K), dtype=bool)
    query_axis = _("query: the token that is looking") if query_axis is None else query_axis
    key_axis = _("key: the token looked at") if key_axis is None else key_axis
    hover = _("query") + " %{customdata[0]}<br>" + _("key") + " %{customdata[1]}<br>"
    x, y = list(range(K)), list(range(Q))
    value = (_("difference") + " %{z:+.4f}" if signed else NORM_LABEL + " %{z:.4f}" if norms else
             _("weight") + " %{z:.4f}")
    data = [go.Heatmap(x=x, y=y, z=np.where(masked, np.nan, w), customdata=custom, coloraxis="coloraxis",
                       hovertemplate=hover + value + "<extra></extra>", name="attention", _validate=False)]
    if masked.any():
        data.append(_masked_trace(x, y, masked, hover, custom))

    cell = cell_px(max(Q, K))
    x_vals, x_text = _ticks(key_tokens, key_unknown, cell)
    y_vals, y_text = _ticks(query_tokens, query_unknown, cell)
    upright = cell >= UPRIGHT_CELL
    left = CHAR_PX * max((len(t) for t in y_text), default=4) + 40
    bottom = int(CHAR_PX * max((len(t) for t in x_text), default=4) * (0.72 if upright else 1.0)) + 45
    cmin, cmax, scale = heat_scale(w, masked, stretch=stretch, norms=norms, signed=signed)
    axis = _coloraxis(scale, cmax) if not signed else dict(
        cmin=cmin, cmax=cmax, colorscale=stops(DIVERGING), colorbar=dict(title=dict(text=scale), thickness=10,
                                                                  len=0.9, xpad=6))
    return unchecked(data, dict(
        title=dict(text=title, subtitle=dict(text=subtitle)), coloraxis=axis,
        meta=dict(cell=cell, upright=UPRIGHT_CELL),  # a narrow screen's cells stay legible (views/explorer.js fitted)
        width=left + cell * K + 90, height=cell * Q + bottom + (60 if title else 25) + (20 if subtitle else 0),
        margin=dict(l=10, r=10, t=(70 if subtitle else 50) if title else 20, b=10),
        xaxis=dict(title=dict(text=key_axis), tickmode="array", tickvals=x_vals, ticktext=x_text,
                   tickangle=-45 if upright else -90, side="bottom", automargin=True, showgrid=False,
                   zeroline=False, range=[-0.5, K - 0.5], constrain="domain", tickfont=dict(size=12)),
        yaxis=dict(title=dict(text=query_axis), tickmode="array", tickvals=y_vals, ticktext=y_text,
                   automargin=True, showgrid=False, zeroline=False, range=[Q - 0.5, -0.5],
                   scaleanchor="x", constrain="domain", tickfont=dict(size=12)),
    ))


def model_view(maps, query_tokens, key_tokens, *, causal=False, title="", query_unknown=None, key_unknown=None,
               norms=False, cells=True, first_layer=0):
    """Every layer (rows) x every head (columns) as tiles of one heatmap, GAP empty cells apart; a click on a cell
    names its tile.

    Layer l, head h, query q, key k is the cell at column h (K + GAP) + k, row l (Q + GAP) + q; the gaps are
    empty (NaN, no hover). Its customdata is [layer, head, query label, key label] (layer and head counted from 1,
    as strings), so a click names its tile (views/maps.js opens it). A decoder map's future cells are in a second,
    grey "masked" trace, as in `attention_heatmap`. One heatmap, not thousands of markers: a 100-token sentence's
    240,000 cells draw as one image, with no WebGL.
    norms: the maps are norm-based attention, one colour range 0..largest for every tile (so tiles compare).
    cells=False: the figure without its cells (no z, no customdata), for a page that places them itself
    (views/maps.js `grid`). first_layer: the model's layer (from 0) of the first row, where `maps` are some of its
    layers (the walk draws one), so the rows and the hover name the model's layers.
    """
    m = check_norms(maps, 4, "norms (layers, heads, queries, keys)") if norms else \
        check_weights(maps, 4, "maps (layers, heads, queries, keys)")
    check_tokens(query_tokens, "query_tokens")
    check_tokens(key_tokens, "key_tokens")
    L, H, Q, K = m.shape
    if (Q, K) != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"maps have {Q} queries x {K} keys but there are {len(query_tokens)} query tokens "
                         f"and {len(key_tokens)} key tokens")
    rows, cols = L * (Q + GAP) - GAP, H * (K + GAP) - GAP
    cell = int(min(max(GRID_PX // cols, TILE_CELL_PX[0]), TILE_CELL_PX[1]))
    tile_future = causal_mask(Q, K) if causal else np.zeros((Q, K), dtype=bool)
    drawn = {"attention": {}, "masked": {}}
    if cells:
        weights, future = np.full((rows, cols), np.nan), np.full((rows, cols), np.nan)
        # customdata as a numpy string array (see attention_heatmap); "" in the gaps, which have no hover
        custom = np.full((rows, cols, 4), "", dtype=object)
        q_lab, k_lab = positioned(query_tokens, query_unknown), positioned(key_tokens, key_unknown)
        for layer in range(L):
            for head in range(H):
                r, c = layer * (Q + GAP), head * (K + GAP)
                weights[r:r + Q, c:c + K] = np.where(tile_future, np.nan, m[layer, head])
                future[r:r + Q, c:c + K] = np.where(tile_future, 1.0, np.nan)
                custom[r:r + Q, c:c + K, 0] = str(first_layer + layer + 1)
                custom[r:r + Q, c:c + K, 1] = str(head + 1)
                custom[r:r + Q, c:c + K, 2] = np.array(q_lab, dtype=object)[:, None]
                custom[r:r + Q, c:c + K, 3] = np.array(k_lab, dtype=object)[None, :]
        custom = custom.astype(str)
        drawn = {"attention": dict(z=weights, customdata=custom), "masked": dict(z=future, customdata=custom)}
    hover = (_("layer") + " %{customdata[0]}, " + _("head") + " %{customdata[1]}<br>" + _("query")
             + " %{customdata[2]}<br>" + _("key") + " %{customdata[3]}<br>")
    common = dict(x0=0, dx=1, y0=0, dy=1, hoverongaps=False, xgap=0, ygap=0)
    data = [go.Heatmap(**drawn["attention"], name="attention", coloraxis="coloraxis",
                       hovertemplate=hover + (NORM_LABEL if norms else _("weight")) + " %{z:.4f}<extra></extra>",
                       **common, _validate=False)]
    if tile_future.any():
        data.append(go.Heatmap(**drawn["masked"], name="masked", colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                               showscale=False,
                               hovertemplate=hover + _("masked: a future position") + "<extra></extra>",
                               **common, _validate=False))
    return unchecked(data, dict(
        title=dict(text=title), width=cell * cols + 180, meta=dict(min_width=min(cell, TILE_LEGIBLE_PX) * cols + 180),
        coloraxis=_coloraxis(NORM_LABEL, max(float(m[:, :, ~tile_future].max()) if (~tile_future).any() else 1.0,
                                             1e-6)) if norms else _coloraxis(), height=cell * rows + 110,
        margin=dict(l=10, r=10, t=50 if title else 20, b=10), dragmode=False, hovermode="closest",
        xaxis=dict(tickmode="array", tickvals=[h * (K + GAP) + (K - 1) / 2 for h in range(H)],
                   ticktext=[_("head {head}").format(head=h + 1) for h in range(H)], showgrid=False, zeroline=False,
                   range=[-0.5, cols - 0.5], constrain="domain", side="top", automargin=True),
        yaxis=dict(tickmode="array", tickvals=[i * (Q + GAP) + (Q - 1) / 2 for i in range(L)],
                   ticktext=[_("layer {layer}").format(layer=first_layer + i + 1) for i in range(L)],
                   range=[rows - 0.5, -0.5],
                   showgrid=False, zeroline=False, scaleanchor="x", constrain="domain", automargin=True),
    ))


def step_keys_axis(key_tokens, key_unknown=None) -> dict:
    """The key axis of heads_at_step: tick positions and labels (thinned where cells are narrow) and their angle.
    Apart so that a page redrawing another step (views/trace.js) sets the same axis for that step's keys. Its chart
    takes the width of the page, not of its cells: the labels are thinned as for MAP_PX shared out."""
    x_vals, x_text = _ticks(key_tokens, key_unknown, max(shared_px(len(key_tokens)), 14))
    return dict(tickmode="array", tickvals=x_vals, ticktext=x_text, tickangle=-90 if len(key_tokens) > 12 else -45)


def heads_at_step(rows, key_tokens, *, title="", key_unknown=None, key_axis=None):
    """Where every layer and head looked at one decoding step: (L, H, K) -> heatmap of L*H rows x K."""
    r = check_weights(rows, 3, "rows (layers, heads, keys)")
    check_tokens(key_tokens, "key_tokens")
    L, H, K = r.shape
    if K != len(key_tokens):
        raise ValueError(f"rows have {K} keys but there are {len(key_tokens)} key tokens")
    labels = [f"L{layer + 1} H{head + 1}" for layer in range(L) for head in range(H)]
    k_lab = positioned(key_tokens, key_unknown)
    custom = np.empty((L * H, K, 2), dtype=object)
    custom[..., 0] = np.array(labels, dtype=object)[:, None]
    custom[..., 1] = np.array(k_lab, dtype=object)[None, :]
    x, y = list(range(K)), list(range(L * H))
    fig = go.Figure(go.Heatmap(x=x, y=y, z=r.reshape(L * H, K), customdata=custom, coloraxis="coloraxis",
                               hovertemplate="%{customdata[0]}<br>" + _("key") + " %{customdata[1]}<br>"
                                             + _("weight") + " %{z:.4f}<extra></extra>", ygap=0, name="attention"))
    for layer in range(1, L):  # a line between layers
        fig.add_hline(y=layer * H - 0.5, line=dict(color="white", width=3))
    fig.update_layout(
        title=dict(text=title), coloraxis=_coloraxis(), height=max(300, 14 * L * H + 150),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        xaxis=dict(title=dict(text=_("key: the token looked at") if key_axis is None else key_axis), automargin=True,
                   **step_keys_axis(key_tokens, key_unknown)),
        yaxis=dict(title=dict(text=_("layer and head")), tickmode="array", tickvals=y, ticktext=labels,
                   autorange="reversed", automargin=True),
    )
    return fig
