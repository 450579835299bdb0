"""Word alignments drawn over the map they come from, and the per-head AER grid (model/align.py)."""

import numpy as np
import plotly.graph_objects as go

from model.i18n import N_, _

from .attention import attention_heatmap
from .decoding import head_grid
from .labels import plain

# What a link is, against the hand-checked reference: marker symbol, colour, legend name
LINK_STYLES = {
    "hit": ("circle", "#ffffff", N_("model link, sure in the reference")),
    "possible": ("circle", "#f5c400", N_("model link, possible in the reference")),
    "extra": ("x-thin-open", "#ff3b30", N_("model link, not in the reference")),
    "missed": ("square-open", "#ff8c00", N_("sure reference link the model missed")),
    "model": ("circle", "#ffffff", N_("model link")),
}


def link_classes(links, sure=None, possible=None) -> dict:
    """{class: sorted links}: hit / possible / extra / missed against a reference, or all "model" without one."""
    links = set(links)
    if sure is None:
        return {"model": sorted(links)}
    sure, possible = set(sure), set(possible)
    return {"hit": sorted(links & sure), "possible": sorted((links & possible) - sure),
            "extra": sorted(links - possible), "missed": sorted(sure - links)}


def alignment_map(rows, en_tokens, de_tokens, links, sure=None, possible=None, *, title="", subtitle="",
                  norms=False, names=("German", "English")):
    """The (English words x German words) block of a map, with the links (German index, English index) drawn on
    it; given the reference's sure and possible links, each link is marked hit, possible or extra and each sure
    link the model did not make as missed. names: the source's and the target's language, as the axes say them."""
    fig = attention_heatmap(rows, en_tokens, de_tokens, title=title, subtitle=subtitle, norms=norms,
                            stretch=not norms, query_axis=_("{language} word").format(language=names[1]),
                            key_axis=_("{language} word").format(language=names[0]))
    size = max(6, min(16, int(fig.layout.height / max(len(en_tokens), 1) * 0.45)))
    for name, cells in link_classes(links, sure, possible).items():
        if not cells:
            continue
        symbol, colour, label = LINK_STYLES[name]
        label = _(label)
        fig.add_trace(go.Scatter(
            x=[i for i, _t in cells], y=[t for _i, t in cells], mode="markers", name=label,
            marker=dict(symbol=symbol, size=size, color=colour, line=dict(width=2, color=colour if "open" in symbol
                                                                               else "#202020")),
            customdata=[[plain(en_tokens[t]), plain(de_tokens[i])] for i, t in cells],
            hovertemplate=label + "<br>%{customdata[0]} ← %{customdata[1]}<extra></extra>"))
    fig.update_layout(showlegend=False)  # the view's caption says what each mark is; hover names it too
    return fig


def aer_grid(aer, best=None, title="", low=None, high=None):
    """(L, H) AER per head, one colour range (low, high shared with what it is compared with); the best head
    (lowest AER; `best` = (layer, head) from 0) outlined in red."""
    v = np.asarray(aer, dtype=float)
    fig = head_grid(v, title=title, value=_("AER (lower: a better alignment)"), low=low, high=high)
    if best is None and np.isfinite(v).any():
        best = np.unravel_index(np.nanargmin(v), v.shape)
    if best is not None:
        l, h = map(int, best)
        fig.add_shape(type="rect", x0=h - 0.5, x1=h + 0.5, y0=l - 0.5, y1=l + 0.5, line=dict(color="#ff3b30", width=3))
    return fig
