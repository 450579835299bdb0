"""The line view (what BertViz users know as the head view), in plain Plotly.

Query tokens in the left column, key tokens in the right one, a line from query i to key j
for every weight above a floor, as opaque and thick as the weight, one colour per head.
Clicking a head in the legend hides or shows all its lines (Plotly's own legend toggles);
clicking a token marker reports that token (customdata [side, position]) so the page can
redraw with only its lines: Streamlit hands a chart no hover events, only selections.

With `norms=True` the values are norm-based attention (Kobayashi et al., 2020): lines are as thick as each
value over the layer's largest, and the hover names the norms themselves.

Lines are grouped into a few opacity levels per head, one trace each, so a 30 x 30 map
of 8 heads is some 40 traces rather than 7,200.
"""

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from model.i18n import _

from .attention import NORM_LABEL, check_norms, unchecked
from .labels import check_tokens, check_weights, positioned, tick_labels

HEAD_COLORS = plotly.colors.qualitative.D3  # 10 distinct colours, readable on white and on dark grey
LEVELS = (0.1, 0.25, 0.5, 0.75, 1.0)  # upper edges of the opacity levels
FLOOR = 0.02  # weights below this get no line: they would only be haze
ROW_PX = 26  # vertical room of one token


def head_color(head: int, alpha: float = 1.0) -> str:
    r, g, b = plotly.colors.hex_to_rgb(HEAD_COLORS[head % len(HEAD_COLORS)])
    return f"rgba({r},{g},{b},{alpha:.2f})"


def line_segments(weights: np.ndarray, low: float, high: float, focus=None):
    """x, y (with None breaks) of the lines whose weight is in (low, high]; focus keeps one token's lines.

    weights (Q, K); query i sits at (0, i) and key j at (1, j); focus = ("query" | "key", position).
    """
    keep = (weights > max(low, FLOOR)) & (weights <= high)
    if focus is not None:
        side, pos = focus
        only = np.zeros_like(keep)
        if side == "query" and pos < keep.shape[0]:
            only[pos, :] = True
        elif side == "key" and pos < keep.shape[1]:
            only[:, pos] = True
        keep &= only
    xs, ys = [], []
    for i, j in zip(*np.nonzero(keep)):
        xs += [0, 1, None]
        ys += [int(i), int(j), None]
    return xs, ys


def layer_segments(strengths: np.ndarray, focus=None) -> list:
    """[x, y] of every line trace of attention_lines, in its order (head by head, each opacity level in turn):
    strengths (H, Q, K) in 0..1."""
    out = []
    for h in range(strengths.shape[0]):
        low = 0.0
        for high in LEVELS:
            out.append(list(line_segments(strengths[h], low, high, focus)))
            low = high
    return out


def layer_lines(layer_maps, query_tokens, key_tokens, *, query_unknown=None, key_unknown=None, norms=False) -> dict:
    """What attention_lines draws of one layer, without the figure: each line trace's [x, y] and each token column's
    hover text. A page holding the figure of one layer swaps these in for another (views/maps.js)."""
    values = np.asarray(layer_maps, dtype=float)
    m = values / max(float(values.max()), 1e-12) if norms and values.size else values
    value = NORM_LABEL if norms else _("weight")
    return {"lines": layer_segments(m),
            "hovers": {side: _hovers(tokens, unknown, values, side, value)
                       for side, tokens, unknown in (("query", query_tokens, query_unknown),
                                                     ("key", key_tokens, key_unknown))}}


def attention_lines(layer_maps, query_tokens, key_tokens, *, heads=None, focus=None, title="",
                    query_unknown=None, key_unknown=None, norms=False, segments=True):
    """One layer's heads (H, Q, K) as lines between two token columns.

    heads: the heads drawn at first (others start hidden, a legend click away); None: all.
    focus: ("query" | "key", position) to draw only that token's lines, or None.
    norms: layer_maps holds norm-based attention (any size >= 0): line strength is value / the layer's largest.
    segments=False: the line traces without their x and y, for a page that places each layer's lines itself
    (`layer_lines`, views/maps.js): building and checking the lists is most of this figure's cost.
    """
    values = check_norms(layer_maps, 3, "layer_maps (heads, queries, keys)") if norms else \
        check_weights(layer_maps, 3, "layer_maps (heads, queries, keys)")
    m = values / max(float(values.max()), 1e-12) if norms and values.size else values  # strengths in 0..1
    check_tokens(query_tokens, "query_tokens")
    check_tokens(key_tokens, "key_tokens")
    H, Q, K = m.shape
    if (Q, K) != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"maps have {Q} queries x {K} keys but there are {len(query_tokens)} query tokens "
                         f"and {len(key_tokens)} key tokens")
    shown = set(range(H)) if heads is None else set(heads)
    data = []
    lines = iter(layer_segments(m, focus) if segments else [(None, None)] * (H * len(LEVELS)))
    for h in range(H):
        for level, high in enumerate(LEVELS):
            xs, ys = next(lines)
            data.append(go.Scatter(
                x=xs, y=ys, mode="lines", hoverinfo="skip", legendgroup=f"head{h}", name=_("head {head}").format(head=h + 1),
                showlegend=level == len(LEVELS) - 1,  # the legend swatch in the head's full colour
                visible=True if h in shown else "legendonly",
                line=dict(color=head_color(h, 0.15 + 0.85 * high), width=0.5 + 3.5 * high), _validate=False))
    value = NORM_LABEL if norms else _("weight")
    data += [_column(0, query_tokens, query_unknown, values, "query", focus, value),
             _column(1, key_tokens, key_unknown, values, "key", focus, value)]
    rows = max(Q, K)
    width = max(len(t) for t in tick_labels(query_tokens + key_tokens, None)) if Q + K else 4
    # Built unchecked (viz.attention.unchecked): H x 5 + 2 traces and a layout of plain lists, numbers and strings,
    # which plotly's checks made 27 ms of each sentence's page (now 4).
    return unchecked(data, dict(
        title=dict(text=title), height=ROW_PX * rows + 120, margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        width=2 * 8 * width + 560, clickmode="event+select", dragmode=False, hovermode="closest",
        # The legend under the columns, not beside them: on the right it covered the key tokens and squeezed the
        # query tokens to two letters on a phone.
        legend=dict(title=dict(text=_("heads (click to hide or show)"), side="top"), itemclick="toggle",
                    itemdoubleclick="toggleothers", orientation="h", x=0, xanchor="left", y=0, yanchor="top"),
        xaxis=dict(visible=False, range=[-0.75, 1.75], fixedrange=True), font=dict(size=13),
        yaxis=dict(visible=False, range=[rows - 0.5, -0.8], fixedrange=True),
        annotations=[dict(x=0, y=-0.7, text=_("query"), showarrow=False, xanchor="right"),
                     dict(x=1, y=-0.7, text=_("key"), showarrow=False, xanchor="left")]))


def _hovers(tokens, unknown, maps: np.ndarray, side: str, value: str) -> list[str]:
    """Each token's hover in a column: its name and its strongest partners over the heads (maps (H, Q, K))."""
    full = positioned(tokens, unknown)
    strongest = maps.max(axis=0)  # (Q, K): the largest weight of any head
    per_token = strongest if side == "query" else strongest.T  # (n, partners)
    out = []
    for i in range(len(tokens)):
        top = np.argsort(-per_token[i])[:3]
        other = _("key") if side == "query" else _("query")
        partners = "<br>".join(f"{other} {j}: {per_token[i, j]:.3f}" for j in top)
        strongest_line = _("strongest partners ({value}), any head:").format(value=value)
        out.append(f"{full[i]}<br>{strongest_line}<br>{partners}<extra></extra>")
    return out


def _column(x: int, tokens, unknown, maps: np.ndarray, side: str, focus, value: str = "weight"):
    """One column of token markers with labels; hover names the token's strongest partners over the heads."""
    labels = tick_labels(tokens, unknown)
    full = positioned(tokens, unknown)
    focused = [focus is not None and focus == (side, i) for i in range(len(tokens))]
    return go.Scatter(
        x=[x] * len(tokens), y=list(range(len(tokens))), mode="markers+text", text=labels,
        textposition="middle left" if x == 0 else "middle right", name=f"{side} tokens", showlegend=False,
        customdata=[[side, i, full[i]] for i in range(len(tokens))],
        marker=dict(size=[13 if f else 9 for f in focused], color="rgba(128,128,128,0.8)",
                    line=dict(width=[2 if f else 0 for f in focused], color="#ff5000")),
        hovertemplate=_hovers(tokens, unknown, maps, side, value),
        unselected=dict(marker=dict(opacity=1)), _validate=False)
