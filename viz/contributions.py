"""Does attention explain the translation? The source share of every step, and a weight beside its norm.

Pure functions: numpy arrays and token lists in, Plotly figures out (no torch). The numbers come from
model/contributions.py: ALTI+ (Ferrando et al., EMNLP 2022) for the shares, norm-based attention (Kobayashi et
al., EMNLP 2020) for the norms. The step x token maps are `attention_heatmap`s (viz/attention.py).
"""

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from model.i18n import _

from .attention import NORM_LABEL, attention_heatmap
from .inside import MASKED_BAR
from .labels import check_tokens, plain, positioned, tick_labels

SHARE_COLOR = "#5b7db1"  # a step's bar
LOW_COLOR = "#e0501a"  # a step below the low-share threshold: reads on white and on dark grey
LINE_COLOR = "rgba(128,128,128,0.9)"  # the test set's median, in either theme
BAR_PX = (22, 48)  # width of one step's bar room, smallest and largest


def numbered(step_tokens) -> list[str]:
    """Hover labels of steps, counted from 1 as the page counts steps: "1: &lt;sos&gt; → two" (escaped)."""
    return [f"{t + 1}: {plain(token)}" for t, token in enumerate(step_tokens)]


def low_steps(shares, threshold: float | None) -> list[int]:
    """The steps (from 0) whose source share is below the threshold; none without a threshold."""
    s = np.asarray(shares, dtype=float)
    return [] if threshold is None else [int(t) for t in np.flatnonzero(s < threshold)]


def step_bars_layout(step_tokens, title: str, subtitle: str, height: int) -> dict:
    """What the bar charts over the steps share: the title, a legend inside the plot at its top (in room left above
    the bars: above the plot it ran into the subtitle, or a title wrapped for a phone), a height that grows with the
    longest tick label, and the steps' axis, its labels turned as far as the bars' room asks."""
    T = len(step_tokens)
    cell = int(min(max(680 // max(T, 1), BAR_PX[0]), BAR_PX[1]))
    ticks = tick_labels(step_tokens)
    return dict(
        title=dict(text=title, subtitle=dict(text=subtitle)),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="top", font=dict(size=12),
                    bgcolor="rgba(0,0,0,0)"),
        height=height + 5 * max((len(t) for t in ticks), default=0),
        margin=dict(l=10, r=10, t=(75 if subtitle else 50) if title else 20, b=10),
        xaxis=dict(title=dict(text=_("step: the token read → the token chosen")), tickmode="array",
                   tickvals=list(range(T)), ticktext=ticks, tickangle=-90 if cell < 40 else -45, automargin=True,
                   range=[-0.6, T - 0.4], tickfont=dict(size=12)))


def source_share_bars(step_tokens, shares, *, median: float | None = None, threshold: float | None = None,
                      title: str = "", subtitle: str = ""):
    """The source share of every step as a bar, against the test set: its median and low-share threshold as lines.

    step_tokens: one label per step (e.g. "<sos> → two"); shares: (T,) in [0, 1] (the rest is the prefix's).
    Bars below `threshold` are drawn in LOW_COLOR and say so in their hover.
    """
    check_tokens(step_tokens, "step_tokens")
    s = np.asarray(shares, dtype=float)
    T = len(step_tokens)
    if s.shape != (T,):
        raise ValueError(f"shares must have one value per step ({T}), got shape {s.shape}")
    if s.size and (not np.isfinite(s).all() or s.min() < -1e-6 or s.max() > 1 + 1e-6):
        raise ValueError(f"shares must be in [0, 1], got values in [{np.nanmin(s):.3g}, {np.nanmax(s):.3g}]")
    low = set(low_steps(s, threshold))
    labels = numbered(step_tokens)
    below = " — " + _("below the test set's low-share threshold")
    notes = [below if t in low else "" for t in range(T)]
    custom = np.stack([np.array(labels, dtype=object), np.array(notes, dtype=object)], axis=-1).astype(str) \
        if T else np.empty((0, 2), dtype=str)
    fig = go.Figure(go.Bar(
        x=list(range(T)), y=s, marker_color=[LOW_COLOR if t in low else SHARE_COLOR for t in range(T)],
        customdata=custom, name=_("source share"), showlegend=False, text=[f"{v:.2f}" for v in s],
        textposition="outside", cliponaxis=False,
        hovertemplate=_("step") + " %{customdata[0]}<br>" + _("source share")
        + " %{y:.4f}%{customdata[1]}<extra></extra>"))
    for value, name, dash, color in ((median, _("test-set median"), "dash", LINE_COLOR),
                                     (threshold, _("low-share threshold"), "dot", LOW_COLOR)):
        if value is not None:  # a line across the steps, named in the legend (a label on it hid the bars' numbers)
            fig.add_trace(go.Scatter(x=[-0.5, T - 0.5], y=[value, value], mode="lines", name=f"{name} {value:.3f}",
                                     line=dict(color=color, width=2, dash=dash),
                                     hovertemplate=f"{name} {value:.4f}<extra></extra>"))
    fig.update_layout(
        **step_bars_layout(step_tokens, title, subtitle, 400), bargap=0.25,
        showlegend=median is not None or threshold is not None,
        # Each bar has its number: no grid on the value axis to run through the numbers (bright on the dark theme).
        yaxis=dict(title=dict(text=_("source share (rest: the prefix)")), range=[0, 1.3], automargin=True,
                   tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0], showgrid=False))
    return fig


WEIGHT_NORM = (("#c03d00", ".3f"), ("#5b7db1", ".2f"))  # weights_and_norms' two bar charts: colour, number format


def weights_and_norms(key_tokens, weights, norms, mask=None, *, title: str = ""):
    """One query of one head: each key's weight alpha beside the norm of what it adds, ||alpha f(x)||.

    weights, norms: one value per key; mask: False where the key may not be looked at (drawn grey, "masked").
    Hover gives both numbers and ||f(x)|| (the norm / the weight), the length of the key's transformed value.
    """
    check_tokens(key_tokens, "key_tokens")
    w, n = np.asarray(weights, dtype=float), np.asarray(norms, dtype=float)
    K = len(key_tokens)
    if not w.shape == n.shape == (K,):
        raise ValueError(f"weights and norms must each have one value per key ({K}), got {w.shape} and {n.shape}")
    allowed = np.ones(K, bool) if mask is None else np.asarray(mask, bool)
    labels = positioned(key_tokens)
    length = np.divide(n, w, out=np.full(K, np.nan), where=w > 1e-12)
    key, weight, zero, future = _("key"), _("weight"), _("(weight 0)"), _("masked: a future position")
    hover = [f"{key} {lab}<br>{weight} α {a:.4f}<br>{NORM_LABEL} {b:.4f}<br>‖f(x)‖ " +
             (f"{c:.3f}" if np.isfinite(c) else zero) if ok else f"{key} {lab}<br>{future}"
             for lab, a, b, c, ok in zip(labels, w, n, length, allowed)]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=(_("weight α (the map)"), _("{norm}: what it adds").format(norm=NORM_LABEL)))
    x = list(range(K))
    for col, (vals, (base, fmt)) in enumerate(zip((w, n), WEIGHT_NORM), 1):
        fig.add_trace(go.Bar(x=np.where(allowed, vals, 0.0), y=x, orientation="h",
                             marker_color=[base if a else MASKED_BAR for a in allowed],
                             text=[f"{v:{fmt}}" if a else _("masked") for v, a in zip(vals, allowed)],
                             textposition="auto", cliponaxis=False, hovertext=hover, hoverinfo="text",
                             showlegend=False), row=1, col=col)
    fig.update_yaxes(tickmode="array", tickvals=x, ticktext=[plain(t) for t in key_tokens], autorange="reversed",
                     automargin=True)
    fig.update_xaxes(showgrid=False)  # each bar has its number: no gridline through the numbers
    fig.update_layout(title=dict(text=title), height=90 + 24 * K,
                      margin=dict(l=10, r=10, t=70 if title else 40, b=10))
    return fig


def contribution_map(values, step_tokens, key_tokens, *, causal=False, title="", subtitle="", key_unknown=None,
                     key_axis=None):
    """A step x token map of ALTI+ contributions (T, K): an `attention_heatmap` coloured from 0 to its largest
    value (contributions spread thin), its colour bar and hover naming contributions, not weights.

    causal: the keys are the decoder inputs, and a step cannot draw on a later one (drawn grey).
    """
    fig = attention_heatmap(values, step_tokens, key_tokens, causal=causal, title=title, subtitle=subtitle,
                            key_unknown=key_unknown, stretch=True,
                            key_axis=_("key token") if key_axis is None else key_axis,
                            query_axis=_("step: the token read → the token chosen"))
    steps = np.array(numbered(step_tokens), dtype=object)
    hover = _("step") + " %{customdata[0]}<br>" + _("from") + " %{customdata[1]}<br>"
    for k, trace in enumerate(fig.data):  # hover: steps counted from 1 (the page's steps), not row positions from 0
        custom = np.array(trace.customdata, dtype=object)
        custom[..., 0] = steps[:, None]
        trace.customdata = custom.astype(str)
        trace.hovertemplate = hover + (_("contribution") + " %{z:.4f}" if k == 0 else
                                       _("masked: a later decoder input")) + "<extra></extra>"
    fig.update_layout(coloraxis_colorbar_title_text=_("contribution"))
    return fig


BLOCK_COLORS = ("#5b7db1", "#2a9d8f", "#b5838d", "#8d6e63")  # one per decoder feed-forward block (cycled)
ERROR_COLOR = "rgba(128,128,128,0.75)"  # a transcoder's error: grey in either theme


def ffn_logit_bars(step_tokens, blocks, parts, error=None, *, title: str = "", subtitle: str = ""):
    """Each decoder feed-forward block's part of every written word's logit (model/contributions.py direct_logits):
    one group of bars per step, one bar per block; with a transcoder, each bar splits into what its features (and
    dense part) wrote and its error, the error stacked in grey on the same bar.

    step_tokens: one label per step; blocks: labels of the blocks; parts: (T, B) the block's part (with error:
    the transcoder's part, features and dense); error: (T, B) or None.
    """
    check_tokens(step_tokens, "step_tokens")
    p = np.asarray(parts, dtype=float)
    T, B = len(step_tokens), len(blocks)
    if p.shape != (T, B) or (error is not None and np.shape(error) != (T, B)):
        raise ValueError(f"parts (and error) must be (steps, blocks) = ({T}, {B}), got {p.shape}")
    labels = numbered(step_tokens)
    fig = go.Figure()
    for b, name in enumerate(blocks):
        color = BLOCK_COLORS[b % len(BLOCK_COLORS)]
        what = (_("{block}, its features:") if error is not None else _("{block}, the block:")).format(block=name)
        fig.add_trace(go.Bar(x=list(range(T)), y=p[:, b], name=name,
                             offsetgroup=str(b), marker_color=color, customdata=np.array(labels, dtype=object),
                             hovertemplate=_("step") + f" %{{customdata}}<br>{what} %{{y:+.3f}}<extra></extra>"))
        if error is not None:
            e = np.asarray(error, dtype=float)[:, b]
            fig.add_trace(go.Bar(x=list(range(T)), y=e, name=_("error (grey)"), offsetgroup=str(b), base=p[:, b],
                                 marker=dict(color=ERROR_COLOR, line=dict(color=color, width=1.5)),
                                 showlegend=b == B - 1, legendgroup="error",
                                 customdata=np.array(labels, dtype=object),
                                 hovertemplate=_("step") + " %{customdata}<br>"
                                 + _("{block}, error (FFN − transcoder):").format(block=name)
                                 + " %{y:+.3f}<extra></extra>"))
    ends = np.concatenate([p.ravel(), (p + (0 if error is None else np.asarray(error, dtype=float))).ravel(), [0.0]])
    low, high = float(ends.min()), float(ends.max())
    span = max(high - low, 1e-6)
    fig.update_layout(
        **step_bars_layout(step_tokens, title, subtitle, 420), barmode="group", bargap=0.2,
        yaxis=dict(title=dict(text=_("part of the chosen word's logit")), automargin=True, zeroline=True,
                   range=[low - 0.05 * span, high + 0.45 * span]))
    return fig
