"""Where the source went: how much attention each German token received, attention rollout, and what each
encoder layer already holds (DecoderLens).

DecoderLens sits here, not in the decoding trace: it asks the rollout's question about the encoder (what has the
source become after k layers?) and answers it with a whole translation per layer, while the trace follows one
step at a time through the decoder (its logit lens reads the decoder's layers).
"""

import json

import numpy as np
import streamlit as st

import viz
from model.flow import coverage, rollout
from model.i18n import _
from viz.labels import subtitle, token_labels

from . import Context
from .calls import HEAVY, load_translator, waiting_notice
from .export import downloads
from .state import page_view
from .widgets import chart, diff_chips, map_table, table_labels


@st.cache_data(max_entries=32, show_spinner=False)  # its spinner is said where it is called, in the page's language
def decoder_lens(checkpoint: str | None, sentence: str, _waiting=None):
    """Greedy decoding from each encoder layer's output, one full decoding per layer (a heavy computation: it
    takes its turn)."""
    with HEAVY.turn(_waiting):
        return load_translator(checkpoint).decoder_lens(sentence)


@st.fragment
@page_view
def flow_view(ctx: Context):
    cfg, result = ctx.cfg, ctx.result
    # The heavy computation first (drawn last): its notice shows at once, not after the coverage and rollout charts.
    with waiting_notice("DecoderLens") as waiting, st.spinner(_("Decoding from every encoder layer (DecoderLens)…")):
        lens = decoder_lens(ctx.checkpoint, ctx.result.source, _waiting=waiting)
    source, target = ctx.names
    st.caption(_("Coverage: the cross-attention each {source} token received, summed over every step of the "
                 "translation (each step hands out a total of 1). A word the translation dropped stands out low.")
               .format(source=source))
    st.session_state.setdefault("flow_layer", cfg.n_dec_layers - 1)
    layer = st.segmented_control(_("Decoder layer"), list(range(cfg.n_dec_layers)), key="flow_layer", required=True,
                                 format_func=lambda i: str(i + 1))
    received = coverage(result)  # (L, H, S)
    chart(viz.coverage_bars(result.src_tokens, received[layer].mean(axis=0), unknown=result.src_unknown,
                            title=_("Coverage, layer {layer}, mean of the {heads} heads").format(
                                layer=layer + 1, heads=cfg.n_heads)),
          key="flow_coverage", name=f"coverage-layer{layer + 1}")
    map_table(received[layer].mean(axis=0)[:, None], table_labels(result.src_tokens, result.src_unknown),
              [_("attention received")],
              _("Coverage, decoder layer {layer}, mean of the {heads} heads: the cross-attention each {source} token "
                "received over the whole translation").format(layer=layer + 1, heads=cfg.n_heads, source=source),
              key="flow_coverage_table", corner=_("{source} token").format(source=source))
    st.markdown(_("**Attention rollout** (Abnar & Zuidema, 2020)"))
    st.caption(_("Which {source} words each output token draws on, carried through the encoder: every encoder layer's "
                 "mean attention is mixed with the residual as 0.5·I + 0.5·A, the layers are multiplied, and the "
                 "chosen decoder layer's cross-attention is applied on top. An approximation of how information "
                 "flows, not a causal attribution: it ignores the values, the feed-forward layers and LayerNorm.")
               .format(source=source))
    flow = rollout(result, layer)  # (T, S)
    q_tokens, _unknown = token_labels(ctx.result, "tgt")
    chart(viz.attention_heatmap(flow, q_tokens, result.src_tokens, key_unknown=result.src_unknown,
                                title=_("Rollout through the encoder, then cross-attention of layer {layer}").format(
                                    layer=layer + 1),
                                stretch=True,  # rollout spreads weight thinly: 0-1 would be one dark square
                                subtitle=subtitle(result.source)),
          key="flow_rollout", name=f"rollout-layer{layer + 1}", width="content")
    map_table(flow, table_labels(q_tokens), table_labels(result.src_tokens, result.src_unknown),
              _("Attention rollout through the encoder, then cross-attention of decoder layer {layer}; rows: "
                "{target} steps (the token read → the token chosen), columns: {source} tokens").format(
                  layer=layer + 1, target=target, source=source),
              key="flow_rollout_table", corner=_("step \\ {source} token").format(source=source))
    encoder_layers(lens)
    downloads(ctx, shown_map=(f"rollout-layer{layer + 1}", np.asarray(flow), result.tgt_tokens, result.src_tokens),
              extra=[(_("DecoderLens (JSON)"), "decoderlens.json", "application/json",
                      lambda: json.dumps(lens.to_json(), ensure_ascii=False))])


def encoder_layers(lens):
    """DecoderLens (Langedijk et al., 2024): the translation decoded from each encoder layer, against the real one."""
    st.markdown(_("**What each encoder layer already holds** (DecoderLens, Langedijk et al., Findings of NAACL 2024)"))
    n = len(lens.layers)
    st.caption(_("The same decoder, not trained for it, reads the output of encoder layer k instead of layer {n} and "
                 "decodes greedily. Layer {n} gives the real translation; in the rows above it, struck-out tokens are "
                 "in the real translation but not in this one, and bold green ones are in this one only. Where an "
                 "early layer already gives the real translation, the later layers changed little that the decoder "
                 "uses.").format(n=n))
    real = lens.layers[-1]
    for k, (tokens, finished) in enumerate(zip(lens.layers, lens.finished), start=1):
        ops = viz.token_diff(real, tokens)
        left_out, new = (sum(op == kind for op, _token in ops) for kind in ("removed", "added"))
        note = (_("the real translation") if k == n else _("the same as the real one") if not left_out + new else
                _("{left_out} left out, {new} new").format(left_out=left_out, new=new))
        cut = "" if finished else " " + _("<i>(no &lt;eos&gt;: cut at the maximum length)</i>")
        st.markdown(_("**Encoder layer {k}** ({note}):").format(k=k, note=note) + " "
                    + (diff_chips(ops) or _("<i>(empty)</i>")) + cut, unsafe_allow_html=True)
