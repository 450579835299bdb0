"""Encoder self-attention, decoder self-attention and cross-attention: one head big, every head as a grid."""

import streamlit as st

import viz

from .common import KIND_NAMES, Context, chart, subtitle
from .export import downloads
from .share import page_view

FIELDS = {"enc": "encoder_attentions", "dec": "decoder_attentions", "cross": "cross_attentions"}
CAPTIONS = {
    "enc": "Each German token (row) builds its new representation as a weighted mix of all German tokens "
           "(columns). Each row sums to 1.",
    "dec": "Each decoder row reads the English produced so far (columns) while predicting the next word: "
           "the row “{a} → {b}” is where the model, having just written “{a}”, chose “{b}”. Grey cells are "
           "future positions, masked: the model cannot see them.",
    "cross": "While predicting the next English word, each decoder row reads from the German source (columns). "
             "The row “<sos> → {first}” is where the model, with nothing written yet, chose “{first}”. "
             "Rows sum to 1.",
}


def labels(ctx: Context, side: str):
    """Tokens and <unk> flags of one side: the source, or decoder rows named by what they predict."""
    r = ctx.result
    if side == "src":
        return r.src_tokens, r.src_unknown
    return viz.predicting(r.tgt_tokens, [s.token for s in r.steps]), None


def sides(kind: str) -> tuple[str, str]:
    return {"enc": ("src", "src"), "dec": ("tgt", "tgt"), "cross": ("tgt", "src")}[kind]


def open_tile(kind: str):
    """A click on a model-view tile opens that layer and head in the big map (issue 9)."""
    event = st.session_state.get(f"{kind}_grid")
    points = event.selection.points if event else []
    tile = viz.tile_of(points[0]) if points else None
    if tile is not None:
        st.session_state[f"{kind}_layer"], st.session_state[f"{kind}_head"] = tile


@st.fragment
@page_view
def attention_view(ctx: Context, kind: str):
    maps = getattr(ctx.result, FIELDS[kind])
    L, H = maps.shape[:2]
    (q_tokens, q_unk), (k_tokens, k_unk) = (labels(ctx, s) for s in sides(kind))
    causal = kind == "dec"
    steps = [s.token for s in ctx.result.steps]
    words = dict(first=steps[0], a=steps[0], b=steps[1] if len(steps) > 1 else steps[0])
    st.caption(CAPTIONS[kind].format(**words) + " Hover a cell for the exact weight.")
    controls = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")  # wraps on narrow screens
    st.session_state.setdefault(f"{kind}_layer", L - 1 if kind == "cross" else 0)
    layer = controls.segmented_control("Layer", list(range(L)), key=f"{kind}_layer", required=True,
                                       format_func=lambda i: str(i + 1), width="content")
    st.session_state.setdefault(f"{kind}_head", "mean")
    head = controls.segmented_control("Head", ["mean", *range(H)], key=f"{kind}_head", required=True, format_func=lambda h: "mean" if h == "mean" else str(h + 1),
                                      width="content")
    stretch = controls.toggle("Stretch colours", key=f"{kind}_stretch", width="content",
                              help="Colour from 0 to this map's largest weight instead of the fixed 0–1 scale: "
                                   "more contrast, but colours no longer compare between maps.")
    head = None if head == "mean" else head
    name = f"mean of the {H} heads" if head is None else f"head {head + 1}"
    title = f"{KIND_NAMES[kind]}, layer {layer + 1}, {name}"
    weights = viz.select_head(maps, layer, head)
    chart(viz.attention_heatmap(weights, q_tokens, k_tokens, causal=causal,
                                query_unknown=q_unk, key_unknown=k_unk, title=title, stretch=stretch,
                                subtitle=subtitle(ctx.result.source)),
          key=f"{kind}_one", name=f"{kind}-layer{layer + 1}-{'mean' if head is None else f'head{head + 1}'}",
          width="content")
    if head is None:
        st.caption(f"The mean of the {H} heads is a summary for reading, not something the model computes: each "
                   "head has its own map, and the layer concatenates their outputs. Pick a head to see one.")
    st.markdown(f"**All {L} layers × {H} heads** — click a tile to open it above.")
    chart(viz.model_view(maps, q_tokens, k_tokens, causal=causal, query_unknown=q_unk, key_unknown=k_unk),
          key=f"{kind}_grid", name=f"{kind}-all-heads", width="content", on_select=lambda: open_tile(kind),
          selection_mode="points")
    raw = {"src": ctx.result.src_tokens, "tgt": ctx.result.tgt_tokens}  # the CSV keeps the model's own tokens
    q_side, k_side = sides(kind)
    downloads(ctx, shown_map=(f"{kind}-layer{layer + 1}-{'mean' if head is None else f'head{head + 1}'}", weights,
                              raw[q_side], raw[k_side]))
