"""Faithfulness: every explanation's deletion curve at one step, on one chart, over the band of random orders.

Pure functions: numbers in, a Plotly figure out (no torch). The numbers come from model/faithfulness.py: for each
method, p(the step's word) as the tokens it ranks first are replaced by <unk> one more at a time.
"""

import numpy as np
import plotly.graph_objects as go

from model.i18n import _

from .labels import check_tokens

RANDOM_COLOR = "rgba(128, 128, 128, 0.25)"  # the band of random orders, readable on either theme
# Distinct colours for up to 10 lines (Plotly's "D3" set), the rest repeat with another dash.
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf"]
DASHES = ["solid", "dot", "dash", "dashdot"]


def deletion_curves(curves: dict, random_mean, random_band, *, removed_first: dict | None = None, title="",
                    subtitle="", highlight: str | None = None):
    """One line per method, k = 0..n tokens removed on the x-axis and p on the y-axis; the random orders' 95% band
    shaded and their mean dashed.

    curves: {method name: (n + 1,) p after removing the first k tokens it ranks}; random_mean (n + 1,);
    random_band: ((n + 1,) low, (n + 1,) high). removed_first: {method name: [token removed at k = 1, 2, ...]} for
    the hover. highlight: a method drawn thicker (the one a person came from).
    """
    low, high = (np.asarray(b, dtype=float) for b in random_band)
    mean = np.asarray(random_mean, dtype=float)
    n = len(mean) - 1
    if n < 1:
        raise ValueError("a deletion curve needs at least one token to remove")
    for name, c in curves.items():
        if np.shape(c) != (n + 1,):
            raise ValueError(f"{name}: a curve needs {n + 1} values (k = 0..{n}), got shape {np.shape(c)}")
        if not np.isfinite(c).all():
            raise ValueError(f"{name}: the curve holds a NaN or inf: measure the step again")
    x = list(range(n + 1))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x + x[::-1], y=[*high, *low[::-1]], fill="toself", fillcolor=RANDOM_COLOR, mode="lines",
                             line=dict(width=0), name=_("random orders (95%)"), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=x, y=mean, name=_("random orders (mean)"), mode="lines",
                             line=dict(color="#808080", dash="dash", width=2),
                             hovertemplate=_("random orders, {k} removed:").format(k="%{x}")
                             + " p %{y:.3f}<extra></extra>"))
    for i, (name, c) in enumerate(curves.items()):
        removed = (removed_first or {}).get(name)
        custom = [_("(nothing)")] + [str(t) for t in removed] if removed is not None else [""] * (n + 1)
        if removed is not None:
            check_tokens(removed, f"removed_first[{name!r}]")
        fig.add_trace(go.Scatter(
            x=x, y=np.asarray(c, dtype=float), name=name, mode="lines+markers", customdata=custom,
            line=dict(color=COLORS[i % len(COLORS)], dash=DASHES[(i // len(COLORS)) % len(DASHES)],
                      width=4 if name == highlight else 2),
            marker=dict(size=8 if name == highlight else 5),
            hovertemplate=f"{name}<br>" + _("{k} removed, the last: {token}").format(k="%{x}", token="%{customdata}")
            + "<br>p %{y:.3f}<extra></extra>"))
    rows = -(-(len(curves) + 2) // 2)  # legend rows: the methods and the random band's two entries, two a row
    fig.update_layout(
        title=dict(text=title, subtitle=dict(text=subtitle)),
        # The legend in two columns at the figure's foot, its rows counted into the bottom margin: a row of entries
        # under the plot wrapped into five rows on a phone and ran out of the chart.
        height=460 + 22 * rows, margin=dict(l=10, r=10, t=(95 if subtitle else 70) if title else 30, b=70 + 22 * rows),
        legend=dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container",
                    entrywidth=0.5, entrywidthmode="fraction", font=dict(size=12)),
        xaxis=dict(title=dict(text=_("tokens removed (replaced by <unk>)")), tickmode="array",
                   tickvals=x, range=[-0.2, n + 0.2], automargin=True, showgrid=False),
        yaxis=dict(title=dict(text=_("p(the step's word)")), rangemode="tozero", automargin=True))
    return fig
