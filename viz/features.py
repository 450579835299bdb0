"""Feed-forward features (model/transcoders.py): a feature's activation histogram.

Pure functions: numbers in, Plotly figures out (no torch).
"""

import numpy as np
import plotly.graph_objects as go

from model.i18n import _

BAR_COLOR = "#2a9d8f"


def feature_histogram(edges, counts, *, title: str = ""):
    """How often a feature takes each activation on the training tokens (only where it is active): one bar per bin,
    `edges` (n + 1) from 0 to its largest activation, `counts` (n); a log count axis (the strongest are rare)."""
    e, c = np.asarray(edges, dtype=float), np.asarray(counts, dtype=float)
    if e.ndim != 1 or c.shape != (len(e) - 1,):
        raise ValueError(f"edges must be one longer than counts, got {e.shape} and {c.shape}")
    mid, width = (e[:-1] + e[1:]) / 2, np.diff(e)
    decades = np.log10(c.max() / c[c > 0].min()) if (c > 0).any() else 0.0
    fig = go.Figure(go.Bar(x=mid, y=c, width=width, marker_color=BAR_COLOR,
                           customdata=np.stack([e[:-1], e[1:]], -1),
                           hovertemplate=_("activation {low}–{high}: {n} tokens").format(
                               low="%{customdata[0]:.2f}", high="%{customdata[1]:.2f}", n="%{y:,}")
                           + "<extra></extra>"))
    fig.update_layout(title=dict(text=title), height=300, margin=dict(l=10, r=10, t=50, b=10), bargap=0.05,
                      xaxis=dict(title=dict(text=_("activation")), automargin=True),
                      # Plotly's own log ticks label every digit, which overlap on a phone: the powers of ten where
                      # the counts span two decades or more, else 1, 2 and 5 in each
                      yaxis=dict(title=dict(text=_("tokens")), type="log", dtick=1 if decades >= 2 else "D2",
                                 automargin=True))
    return fig
