"""Where the source went: how much attention each German token received, and attention rollout."""

import numpy as np
import streamlit as st

import viz
from model.flow import coverage, rollout

from .attention import labels
from .common import Context, chart, subtitle
from .export import downloads
from .share import page_view


@st.fragment
@page_view
def flow_view(ctx: Context):
    cfg, result = ctx.cfg, ctx.result
    st.caption("Coverage: the cross-attention each German token received, summed over every step of the "
               "translation (each step hands out a total of 1). A word the translation dropped stands out low.")
    st.session_state.setdefault("flow_layer", cfg.n_dec_layers - 1)
    layer = st.segmented_control("Decoder layer", list(range(cfg.n_dec_layers)), key="flow_layer", required=True,
                                 format_func=lambda i: str(i + 1))
    received = coverage(result)  # (L, H, S)
    chart(viz.coverage_bars(result.src_tokens, received[layer].mean(axis=0), unknown=result.src_unknown,
                            title=f"Coverage, layer {layer + 1}, mean of the {cfg.n_heads} heads"),
          key="flow_coverage", name=f"coverage-layer{layer + 1}")
    st.markdown("**Attention rollout** (Abnar & Zuidema, 2020)")
    st.caption("Which German words each output token draws on, carried through the encoder: every encoder layer's "
               "mean attention is mixed with the residual as 0.5·I + 0.5·A, the layers are multiplied, and the "
               "chosen decoder layer's cross-attention is applied on top. An approximation of how information "
               "flows, not a causal attribution: it ignores the values, the feed-forward layers and LayerNorm.")
    flow = rollout(result, layer)  # (T, S)
    q_tokens, _ = labels(ctx.result, "tgt")
    chart(viz.attention_heatmap(flow, q_tokens, result.src_tokens, key_unknown=result.src_unknown,
                                title=f"Rollout through the encoder, then cross-attention of layer {layer + 1}",
                                stretch=True,  # rollout spreads weight thinly: 0-1 would be one dark square
                                subtitle=subtitle(result.source)),
          key="flow_rollout", name=f"rollout-layer{layer + 1}", width="content")
    downloads(ctx, shown_map=(f"rollout-layer{layer + 1}", np.asarray(flow), result.tgt_tokens, result.src_tokens))
