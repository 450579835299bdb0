"""Gradient and perturbation attributions: a step x token map of scores with no fixed range, and the source share
of every step by two methods side by side.

Pure functions: numpy arrays and token lists in, Plotly figures out (no torch). The numbers come from
model/attribute.py. The maps are `attention_heatmap`s (viz/attention.py) for their cells, ticks and sizes; only
the colours differ: a score has no upper bound, and a signed one goes below 0.
"""

import numpy as np
import plotly.graph_objects as go

from model.i18n import _

from .attention import COLORSCALE, DIVERGING, attention_heatmap, causal_mask
from .contributions import numbered
from .labels import check_tokens, tick_labels

METHOD_COLOR = "#c03d00"  # the method's own line in share_comparison
OTHER_COLOR = "#5b7db1"  # the line it is read against (ALTI+): contribution_map's blue


def attribution_map(values, step_tokens, key_tokens, *, signed: bool, causal=False, title="", subtitle="",
                    key_unknown=None, key_axis=None, value_name=None, top: float | None = None):
    """A step x token map of attribution scores (T, K), each cell the score itself.

    signed: the scores have a direction (input x gradient, integrated gradients, leave one out, contrastive):
    a diverging scale centred on 0, red for more, blue for less, white 0, running to +-top;
    otherwise (gradient norms, value zeroing) a sequential scale from 0 to top.
    top: where the colours end, e.g. largest_score over every map of a method, so that their colours compare;
    None: this map's largest |score| shown.
    causal: the keys are the decoder inputs, and a step cannot draw on a later one (drawn grey).
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"scores must have 2 dimensions (steps, tokens), got shape {v.shape}")
    if v.size and not np.isfinite(v).all():
        raise ValueError("scores must be finite: recompute the attribution (a NaN or inf came out of the model)")
    if not signed and v.size and v.min() < -1e-6:
        raise ValueError(f"unsigned scores must be >= 0, got {v.min():.3g}: draw them with signed=True")
    # The cells, ticks and sizes of an attention map drawn from the sizes |v|; then the scores themselves.
    fig = attention_heatmap(np.abs(v), step_tokens, key_tokens, causal=causal, title=title, subtitle=subtitle,
                            key_unknown=key_unknown, norms=True,
                            key_axis=_("key token") if key_axis is None else key_axis,
                            query_axis=_("step: the token read → the token chosen"))
    value_name = _("score") if value_name is None else value_name
    masked = causal_mask(*v.shape) if causal else np.zeros(v.shape, dtype=bool)
    top = max(largest_score(v, causal) if top is None else top, 1e-6)
    steps = np.array(numbered(step_tokens), dtype=object)
    for trace in fig.data:  # hover: steps counted from 1 (the page's steps), and the score with its sign
        custom = np.array(trace.customdata, dtype=object)
        custom[..., 0] = steps[:, None]
        trace.customdata = custom.astype(str)
    number = "%{z:+.4f}" if signed else "%{z:.4f}"
    fig.data[0].z = np.where(masked, np.nan, v)
    hover = _("step") + " %{customdata[0]}<br>" + _("from") + " %{customdata[1]}<br>"
    fig.data[0].hovertemplate = hover + f"{value_name} {number}<extra></extra>"
    for trace in fig.data[1:]:  # the masked cells
        trace.hovertemplate = hover + _("masked: a later decoder input") + "<extra></extra>"
    fig.update_layout(coloraxis=dict(cmin=-top if signed else 0.0, cmax=top, cmid=0.0 if signed else None,
                                     colorscale=DIVERGING if signed else COLORSCALE,
                                     colorbar=dict(title=dict(text=value_name), thickness=10, len=0.9, xpad=6)))
    return fig


def largest_score(values, causal=False) -> float:
    """The largest |score| a map shows (a causal map's later decoder inputs are not shown); 0 for no cell."""
    v = np.abs(np.asarray(values, dtype=float))
    shown = v[~causal_mask(*v.shape)] if causal else v.ravel()
    return float(shown.max()) if shown.size else 0.0


def share_comparison(step_tokens, shares: dict, *, title="", subtitle=""):
    """The source share of every step by two (or more) methods, one line each: {name: (T,) shares in [0, 1]}.

    The first is drawn solid in METHOD_COLOR, the others dashed (OTHER_COLOR first).
    """
    check_tokens(step_tokens, "step_tokens")
    T = len(step_tokens)
    fig = go.Figure()
    colors = [METHOD_COLOR, OTHER_COLOR, "#6a9f3a", "#8e6bb8"]
    labels = np.array(numbered(step_tokens), dtype=object).astype(str)
    for i, (name, values) in enumerate(shares.items()):
        s = np.asarray(values, dtype=float)
        if s.shape != (T,):
            raise ValueError(f"{name}: shares must have one value per step ({T}), got shape {s.shape}")
        if s.size and (not np.isfinite(s).all() or s.min() < -1e-6 or s.max() > 1 + 1e-6):
            raise ValueError(f"{name}: shares must be in [0, 1], got values in [{np.nanmin(s):.3g}, "
                             f"{np.nanmax(s):.3g}]")
        fig.add_trace(go.Scatter(
            x=list(range(T)), y=s, name=name, mode="lines+markers", customdata=labels,
            line=dict(color=colors[i % len(colors)], width=2.5 if i == 0 else 2, dash="solid" if i == 0 else "dash"),
            marker=dict(size=8 if i == 0 else 7, symbol="circle" if i == 0 else "diamond"),
            hovertemplate=_("step") + " %{customdata}<br>" + _("{method}: source share").format(method=name)
            + " %{y:.4f}<extra></extra>"))
    ticks = tick_labels(step_tokens)
    narrow = T > 12
    fig.update_layout(
        title=dict(text=title, subtitle=dict(text=subtitle)),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", font=dict(size=12),
                    bgcolor="rgba(0,0,0,0)"),
        height=360 + 5 * max((len(t) for t in ticks), default=0),
        margin=dict(l=10, r=10, t=(95 if subtitle else 70) if title else 40, b=10),
        xaxis=dict(title=dict(text=_("step: the token read → the token chosen")), tickmode="array",
                   tickvals=list(range(T)), ticktext=ticks, tickangle=-90 if narrow else -45, automargin=True,
                   range=[-0.5, T - 0.5], tickfont=dict(size=12), showgrid=False),
        yaxis=dict(title=dict(text=_("source share (rest: the prefix)")), range=[0, 1.05], automargin=True,
                   tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0]))
    return fig
