"""Inside one head: vectors as coloured strips and the score -> scaled -> weight chain as bars.

Pure functions: numpy arrays and token lists in, Plotly figures out.
"""

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from model.i18n import _

from .labels import check_tokens, plain, positioned

VECTOR_SCALE = "RdBu_r"  # diverging: negative blue, positive red, 0 white
MASKED_BAR = "#c8c8c8"  # a key the query may not look at
# score_chain's three bar charts: colour and number format of each (a page redrawing another query uses the same)
CHAIN = (("#5b7db1", ".2f"), ("#5b7db1", ".2f"), ("#c03d00", ".3f"))


def vector_strips(vectors, labels, *, title="", highlight=None, value=None):
    """(n, d) vectors as n rows of d coloured cells on a symmetric scale; hover gives row, dimension and value.

    highlight: a row index to outline (e.g. this head among all heads).
    """
    v = np.atleast_2d(np.asarray(vectors, dtype=float))
    if v.ndim != 2 or not np.isfinite(v).all():
        raise ValueError(f"vectors must be a finite (rows, dimensions) array, got shape {v.shape}")
    check_tokens(labels, "labels")
    n, d = v.shape
    if len(labels) != n:
        raise ValueError(f"{n} vectors but {len(labels)} labels")
    value = _("value") if value is None else value
    lim = float(np.abs(v).max()) or 1.0
    rows = [plain(t) for t in labels]
    custom = np.array(rows, dtype=object)[:, None].repeat(d, axis=1)
    fig = go.Figure(go.Heatmap(z=v, x=list(range(d)), y=list(range(n)), customdata=custom, colorscale=VECTOR_SCALE,
                               # A 1 px gap between cells, but not across 256 dimensions or more: on a phone such a
                               # cell is under a pixel wide, and the gaps would hide every one of them.
                               zmid=0, zmin=-lim, zmax=lim, xgap=1 if d <= 64 else 0, ygap=2,
                               colorbar=dict(title=dict(text=value), thickness=10, len=1, nticks=3),
                               hovertemplate="%{customdata}<br>" + _("dimension") + " %{x}<br>" + value
                                             + " %{z:.4f}<extra></extra>"))
    if highlight is not None:
        fig.add_hrect(y0=highlight - 0.5, y1=highlight + 0.5, line=dict(color="#c03d00", width=3))
    fig.update_layout(title=dict(text=title), height=max(180, 90 + 26 * n),
                      margin=dict(l=10, r=10, t=45 if title else 15, b=30),
                      xaxis=dict(title=dict(text=_("dimension")), showgrid=False, zeroline=False),
                      yaxis=dict(tickmode="array", tickvals=list(range(n)), ticktext=rows, autorange="reversed",
                                 showgrid=False, zeroline=False, automargin=True))
    return fig


def score_chain(key_tokens, scores, scaled, weights, mask=None, *, title=""):
    """Three bar charts over the keys: raw scores q.k, scaled scores q.k/sqrt(d_k), softmax weights.

    Masked keys (mask False) are drawn grey and marked: their scaled score is replaced by a very
    large negative number before the softmax, so their weight is exactly 0.
    """
    check_tokens(key_tokens, "key_tokens")
    s, c, w = (np.asarray(a, dtype=float) for a in (scores, scaled, weights))
    K = len(key_tokens)
    if not s.shape == c.shape == w.shape == (K,):
        raise ValueError(f"scores, scaled and weights must each have one value per key ({K}), got "
                         f"{s.shape}, {c.shape}, {w.shape}")
    allowed = np.ones(K, bool) if mask is None else np.asarray(mask, bool)
    labels = positioned(key_tokens)
    x = list(range(K))
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=(_("1. score<br>q·k"), _("2. scaled<br>÷ √d_k"), _("3. softmax:<br>the weights")))
    colors = lambda base: [base if a else MASKED_BAR for a in allowed]  # noqa: E731
    for col, (vals, (base, fmt)) in enumerate(zip((s, c, w), CHAIN), 1):
        text = [f"{v:{fmt}}" if a else _("masked") for v, a in zip(vals, allowed)]
        fig.add_trace(go.Bar(x=np.where(allowed, vals, 0.0), y=x, orientation="h", marker_color=colors(base),
                             text=text, textposition=["auto" if a else "outside" for a in allowed],
                             cliponaxis=False, customdata=labels, showlegend=False,
                             hovertemplate=_("key") + " %{customdata}<br>%{text}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(tickmode="array", tickvals=x, ticktext=[plain(t) for t in key_tokens], autorange="reversed",
                     automargin=True)
    # The column titles take two lines: on one line each, they overprinted their neighbours on a phone (390 px).
    fig.update_layout(title=dict(text=title), height=106 + 24 * K,
                      margin=dict(l=10, r=10, t=86 if title else 56, b=10))
    return fig


def coverage_bars(tokens, received, *, title="", unknown=None):
    """How much cross-attention each source token received over all steps (a row sum of 1 per step)."""
    check_tokens(tokens, "tokens")
    r = np.asarray(received, dtype=float)
    if r.shape != (len(tokens),):
        raise ValueError(f"received must have one value per token ({len(tokens)}), got shape {r.shape}")
    labels = positioned(tokens, unknown)
    fig = go.Figure(go.Bar(x=list(range(len(tokens))), y=r, marker_color="#5b7db1", customdata=labels,
                           text=[f"{v:.2f}" for v in r], textposition="outside",
                           hovertemplate="%{customdata}<br>" + _("received") + " %{y:.3f}<extra></extra>"))
    fig.update_layout(title=dict(text=title), height=300, margin=dict(l=10, r=10, t=45 if title else 15, b=10),
                      xaxis=dict(tickmode="array", tickvals=list(range(len(tokens))),
                                 ticktext=[plain(t) for t in tokens], tickangle=-45, automargin=True),
                      yaxis=dict(title=dict(text=_("attention received (sum over steps)"))))
    return fig
