"""Inside one head: how one query token's weights come about, and what the layer makes of them.

Every number is the model's own, captured in the same forward pass that draws the maps
(`Translator.inside`), never recomputed here.
"""

import html
import math

import numpy as np
import streamlit as st

import viz
from model.heads import KIND_NAMES, n_layers
from model.i18n import N_, _, kept
from viz.labels import positioned, token_labels

from . import Context, guess
from .calls import inside, weighted_norms
from .export import downloads
from .instant import figure_json, float32, show
from .state import int_param, page_view
from .widgets import table_labels, tutorial_names

KIND_ORDER = ["cross", "enc", "dec"]
# What the attention sublayer of each layer computes (Translator.inside's sublayers), as views/inside.js reads it.
ARRAYS = ("x", "q", "k", "v", "scores", "scaled", "weights", "mask", "heads", "attn_out", "residual", "normed",
          "layer_output")
AFTER = [N_("after W_O"), N_("x + after W_O"), "LayerNorm", N_("layer output")]  # the rows of the last figure


def read_link(params, cfg, notes: list):
    """kind, layer and head (from 1) of the head followed, and the query (from 0, as the token positions are)."""
    kind = params.get("kind", "cross")
    if kind not in KIND_NAMES:
        notes.append(_("{key}={value} is not one of {options}").format(key="kind", value=repr(kind[:40]),
                                                                       options=", ".join(KIND_NAMES)))
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


@st.fragment
@page_view
def inside_view(ctx: Context):
    cfg, result = ctx.cfg, ctx.result
    st.caption(_("Pick one attention head and one query token, and follow the computation with this sentence's real "
                 "numbers: the query's vector, its query q, every key's k and value v, the scores, the softmax, the "
                 "weighted sum, and what the layer does with the result."))
    # The kind chooses which numbers the page holds (a script run); the layer, the head and the query token are
    # picked in the browser (views/inside.js), which holds every layer, head and query of that kind.
    st.session_state.setdefault("inside_kind", "cross")
    kind = st.segmented_control(_("Attention"), KIND_ORDER, key="inside_kind", required=True,
                                format_func=kept(lambda k: _(KIND_NAMES[k])), width="content")
    L = n_layers(cfg, kind)
    layer = st.session_state.inside_layer = min(st.session_state.get("inside_layer", 0), L - 1)
    q_side = "src" if kind == "enc" else "tgt"
    q_labels, _q_unknown = token_labels(result, q_side)
    query = st.session_state.inside_query = min(st.session_state.get("inside_query", 0), len(q_labels) - 1)
    head = st.session_state.get("inside_head", 0)
    inside_all = inside(ctx.checkpoint, result.source, tuple(s.token for s in result.steps))
    tr = inside_all.head(kind, layer, head, query)
    q = guess.head_question(result, tr, kind, layer, head, query) if guess.on() else None
    if guess.hidden(q):  # guess first: the head's numbers wait for the answer
        return
    if q:
        guess.marked_row(q, query, tr.weights[tr.mask], result, kind, key="guess_row_inside")
    a = inside_all.sublayers[kind]
    norms = weighted_norms(ctx.checkpoint, result.source, tuple(s.token for s in result.steps)).norms[kind]
    queries = inside_all.src_tokens if kind == "enc" else inside_all.tgt_tokens
    hs, D, H = len(tr.q), len(tr.x), cfg.n_heads
    where = {"enc": _("the encoder layer's input: the embedding plus position for layer 1, the previous layer's "
                      "output after that"),
             "dec": _("the decoder layer's input: the embedded {target} so far for layer 1, the previous "
                      "layer's output after that").format(target=ctx.names[1]),
             "cross": _("the decoder state after this layer's self-attention sublayer; the keys and values come "
                        "from the encoder's final output (the {source})").format(source=ctx.names[0])}[kind]
    esc = [html.escape(t, quote=False) for t in tr.key_tokens]
    st.caption(tutorial_names(ctx.checkpoint))
    show("inside", {
        "slug": "inside", "layers": L, "heads": H, "pick": {"layer": layer, "head": head, "query": query},
        "kind": kind, "name": _(KIND_NAMES[kind]), "hs": hs, "text": teaching(where, hs, D, H, cfg.norm_position),
        "queries": q_labels, "query_tokens": queries, "keys": tr.key_tokens, "keys_plain": [viz.plain(t) for t in
                                                                                          tr.key_tokens],
        "labels": {"x": [viz.plain(t) for t in queries], "q": [viz.plain(f"q: {t}") for t in queries],
                   "k": [viz.plain(f"k: {t}") for t in tr.key_tokens], "v": [viz.plain(f"v: {t}") for t in tr.key_tokens],
                   "wv": esc, "keys_table": table_labels(tr.key_tokens), "positioned": positioned(tr.key_tokens)},
        "bars": {"chain": viz.CHAIN, "norms": viz.WEIGHT_NORM, "masked": viz.MASKED_BAR},
        # every layer's numbers, (L, ...) each: the figures below are the server's pick, and the browser swaps
        "arrays": {name: float32(a[name]) for name in ARRAYS} | {"norms": float32(norms)},
        "figures": {
            "x": figure_json(viz.vector_strips(tr.x[None], [tr.query_token], value="x")),
            "qk": figure_json(viz.vector_strips(np.vstack([tr.q[None], tr.k]), [f"q: {tr.query_token}"]
                                                + [f"k: {t}" for t in tr.key_tokens], value="q, k")),
            "v": figure_json(viz.vector_strips(tr.v, [f"v: {t}" for t in tr.key_tokens], value="v")),
            "scores": figure_json(viz.score_chain(tr.key_tokens, tr.scores, tr.scaled, tr.weights, tr.mask)),
            "wv": figure_json(viz.vector_strips(tr.weighted_v, [f"{w:.3f} × v: {t}" for w, t in
                                                                zip(tr.weights, tr.key_tokens)],
                                                value=_("weight × v"))),
            "out": figure_json(viz.vector_strips(tr.head_output[None], [_("head {head}").format(head=head + 1)],
                                                 value=_("output"))),
            "norms": figure_json(viz.weights_and_norms(tr.key_tokens, tr.weights, norms[layer, head, query],
                                                       tr.mask)),
            "heads": figure_json(viz.vector_strips(tr.all_heads, [_("head {head}").format(head=h + 1)
                                                                  for h in range(H)], highlight=head,
                                                   value=_("output"))),
            "after": figure_json(viz.vector_strips(np.vstack([tr.attn_out, tr.residual, tr.normed, tr.layer_output]),
                                                   after_rows(cfg.norm_position), value=_("value"))),
        },
    }, key="inside_head_query")
    downloads(ctx)


def after_rows(norm_position: str) -> list[str]:
    """The last figure's rows: post-LN normalises the sum; a pre-LN model normalised the sublayer's input instead."""
    if norm_position == "post":
        return [_(row) for row in AFTER]  # "LayerNorm", a name, is in no catalogue: it stays as it is
    return [_("after W_O"), _("x + after W_O (the sublayer's output)"), _("LayerNorm(x): what the heads read"),
            _("layer output")]


def teaching(where: str, hs: int, D: int, H: int, norm_position: str = "post") -> dict:
    """The view's text, which views/inside.js shows for every pick: each section's title and note (the browser fills
    {token}, the query token; {masked}, how many keys it may not see, with the `masked` note then; {sum}, its
    weights' sum), the query slider's name, the table's switch and caption, the last figure's rows."""
    # {token}, {masked} and {sum} are the browser's to fill: each is given itself here, to stay in the text
    browser = dict(token="{token}", masked="{masked}", sum="{sum}")
    scores = _("The score of each key is q·k (how well it answers the query); divided by √{hs} = {root:.2f} so that "
               "the softmax does not saturate; then softmax turns them into weights that sum to 1.").format(
                   hs=hs, root=math.sqrt(hs)) + " "
    heads = (_("The {H} heads' outputs are concatenated ({H} × {hs} = {D}) and projected by W_O; the result is added "
               "to x (the residual connection) and normalised (LayerNorm, post-LN as in the paper).")
             if norm_position == "post" else
             _("The {H} heads' outputs are concatenated ({H} × {hs} = {D}) and projected by W_O; the result is added "
               "to x (the residual connection) and not normalised: this model is pre-LN, its LayerNorm came before "
               "the heads (x was normalised into what they read).")).format(H=H, hs=hs, D=D)
    return {
        "query": _("Query token (the row that is looking)"),
        "sections": {
            "x": {"title": _("1. The query's input vector x"),
                  "note": _("What this sublayer received for “{token}”: {where}. {D} numbers.").format(
                      where=where, D=D, **browser)},
            "qkv": {"title": _("2. Query, keys and values of this head"),
                    "note": _("q = x·W_Q, k = x·W_K, v = x·W_V, each cut to this head's {hs} dimensions. One q for "
                              "the query; one k and one v for every key token.").format(hs=hs)},
            "scores": {"title": _("3. Scores, scaled scores, softmax"),
                       "note": scores + _("Nothing is masked here. With a batch of sentences, padding keys would be "
                                          "masked the same way (weight exactly 0); one sentence has no padding."),
                       "masked": scores + _("{masked} future position(s) are masked: the decoder may not look "
                                            "ahead, so their scaled score is set to a very large negative number and "
                                            "their weight is exactly 0.").format(**browser)},
            "sum": {"title": _("4. The weighted sum of the values: this head's output"),
                    "note": _("Each v is scaled by its weight; their sum is the head's output for this query ({hs} "
                              "numbers). The weights sum to {sum}.").format(hs=hs, **browser)},
            "norms": {"title": _("Weight or norm? What each key adds"),
                      "note": _("A weight says how much a key is weighed; what it adds to the output is the weight "
                                "times its value, and values differ in length. Right: ‖α·f(x)‖, the length of the "
                                "weighted value after this head's part of W_O (f(x) = (x·W_V + b_V)·W_O of the "
                                "head; Kobayashi et al., EMNLP 2020). A large weight on a short vector moves the "
                                "query little; hover a bar for ‖f(x)‖ itself.")},
            "heads": {"title": _("5. All heads together, then W_O, the residual and LayerNorm"),
                      "note": heads + " " + _("After the feed-forward sublayer this becomes the layer's output for "
                                              "the token.")},
        },
        "table": {"label": _("Show as a table"),
                  "caption": _("for every key, its score, scaled score, weight and weighted norm")},
        "after": [_(row) for row in AFTER],
    }

