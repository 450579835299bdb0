"""Inside one head: how one query token's weights come about, and what the layer makes of them.

Every number is the model's own, captured in the same forward pass that draws the maps
(`Translator.inside`), never recomputed here.
"""

import numpy as np
import streamlit as st

import viz
from model.heads import KIND_NAMES, n_layers

from .attention import labels
from .common import Context, chart, int_param, load_translator, map_table, table_labels, weighted_norms
from .export import downloads
from .share import page_view

KIND_ORDER = ["cross", "enc", "dec"]


def read_link(params, cfg, notes: list):
    """kind, layer and head (from 1) of the head followed, and the query (from 0, as the token positions are)."""
    kind = params.get("kind", "cross")
    if kind not in KIND_NAMES:
        notes.append(f"kind={kind[:40]!r} is not one of {', '.join(KIND_NAMES)}")
        kind = "cross"
    st.session_state.inside_kind = kind
    layer = int_param(params, "layer", 1, n_layers(cfg, kind), notes)
    head = int_param(params, "head", 1, cfg.n_heads, notes)
    if layer is not None:
        st.session_state.inside_layer = layer - 1
    if head is not None:
        st.session_state.inside_head = head - 1
    query = int_param(params, "query", 0, cfg.max_positions - 1, notes)
    if query is not None:
        st.session_state.inside_query = query  # the view clamps it to the sentence


def link_params(cfg) -> dict:
    s = st.session_state
    return dict(kind=s.get("inside_kind", "cross"), layer=str(s.get("inside_layer", 0) + 1),
                head=str(s.get("inside_head", 0) + 1), query=str(s.get("inside_query", 0)))


@st.cache_data(max_entries=32, show_spinner="Following the computation…")
def inside(checkpoint: str | None, sentence: str, output_tokens: tuple):
    """Everything one teacher-forced pass over the greedy output computes, per layer, kind and head."""
    return load_translator(checkpoint).inside(sentence, list(output_tokens))


def step(title: str, text: str):
    st.markdown(f"**{title}**")
    st.caption(text)


@st.fragment
@page_view
def inside_view(ctx: Context):
    cfg, result = ctx.cfg, ctx.result
    st.caption("Pick one attention head and one query token, and follow the computation with this sentence's real "
               "numbers: the query's vector, its query q, every key's k and value v, the scores, the softmax, the "
               "weighted sum, and what the layer does with the result.")
    controls = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    st.session_state.setdefault("inside_kind", "cross")
    kind = controls.segmented_control("Attention", KIND_ORDER, key="inside_kind", required=True,
                                      format_func=lambda k: KIND_NAMES[k], width="content")
    L = n_layers(cfg, kind)
    st.session_state.setdefault("inside_layer", 0)
    st.session_state.setdefault("inside_head", 0)
    st.session_state.inside_layer = min(st.session_state.inside_layer, L - 1)
    layer = controls.segmented_control("Layer", list(range(L)), key="inside_layer", required=True,
                                       format_func=lambda i: str(i + 1), width="content")
    head = controls.segmented_control("Head", list(range(cfg.n_heads)), key="inside_head", required=True,
                                      format_func=lambda h: str(h + 1), width="content")
    q_side = "src" if kind == "enc" else "tgt"
    q_labels, _ = labels(ctx.result, q_side)
    st.session_state.setdefault("inside_query", 0)
    st.session_state.inside_query = min(st.session_state.inside_query, len(q_labels) - 1)
    query = st.select_slider("Query token (the row that is looking)", list(range(len(q_labels))), key="inside_query",
                             format_func=lambda i: f"{i}: {q_labels[i]}")
    tr = inside(ctx.checkpoint, result.source, tuple(s.token for s in result.steps)).head(kind, layer, head, query)
    hs, D = len(tr.q), len(tr.x)
    where = {"enc": "the encoder layer's input: the embedding plus position for layer 1, the previous layer's "
                    "output after that",
             "dec": "the decoder layer's input: the embedded English so far for layer 1, the previous layer's "
                    "output after that",
             "cross": "the decoder state after this layer's self-attention sublayer; the keys and values come "
                      "from the encoder's final output (the German)"}[kind]
    name = f"{KIND_NAMES[kind]}, layer {layer + 1}, head {head + 1}, query {query}: “{q_labels[query]}”"
    st.markdown(f"#### {viz.plain(name)}")

    step("1. The query's input vector x", f"What this sublayer received for “{tr.query_token}”: {where}. "
         f"{D} numbers.")
    chart(viz.vector_strips(tr.x[None], [tr.query_token], value="x"), key="inside_x", name="x")
    step("2. Query, keys and values of this head",
         f"q = x·W_Q, k = x·W_K, v = x·W_V, each cut to this head's {hs} dimensions. One q for the query; one k "
         "and one v for every key token.")
    c1, c2 = st.columns(2)
    with c1:
        chart(viz.vector_strips(np.vstack([tr.q[None], tr.k]), [f"q: {tr.query_token}"]
                                + [f"k: {t}" for t in tr.key_tokens], value="q, k"), key="inside_qk", name="q-k")
    with c2:
        chart(viz.vector_strips(tr.v, [f"v: {t}" for t in tr.key_tokens], value="v"), key="inside_v", name="v")
    masked = int((~np.asarray(tr.mask, bool)).sum())
    mask_text = (f"{masked} future position(s) are masked: the decoder may not look ahead, so their scaled score is "
                 "set to a very large negative number and their weight is exactly 0." if masked else
                 "Nothing is masked here. With a batch of sentences, padding keys would be masked the same way "
                 "(weight exactly 0); one sentence has no padding.")
    step("3. Scores, scaled scores, softmax",
         f"The score of each key is q·k (how well it answers the query); divided by √{hs} = {np.sqrt(hs):.2f} so "
         f"that the softmax does not saturate; then softmax turns them into weights that sum to 1. {mask_text}")
    chart(viz.score_chain(tr.key_tokens, tr.scores, tr.scaled, tr.weights, tr.mask), key="inside_scores",
          name="scores")
    step("4. The weighted sum of the values: this head's output",
         f"Each v is scaled by its weight; their sum is the head's output for this query ({hs} numbers). "
         f"The weights sum to {float(np.sum(tr.weights)):.6f}.")
    c1, c2 = st.columns(2)
    with c1:
        chart(viz.vector_strips(tr.weighted_v, [f"{w:.3f} × v: {t}" for w, t in zip(tr.weights, tr.key_tokens)],
                                value="weight × v"), key="inside_wv", name="weighted-v")
    with c2:
        chart(viz.vector_strips(tr.head_output[None], [f"head {head + 1}"], value="output"), key="inside_out",
              name="head-output")
    norms = weighted_norms(ctx.checkpoint, result.source, tuple(s.token for s in result.steps)).norms[kind]
    step("Weight or norm? What each key adds",
         "A weight says how much a key is weighed; what it adds to the output is the weight times its value, and "
         "values differ in length. Right: ‖α·f(x)‖, the length of the weighted value after this head's part of "
         "W_O (f(x) = (x·W_V + b_V)·W_O of the head; Kobayashi et al., EMNLP 2020). A large weight on a short "
         "vector moves the query little; hover a bar for ‖f(x)‖ itself.")
    chart(viz.weights_and_norms(tr.key_tokens, tr.weights, norms[layer, head, query], tr.mask), key="inside_norms",
          name="weights-and-norms")
    hidden = ~np.asarray(tr.mask, bool)  # (K,): keys the query may not see
    map_table(np.stack([tr.scores, tr.scaled, tr.weights, norms[layer, head, query]], axis=1),
              table_labels(tr.key_tokens), ["score q·k", f"scaled q·k / √{hs}", "weight α", "‖α·f(x)‖"],
              f"{name}: for every key, its score, scaled score, weight and weighted norm",
              key="inside_keys_table", corner="key", masked=np.repeat(hidden[:, None], 4, axis=1))
    step("5. All heads together, then W_O, the residual and LayerNorm",
         f"The {cfg.n_heads} heads' outputs are concatenated ({cfg.n_heads} × {hs} = {D}) and projected by W_O; "
         "the result is added to x (the residual connection) and normalised (LayerNorm, post-LN as in the "
         "paper). After the feed-forward sublayer this becomes the layer's output for the token.")
    chart(viz.vector_strips(tr.all_heads, [f"head {h + 1}" for h in range(cfg.n_heads)], highlight=head,
                            value="output"), key="inside_heads", name="all-heads")
    chart(viz.vector_strips(np.vstack([tr.attn_out, tr.residual, tr.normed, tr.layer_output]),
                            ["after W_O", "x + after W_O", "LayerNorm", "layer output"], value="value"),
          key="inside_after", name="after-w-o")
    downloads(ctx)
