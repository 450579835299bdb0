"""Attention heatmaps: one head (or the mean of a layer's heads), every head at once, one decoding step.

Pure functions: numpy arrays and token lists in, a Plotly figure out. Cells sit at
integer positions and tokens are only tick labels, so repeated tokens keep their own
rows and columns. Every figure uses the same fixed 0-1 colour scale; cells a query
may not look at (future positions of the decoder) are drawn grey, not as zeros.
"""

import numpy as np
import plotly.graph_objects as go

from .labels import check_tokens, check_weights, positioned, tick_labels

COLORSCALE = "Viridis"
MASKED_COLOR = "#c8c8c8"
GAP = 1  # empty cells between tiles in the model view


def _coloraxis(title="weight"):
    return dict(cmin=0.0, cmax=1.0, colorscale=COLORSCALE,
                colorbar=dict(title=dict(text=title), thickness=12, len=0.9))


def causal_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """True where a decoder query may not look (a future position)."""
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


def select_head(maps, layer: int, head: int | None) -> np.ndarray:
    """(L, H, Q, K) -> (Q, K): one head, or the mean over the layer's heads when head is None."""
    maps = check_weights(maps, 4, "maps (layers, heads, queries, keys)")
    if not 0 <= layer < maps.shape[0]:
        raise ValueError(f"layer {layer} out of range: the maps have {maps.shape[0]} layers")
    if head is None:
        return maps[layer].mean(axis=0)
    if not 0 <= head < maps.shape[1]:
        raise ValueError(f"head {head} out of range: the maps have {maps.shape[1]} heads")
    return maps[layer, head]


def _masked_trace(x, y, masked, hover, customdata):
    z = np.where(masked, 1.0, np.nan)
    return go.Heatmap(x=x, y=y, z=z, customdata=customdata, colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                      showscale=False, hovertemplate=hover + "masked: a future position<extra></extra>",
                      name="masked", xgap=0, ygap=0)


def attention_heatmap(weights, query_tokens, key_tokens, *, causal=False, title="",
                      query_unknown=None, key_unknown=None,
                      query_axis="query: the token that is looking", key_axis="key: the token looked at"):
    """One (Q, K) attention map as a heatmap; hover shows query, key and the exact weight."""
    w = check_weights(weights, 2, "weights (queries, keys)")
    check_tokens(query_tokens, "query_tokens")
    check_tokens(key_tokens, "key_tokens")
    Q, K = w.shape
    if (Q, K) != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights have shape {w.shape} but there are {len(query_tokens)} query tokens "
                         f"and {len(key_tokens)} key tokens")
    q_lab, k_lab = positioned(query_tokens, query_unknown), positioned(key_tokens, key_unknown)
    custom = np.empty((Q, K, 2), dtype=object)
    custom[..., 0] = np.array(q_lab, dtype=object)[:, None]
    custom[..., 1] = np.array(k_lab, dtype=object)[None, :]
    masked = causal_mask(Q, K) if causal else np.zeros((Q, K), dtype=bool)
    hover = "query %{customdata[0]}<br>key %{customdata[1]}<br>"
    x, y = list(range(K)), list(range(Q))
    fig = go.Figure(go.Heatmap(x=x, y=y, z=np.where(masked, np.nan, w), customdata=custom, coloraxis="coloraxis",
                               hovertemplate=hover + "weight %{z:.4f}<extra></extra>", name="attention"))
    if masked.any():
        fig.add_trace(_masked_trace(x, y, masked, hover, custom))
    fig.update_layout(
        title=dict(text=title), coloraxis=_coloraxis(), height=max(320, 26 * Q + 170),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10), plot_bgcolor="white",
        xaxis=dict(title=dict(text=key_axis), tickmode="array", tickvals=x,
                   ticktext=tick_labels(key_tokens, key_unknown), tickangle=-50, side="bottom"),
        yaxis=dict(title=dict(text=query_axis), tickmode="array", tickvals=y,
                   ticktext=tick_labels(query_tokens, query_unknown), autorange="reversed"),
    )
    return fig


def model_view(maps, query_tokens, key_tokens, *, causal=False, title="", query_unknown=None, key_unknown=None):
    """Every layer (rows) x every head (columns) as small tiles of one heatmap.

    One trace instead of L x H subplots: the browser draws it at once. Hover gives
    layer, head, query, key and weight; gaps between tiles are empty.
    """
    m = check_weights(maps, 4, "maps (layers, heads, queries, keys)")
    check_tokens(query_tokens, "query_tokens")
    check_tokens(key_tokens, "key_tokens")
    L, H, Q, K = m.shape
    if (Q, K) != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"maps have {Q} queries x {K} keys but there are {len(query_tokens)} query tokens "
                         f"and {len(key_tokens)} key tokens")
    rows, cols = L * (Q + GAP) - GAP, H * (K + GAP) - GAP
    z = np.full((rows, cols), np.nan)
    masked_z = np.zeros((rows, cols), dtype=bool)
    custom = np.full((rows, cols, 3), "", dtype=object)
    q_lab = np.array(positioned(query_tokens, query_unknown), dtype=object)
    k_lab = np.array(positioned(key_tokens, key_unknown), dtype=object)
    future = causal_mask(Q, K) if causal else np.zeros((Q, K), dtype=bool)
    for layer in range(L):
        for head in range(H):
            r, c = layer * (Q + GAP), head * (K + GAP)
            z[r:r + Q, c:c + K] = np.where(future, np.nan, m[layer, head])
            masked_z[r:r + Q, c:c + K] = future
            custom[r:r + Q, c:c + K, 0] = f"layer {layer + 1}, head {head + 1}"
            custom[r:r + Q, c:c + K, 1] = q_lab[:, None]
            custom[r:r + Q, c:c + K, 2] = k_lab[None, :]
    hover = "%{customdata[0]}<br>query %{customdata[1]}<br>key %{customdata[2]}<br>"
    x, y = list(range(cols)), list(range(rows))
    fig = go.Figure(go.Heatmap(x=x, y=y, z=z, customdata=custom, coloraxis="coloraxis", hoverongaps=False,
                               hovertemplate=hover + "weight %{z:.4f}<extra></extra>", name="attention"))
    if masked_z.any():
        fig.add_trace(_masked_trace(x, y, masked_z, hover, custom))
    fig.update_layout(
        title=dict(text=title), coloraxis=_coloraxis(), plot_bgcolor="white",
        height=max(260, min(900, 60 + L * (Q + GAP) * max(4, min(14, 900 // max(cols, 1))))),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        xaxis=dict(tickmode="array", tickvals=[h * (K + GAP) + (K - 1) / 2 for h in range(H)],
                   ticktext=[f"head {h + 1}" for h in range(H)], showgrid=False, zeroline=False),
        yaxis=dict(tickmode="array", tickvals=[i * (Q + GAP) + (Q - 1) / 2 for i in range(L)],
                   ticktext=[f"layer {i + 1}" for i in range(L)], autorange="reversed", showgrid=False,
                   zeroline=False, scaleanchor="x", constrain="domain"),
    )
    return fig


def heads_at_step(rows, key_tokens, *, title="", key_unknown=None, key_axis="key: the token looked at"):
    """Where every layer and head looked at one decoding step: (L, H, K) -> heatmap of L*H rows x K."""
    r = check_weights(rows, 3, "rows (layers, heads, keys)")
    check_tokens(key_tokens, "key_tokens")
    L, H, K = r.shape
    if K != len(key_tokens):
        raise ValueError(f"rows have {K} keys but there are {len(key_tokens)} key tokens")
    labels = [f"L{layer + 1} H{head + 1}" for layer in range(L) for head in range(H)]
    k_lab = positioned(key_tokens, key_unknown)
    custom = np.empty((L * H, K, 2), dtype=object)
    custom[..., 0] = np.array(labels, dtype=object)[:, None]
    custom[..., 1] = np.array(k_lab, dtype=object)[None, :]
    x, y = list(range(K)), list(range(L * H))
    fig = go.Figure(go.Heatmap(x=x, y=y, z=r.reshape(L * H, K), customdata=custom, coloraxis="coloraxis",
                               hovertemplate="%{customdata[0]}<br>key %{customdata[1]}<br>"
                                             "weight %{z:.4f}<extra></extra>", ygap=0, name="attention"))
    for layer in range(1, L):  # a line between layers
        fig.add_hline(y=layer * H - 0.5, line=dict(color="white", width=3))
    fig.update_layout(
        title=dict(text=title), coloraxis=_coloraxis(), height=max(300, 14 * L * H + 150),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10), plot_bgcolor="white",
        xaxis=dict(title=dict(text=key_axis), tickmode="array", tickvals=x,
                   ticktext=tick_labels(key_tokens, key_unknown), tickangle=-50),
        yaxis=dict(title=dict(text="layer and head"), tickmode="array", tickvals=y, ticktext=labels,
                   autorange="reversed"),
    )
    return fig
