"""Positional encodings: the model's learned tables and the paper's sinusoids, as heatmaps and curves."""

import numpy as np
import plotly.graph_objects as go

from model.i18n import _

from model.sinusoid import sinusoidal_table as sinusoidal  # the table the model adds (numpy: no torch here)


def _check_table(table) -> np.ndarray:
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or not np.isfinite(t).all():
        raise ValueError(f"table must be a finite (positions, dimensions) array, got shape {t.shape}")
    return t


def _mark_used(fig, used: int, horizontal: bool, both=False):
    """Shade the positions the current sentence uses (0 .. used-1)."""
    if used <= 0:
        return
    kw = dict(fillcolor="rgba(255, 80, 0, 0.12)", line=dict(color="#ff5000", width=2))
    if horizontal or both:
        fig.add_hrect(y0=-0.5, y1=used - 0.5, **kw)
    if not horizontal or both:
        fig.add_vrect(x0=-0.5, x1=used - 0.5, **kw)


def position_heatmap(table, used: int = 0, title=""):
    """Positions (rows) x dimensions (columns); the sentence's positions outlined."""
    t = _check_table(table)
    P, D = t.shape
    lim = float(np.abs(t).max()) or 1.0
    fig = go.Figure(go.Heatmap(z=t, x=list(range(D)), y=list(range(P)), colorscale="RdBu", zmid=0, zmin=-lim,
                               zmax=lim, colorbar=dict(title=dict(text=_("value")), thickness=12),
                               hovertemplate=_("position") + " %{y}<br>" + _("dimension") + " %{x}<br>" + _("value")
                               + " %{z:.4f}<extra></extra>"))
    _mark_used(fig, used, horizontal=True)
    fig.update_layout(title=dict(text=title), height=420, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title=dict(text=_("dimension"))),
                      yaxis=dict(title=dict(text=_("position")), autorange="reversed"))
    return fig


def cosine_similarity(table) -> np.ndarray:
    t = _check_table(table)
    norm = np.linalg.norm(t, axis=1, keepdims=True)
    unit = t / np.where(norm == 0, 1, norm)
    return unit @ unit.T  # (P, P)


def similarity_heatmap(table, used: int = 0, title=""):
    """Cosine similarity between every pair of positions; nearby positions look alike in a good encoding."""
    sim = cosine_similarity(table)
    P = sim.shape[0]
    fig = go.Figure(go.Heatmap(z=sim, x=list(range(P)), y=list(range(P)), colorscale="RdBu", zmid=0, zmin=-1,
                               zmax=1, colorbar=dict(title=dict(text=_("cosine")), thickness=12),
                               hovertemplate=_("positions {a} and {b}").format(a="%{y}", b="%{x}") + "<br>"
                               + _("cosine") + " %{z:.4f}<extra></extra>"))
    _mark_used(fig, used, horizontal=True, both=True)
    fig.update_layout(title=dict(text=title), height=420, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title=dict(text=_("position")), scaleanchor="y"),
                      yaxis=dict(title=dict(text=_("position")), autorange="reversed"))
    return fig


def dimension_curves(table, dims, used: int = 0, title=""):
    """A few dimensions drawn as curves over position."""
    t = _check_table(table)
    bad = [d for d in dims if not 0 <= d < t.shape[1]]
    if bad:
        raise ValueError(f"dimensions {bad} out of range: the table has {t.shape[1]}")
    fig = go.Figure([go.Scatter(x=list(range(t.shape[0])), y=t[:, d], mode="lines", name=f"dim {d}",
                                hovertemplate=_("dimension") + f" {d}<br>" + _("position") + " %{x}<br>" + _("value")
                                + " %{y:.4f}<extra></extra>")
                     for d in dims])
    _mark_used(fig, used, horizontal=False)
    fig.update_layout(title=dict(text=title), height=360, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title=dict(text=_("position"))), yaxis=dict(title=dict(text=_("value"))))
    return fig


def reach(lengths: dict, n_positions: int) -> np.ndarray:
    """{positions used: sentences} -> share of sentences that reach each position 0 .. n_positions-1."""
    counts = np.zeros(n_positions + 1)
    for used, n in lengths.items():
        counts[min(int(used), n_positions)] += n
    total = counts.sum() or 1.0
    return 1.0 - np.cumsum(counts)[:n_positions] / total  # share with more than p positions used


def neighbour_cosine(table) -> np.ndarray:
    """Cosine similarity of each position's vector with the next one's: (P - 1,)."""
    sim = cosine_similarity(table)
    return np.diag(sim, k=1)


def position_reach(lengths: dict, tables: dict, title=""):
    """Why learned rows turn to noise: how many training sentences reach each position (bars) beside the
    cosine of each position's vector with the next one's, for each table (lines).

    lengths: {name: {positions used: sentences}}; tables: {name: (P, D) table}.
    """
    P = min(_check_table(t).shape[0] for t in tables.values())
    x = list(range(P))
    fig = go.Figure()
    for k, (name, counts) in enumerate(lengths.items()):  # the first as bars, any other as a dotted outline
        share = 100 * reach(counts, P)
        hover = (f"{name}<br>" + _("position") + " %{x}<br>"
                 + _("{share} of training sentences").format(share="%{y:.2f}%") + "<extra></extra>")
        label = _("{name}: training sentences reaching it").format(name=name)
        fig.add_trace(go.Bar(x=x, y=share, name=label, marker_color="rgba(99,110,250,0.5)", hovertemplate=hover)
                      if k == 0 else
                      go.Scatter(x=x, y=share, name=label, mode="lines", line=dict(shape="hvh", dash="dot", width=2,
                                                                                   color="#00a884"),
                                 hovertemplate=hover))
    for name, table in tables.items():
        cos = neighbour_cosine(table)[:P - 1]
        fig.add_trace(go.Scatter(x=x[:-1], y=cos, name=_("{name}: cosine with the next position").format(name=name),
                                 yaxis="y2", mode="lines",
                                 hovertemplate=f"{name}<br>" + _("positions {a} and next").format(a="%{x}")
                                 + "<br>" + _("cosine") + " %{y:.3f}<extra></extra>"))
    fig.update_layout(title=dict(text=title), height=420, margin=dict(l=10, r=10, t=50, b=10), barmode="overlay",
                      bargap=0, legend=dict(orientation="h", y=-0.18),
                      xaxis=dict(title=dict(text=_("position"))),
                      yaxis=dict(title=dict(text=_("% of training sentences")), range=[0, 100]),
                      yaxis2=dict(title=dict(text=_("cosine with the next position")), overlaying="y", side="right",
                                  range=[-1, 1], showgrid=False))
    return fig
