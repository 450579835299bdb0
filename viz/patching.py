"""Activation patching: each site's effect as a map (layer x position, layer x head), on one fixed diverging scale.

Pure functions: numbers in, Plotly figures out (no torch). The numbers come from model/patch.py: the normalised
logit difference, 0 where a patch does nothing alone (denoising) and 1 where it alone brings the clean word back.
"""

import numpy as np
import plotly.graph_objects as go

from model.i18n import _

from .attention import DIVERGING
from .labels import check_tokens, tick_labels


def effect_map(values, row_labels, col_labels, *, title="", subtitle="", x_title="", y_title="",
               marked=(), hover_row="", hover_col=""):
    """A rows x columns map of effects, red for a positive effect and blue for a negative one, on a scale fixed
    from -1 to 1 (an effect past it keeps the end colour; the hover gives the number). marked: column indices
    whose labels are drawn bold (the swapped tokens)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"effects must be ({len(row_labels)}, {len(col_labels)}), got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("effects must be finite: patch the pair again")
    check_tokens(col_labels, "col_labels")
    ticks = [f"<b>{t}</b>" if i in set(marked) else t for i, t in enumerate(tick_labels(col_labels))]
    text = np.vectorize(lambda x: f"{x:.2f}")(v)
    fig = go.Figure(go.Heatmap(
        z=v, x=list(range(v.shape[1])), y=list(range(v.shape[0])), zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING,
        # numbers in the cells only where a cell has room for "-0.00" at any width down to a phone's (the hover
        # always gives them)
        text=text, texttemplate="%{text}" if v.shape[1] <= 12 else None, textfont=dict(size=11),
        customdata=np.array([[[r, c] for c in col_labels] for r in row_labels], dtype=object),
        hovertemplate=f"{hover_row}%{{customdata[0]}}<br>{hover_col}%{{customdata[1]}}<br>" + _("effect")
                      + " %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text=_("effect")), thickness=10, len=0.9, tickvals=[-1, 0, 1])))
    fig.update_layout(
        title=dict(text=title, subtitle=dict(text=subtitle)),
        height=max(240, 90 + 34 * v.shape[0]) + 6 * max((len(t) for t in col_labels), default=0),
        margin=dict(l=10, r=10, t=((80 if subtitle else 50) + 20 * title.count("<br>")) if title else 20, b=10),
        xaxis=dict(title=dict(text=x_title), tickmode="array", tickvals=list(range(v.shape[1])), ticktext=ticks,
                   tickangle=-45 if v.shape[1] > 8 else 0, automargin=True, showgrid=False),
        yaxis=dict(title=dict(text=y_title), tickmode="array", tickvals=list(range(v.shape[0])),
                   ticktext=list(row_labels), autorange="reversed", automargin=True, showgrid=False))
    return fig
