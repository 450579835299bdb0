"""The training replay: curves over the snapshots with the current one marked, every head's statistic over time,
and one snapshot's attention map."""

import textwrap

import numpy as np
import plotly.graph_objects as go

from model.i18n import N_, _

from .attention import attention_heatmap
from .labels import plain

CURRENT_COLOR = "#ff5000"
SNAPSHOT_AXIS = N_("snapshot, by training step (not to scale)")
# A map's title and sentence wrap to the width the chart gets: its own, and at most what a 390 px phone leaves it.
# Rough widths of one character of a title (16 px) and of a subtitle (11 px), and the height of their lines.
PHONE_PX, TITLE_CHAR_PX, SUBTITLE_CHAR_PX, TITLE_LINE_PX, SUBTITLE_LINE_PX = 350, 7.5, 5.6, 21, 15


def training_curve(labels: list, values: list, current: int, name: str, model: str = ""):
    """One measure over the snapshots, evenly spaced (they are log-spaced in steps, so a step axis would squeeze
    the first half into a corner), and the axis says so; the current snapshot marked. model: whose training run it
    is, under the title (the page's model switch may name another). One figure per measure, so that the page can
    set them side by side or, on a phone, one under another."""
    x = list(range(len(labels)))
    y = [np.nan if v is None else float(v) for v in values]
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines+markers", name=plain(name), customdata=labels,
                               line=dict(color="#4c78a8"), marker=dict(size=5),
                               hovertemplate=_("step") + " %{customdata}<br>" + plain(name)
                               + " %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[current], y=[y[current]], mode="markers", name=_("this snapshot"), hoverinfo="skip",
                             marker=dict(size=13, color=CURRENT_COLOR, line=dict(width=2, color="#ffffff"))))
    step = max(1, len(labels) // 6)
    fig.update_layout(title=dict(text=plain(name), subtitle=dict(text=plain(model))), height=280 if model else 260,
                      margin=dict(l=10, r=10, t=60 if model else 40, b=10), showlegend=False,
                      xaxis=dict(tickmode="array", tickvals=x[::step], ticktext=labels[::step], tickangle=-45,
                                 title=dict(text=_(SNAPSHOT_AXIS))))
    return fig


def heads_over_time(values, labels: list, current: int, title="", value=None, low=None, high=None):
    """(N snapshots, L, H) one number per head per snapshot as a heatmap: a row per head ("L1 H1" ...), a column
    per snapshot, the current column outlined; which heads change first shows as the colour moving."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 3:
        raise ValueError(f"values must be (snapshots, layers, heads), got shape {v.shape}")
    N, L, H = v.shape
    z = v.reshape(N, L * H).T  # (L*H, N)
    rows = [f"L{l + 1} H{h + 1}" for l in range(L) for h in range(H)]
    finite = z[np.isfinite(z)]
    low = float(finite.min()) if low is None and finite.size else (low if low is not None else 0.0)
    high = float(finite.max()) if high is None and finite.size else (high if high is not None else 1.0)
    value = _("value") if value is None else value
    custom = np.array([[_("layer {layer}, head {head}").format(layer=r // H + 1, head=r % H + 1) + f", {labels[n]}"
                        for n in range(N)]
                       for r in range(L * H)])
    fig = go.Figure(go.Heatmap(z=z, x=list(range(N)), y=list(range(L * H)), customdata=custom, colorscale="Viridis",
                               zmin=low, zmax=max(high, low + 1e-9), xgap=1, ygap=1,
                               colorbar=dict(title=dict(text=plain(value)), thickness=12),
                               hovertemplate="%{customdata}<br>" + plain(value) + " %{z:.4f}<extra></extra>"))
    fig.add_shape(type="rect", x0=current - 0.5, x1=current + 0.5, y0=-0.5, y1=L * H - 0.5,
                  line=dict(color=CURRENT_COLOR, width=3))
    for l in range(1, L):
        fig.add_hline(y=l * H - 0.5, line=dict(color="#ffffff", width=2))
    step = max(1, N // 10)
    fig.update_layout(title=dict(text=title), height=140 + 13 * L * H, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(tickmode="array", tickvals=list(range(N))[::step], ticktext=labels[::step],
                                 tickangle=-45, title=dict(text=_("snapshot"))),
                      yaxis=dict(tickmode="array", tickvals=list(range(L * H)), ticktext=rows, autorange="reversed",
                                 tickfont=dict(size=10)))
    return fig


def wrapped(text: str, width_px: float, char_px: float, commas=True) -> list[str]:
    """Plain text in lines of at most width_px (at char_px a character), each escaped: cut after a comma where one
    fits (a title's parts: "Cross-attention, layer 2, head 3, step 25"), else at a space."""
    n = max(int(width_px / char_px), 12)
    if not commas:
        return [plain(line) for line in textwrap.wrap(text, n)] or [""]
    lines: list[str] = []
    for piece in text.split(", "):
        parts = textwrap.wrap(piece, n) or [""]
        if lines and len(lines[-1]) + 2 + len(parts[0]) <= n:
            lines[-1] += ", " + parts.pop(0)
        elif lines:
            lines[-1] += ","
        lines += parts
    return [plain(line) for line in lines]


def snapshot_map(weights, rows: list, keys: list, *, title: str, sentence: str, causal=False, stretch=False):
    """One snapshot's attention map (an `attention_heatmap`), its title and its sentence wrapped to the width the
    chart gets, never cut: an untrained model's output is long (50 tokens at step 0), which makes the map, and with
    it the room for a title, narrow. title and sentence are plain text (escaped here)."""
    fig = attention_heatmap(weights, rows, keys, causal=causal, stretch=stretch, title=plain(title),
                            subtitle=plain(sentence))
    room = min(fig.layout.width, PHONE_PX) - 20  # less the figure's side margins
    title_lines = wrapped(title, room, TITLE_CHAR_PX)
    sentence_lines = wrapped(sentence, room, SUBTITLE_CHAR_PX, commas=False)
    top = 12 + TITLE_LINE_PX * len(title_lines) + SUBTITLE_LINE_PX * len(sentence_lines) + 14
    fig.update_layout(title=dict(text="<br>".join(title_lines), subtitle=dict(text="<br>".join(sentence_lines)),
                                 yref="container", y=1, yanchor="top", pad=dict(t=12)),
                      height=fig.layout.height - fig.layout.margin.t + top, margin=dict(t=top))
    return fig
