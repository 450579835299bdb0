"""The training replay: curves over the snapshots with the current one marked, and every head's statistic over time."""

import numpy as np
import plotly.graph_objects as go

from .labels import plain

CURRENT_COLOR = "#ff5000"


def training_curve(labels: list, values: list, current: int, name: str):
    """One measure over the snapshots, evenly spaced (they are log-spaced in steps, so a step axis would squeeze
    the first half into a corner); the current snapshot marked. One figure per measure, so that the page can
    set them side by side or, on a phone, one under another."""
    x = list(range(len(labels)))
    y = [np.nan if v is None else float(v) for v in values]
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines+markers", name=plain(name), customdata=labels,
                               line=dict(color="#4c78a8"), marker=dict(size=5),
                               hovertemplate="step %{customdata}<br>" + plain(name) + " %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[current], y=[y[current]], mode="markers", name="this snapshot", hoverinfo="skip",
                             marker=dict(size=13, color=CURRENT_COLOR, line=dict(width=2, color="#ffffff"))))
    step = max(1, len(labels) // 6)
    fig.update_layout(title=dict(text=plain(name)), height=260, margin=dict(l=10, r=10, t=40, b=10), showlegend=False,
                      xaxis=dict(tickmode="array", tickvals=x[::step], ticktext=labels[::step], tickangle=-45,
                                 title=dict(text="step")))
    return fig


def heads_over_time(values, labels: list, current: int, title="", value="value", low=None, high=None):
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
    custom = np.array([[f"layer {r // H + 1}, head {r % H + 1}, {labels[n]}" for n in range(N)]
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
                                 tickangle=-45, title=dict(text="snapshot")),
                      yaxis=dict(tickmode="array", tickvals=list(range(L * H)), ticktext=rows, autorange="reversed",
                                 tickfont=dict(size=10)))
    return fig
