"""Decoding and interventions: candidates at one step, tables of steps and beams, diffs, head importance."""

import difflib

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from model.i18n import _

from .labels import plain

CHOSEN_COLOR, OTHER_COLOR = "#ff5000", "#8fa8c8"


def candidates_bar(top, chosen: str, title=""):
    """Top-k candidates [(token, prob), ...] as horizontal bars, most likely on top; the chosen one marked."""
    if not top or not all(isinstance(t, str) and 0 <= float(p) <= 1 for t, p in top):
        raise ValueError("top must be a non-empty list of (token, probability) pairs")
    tokens = [t for t, _p in top]
    probs = [float(p) for _t, p in top]
    y = list(range(len(top)))
    labels = [plain(t) + ("  ◀ " + _("chosen") if t == chosen else "") for t in tokens]
    fig = go.Figure(go.Bar(
        x=probs, y=y, orientation="h", marker_color=[CHOSEN_COLOR if t == chosen else OTHER_COLOR for t in tokens],
        text=[f"{p:.3f}" for p in probs], textposition="outside", customdata=[plain(t) for t in tokens],
        hovertemplate="%{customdata}<br>" + _("probability") + " %{x:.4f}<extra></extra>"))
    # Each bar has its number, so the value axis draws no grid: a gridline ran through the numbers (a bright one on
    # the dark theme).
    fig.update_layout(title=dict(text=title), height=60 + 34 * len(top), margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title=dict(text=_("probability")), range=[0, 1.12], showgrid=False),
                      yaxis=dict(tickmode="array", tickvals=y, ticktext=labels, autorange="reversed"))
    return fig


def steps_table(steps) -> pd.DataFrame:
    """One row per generated token: token, probability, entropy, runner-up and margin."""
    return pd.DataFrame([{"step": i + 1, "token": s.token, "probability": round(s.prob, 4),
                          "entropy (nats)": round(s.entropy, 3), "runner-up": s.runner_up[0],
                          "runner-up probability": round(s.runner_up[1], 4), "margin": round(s.margin, 4)}
                         for i, s in enumerate(steps)])


def token_diff(before, after) -> list:
    """Word-level diff: [(op, token)] with op "same", "removed" (only in before) or "added" (only in after)."""
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "equal":
            out += [("same", t) for t in before[i1:i2]]
        else:
            out += [("removed", t) for t in before[i1:i2]] + [("added", t) for t in after[j1:j2]]
    return out


def probability_change(tokens, before, after, title=""):
    """For each step, the probability of the originally chosen token before and after an intervention."""
    if not len(tokens) == len(before) == len(after):
        raise ValueError(f"tokens, before and after must have one entry per step, got "
                         f"{len(tokens)}, {len(before)}, {len(after)}")
    x = list(range(len(tokens)))
    labels = [f"{i + 1}: {plain(t)}" for i, t in enumerate(tokens)]
    fig = go.Figure([
        go.Bar(x=x, y=list(before), name=_("original"), marker_color=OTHER_COLOR, customdata=labels,
               hovertemplate="%{customdata}<br>" + _("original") + " %{y:.4f}<extra></extra>"),
        go.Bar(x=x, y=list(after), name=_("after"), marker_color=CHOSEN_COLOR, customdata=labels,
               hovertemplate="%{customdata}<br>" + _("after") + " %{y:.4f}<extra></extra>")])
    fig.update_layout(title=dict(text=title), barmode="group", height=340, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(tickmode="array", tickvals=x, ticktext=[plain(t) for t in tokens], tickangle=-50,
                                 title=dict(text=_("originally chosen token, step by step"))),
                      yaxis=dict(title=dict(text=_("probability")), range=[0, 1.05]),
                      # Under the chart, not above it: above, a title wrapped to three lines on a phone ran into it.
                      legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0))
    return fig


def beam_table(trace) -> pd.DataFrame:
    """The candidates beam search looked at, step by step: hypothesis, score, and what became of it."""
    return pd.DataFrame([{"step": t + 1, "hypothesis": " ".join(c["tokens"]), "log-probability": round(c["score"], 3),
                          "status": c["status"]} for t, step in enumerate(trace) for c in step])


def importance_heatmap(drop, title="", value=None, lim=None, interval=None, digits=2):
    """(L, H) drop in a score when each head alone is switched off; larger = more important.

    lim: the colour range +-lim, shared by the figures that are to be compared (default: this one's
    largest |drop|). interval: (L, H, 2) low and high ends of a bootstrap interval of the drop; heads
    whose interval excludes 0 get a '*' in their cell, and hover gives the interval.
    """
    d = np.asarray(drop, dtype=float)
    if d.ndim != 2:
        raise ValueError(f"drop must be (layers, heads), got shape {d.shape}")
    L, H = d.shape
    lim = float(lim if lim is not None else np.abs(d).max()) or 1.0
    ci = None if interval is None else np.asarray(interval, dtype=float)
    if ci is not None and ci.shape != (L, H, 2):
        raise ValueError(f"interval must be (layers, heads, 2) like drop {d.shape}, got {ci.shape}")
    sure = np.zeros((L, H), bool) if ci is None else (ci[..., 0] > 0) | (ci[..., 1] < 0)
    text = [[f"{d[i, j]:.{digits}f}" + ("*" if sure[i, j] else "") for j in range(H)] for i in range(L)]
    value = _("BLEU drop") if value is None else value
    custom = [[_("layer {layer}, head {head}").format(layer=i + 1, head=j + 1) + ("" if ci is None else "<br>" +
               _("95% interval {low} to {high}").format(low=f"{ci[i, j, 0]:.{digits + 1}f}",
                                                        high=f"{ci[i, j, 1]:.{digits + 1}f}"))
               for j in range(H)] for i in range(L)]
    fig = go.Figure(go.Heatmap(z=d, x=list(range(H)), y=list(range(L)), customdata=custom, colorscale="RdBu_r",
                               zmid=0, zmin=-lim, zmax=lim, colorbar=dict(title=dict(text=value), thickness=12),
                               text=text, texttemplate="%{text}", textfont=dict(size=13 if digits < 3 else 11),
                               xgap=2, ygap=2,
                               hovertemplate="%{customdata}<br>" + value + " %{z:.4f}<extra></extra>"))
    return _heads_layout(fig, L, H, title)


def head_grid(values, title="", value=None, low=None, high=None, digits=2):
    """(L, H) one number per head on a sequential scale, the number in each cell; NaN cells left empty.

    low, high: the colour range, shared by the grids that are to be compared (default: this one's).
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"values must be (layers, heads), got shape {v.shape}")
    L, H = v.shape
    finite = v[np.isfinite(v)]
    low = float(finite.min()) if low is None and finite.size else (low or 0.0)
    high = float(finite.max()) if high is None and finite.size else (high if high is not None else 1.0)
    text = [["" if not np.isfinite(v[i, j]) else f"{v[i, j]:.{digits}f}" for j in range(H)] for i in range(L)]
    value = _("value") if value is None else value
    custom = [[_("layer {layer}, head {head}").format(layer=i + 1, head=j + 1) for j in range(H)] for i in range(L)]
    fig = go.Figure(go.Heatmap(z=v, x=list(range(H)), y=list(range(L)), customdata=custom, colorscale="Viridis",
                               zmin=low, zmax=max(high, low + 1e-9), text=text, texttemplate="%{text}",
                               textfont=dict(size=12), xgap=2, ygap=2,
                               colorbar=dict(title=dict(text=plain(value)), thickness=12),
                               hovertemplate="%{customdata}<br>" + plain(value) + " %{z:.4f}<extra></extra>"))
    return _heads_layout(fig, L, H, title)


def _heads_layout(fig, L: int, H: int, title: str):
    """Axes of a layers x heads grid: heads across, layers down, both counted from 1."""
    fig.update_layout(title=dict(text=title), height=120 + 50 * L, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(tickmode="array", tickvals=list(range(H)), ticktext=[f"{h + 1}" for h in range(H)],
                                 title=dict(text=_("head"))),
                      yaxis=dict(tickmode="array", tickvals=list(range(L)),
                                 ticktext=[_("layer {layer}").format(layer=i + 1) for i in range(L)],
                                 autorange="reversed"))
    return fig
