"""The decoding trace: candidates at one step, and a table of all steps."""

import pandas as pd
import plotly.graph_objects as go

from .labels import plain

CHOSEN_COLOR, OTHER_COLOR = "#ff5000", "#8fa8c8"


def candidates_bar(top, chosen: str, title=""):
    """Top-k candidates [(token, prob), ...] as horizontal bars, most likely on top; the chosen one marked."""
    if not top or not all(isinstance(t, str) and 0 <= float(p) <= 1 for t, p in top):
        raise ValueError("top must be a non-empty list of (token, probability) pairs")
    tokens = [t for t, _ in top]
    probs = [float(p) for _, p in top]
    y = list(range(len(top)))
    labels = [plain(t) + ("  ◀ chosen" if t == chosen else "") for t in tokens]
    fig = go.Figure(go.Bar(
        x=probs, y=y, orientation="h", marker_color=[CHOSEN_COLOR if t == chosen else OTHER_COLOR for t in tokens],
        text=[f"{p:.3f}" for p in probs], textposition="outside", customdata=[plain(t) for t in tokens],
        hovertemplate="%{customdata}<br>probability %{x:.4f}<extra></extra>"))
    fig.update_layout(title=dict(text=title), height=60 + 34 * len(top), margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title=dict(text="probability"), range=[0, 1.12]),
                      yaxis=dict(tickmode="array", tickvals=y, ticktext=labels, autorange="reversed"),
                      plot_bgcolor="white")
    return fig


def steps_table(steps) -> pd.DataFrame:
    """One row per generated token: token, probability, entropy, runner-up and margin."""
    return pd.DataFrame([{"step": i + 1, "token": s.token, "probability": round(s.prob, 4),
                          "entropy (nats)": round(s.entropy, 3), "runner-up": s.runner_up[0],
                          "runner-up probability": round(s.runner_up[1], 4), "margin": round(s.margin, 4)}
                         for i, s in enumerate(steps)])
