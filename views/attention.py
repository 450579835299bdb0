"""Encoder self-attention, decoder self-attention and cross-attention: one head big, every head as a grid.

Each draws the attention weights alpha_ij, or (values=norms in the link) norm-based attention ||alpha_ij f(x_j)||
(Kobayashi et al., EMNLP 2020): the weight times the length of the transformed value it weighs, which says how
far key j actually moved query i (model/contributions.py, docs/contract.md "Attention norms").
"""

from dataclasses import dataclass, replace

import streamlit as st

import viz
from model.export import _csv
from model.heads import KIND_NAMES, Head, n_layers
from model.result import Translation

from . import compare
from .common import (MEAN, Context, View, chart, choice_param, head_key, head_link, head_param, head_picker, int_param,
                     layer_key, literal, map_table, pick_head, subtitle, table_labels, weighted_norms)
from .export import downloads
from .share import page_view

FIELDS = {"enc": "encoder_attentions", "dec": "decoder_attentions", "cross": "cross_attentions"}

VALUES = {"weights": "weights α", "norms": "weighted norms ‖α·f(x)‖"}  # what the maps draw: ?values=norms
# What a map's table holds, rows then columns (its accessible name says so).
TABLE_AXES = {"enc": "German tokens (queries), columns: German tokens (keys)",
              "dec": "English steps (the token read → the token chosen), columns: English tokens so far (keys)",
              "cross": "English steps (the token read → the token chosen), columns: German tokens (keys)"}


def labels(r: Translation, side: str):
    """Tokens and <unk> flags of one side: the source, or decoder rows named by what they predict."""
    if side == "src":
        return r.src_tokens, r.src_unknown
    return viz.predicting(r.tgt_tokens, [s.token for s in r.steps]), None


def sides(kind: str) -> tuple[str, str]:
    return {"enc": ("src", "src"), "dec": ("tgt", "tgt"), "cross": ("tgt", "src")}[kind]


def open_tile(kind: str):
    """A click on a model-view tile opens that layer and head in the big map."""
    event = st.session_state.get(f"{kind}_grid")
    points = event.selection.points if event else []
    tile = viz.tile_of(points[0]) if points else None
    if tile is not None:
        pick_head(Head(kind, *tile))


def view_entry(kind: str) -> View:
    """The view switch's entry of one kind's attention view: ?view=KIND&layer=&head=&draw=, and a comparison."""
    return View(kind, KIND_NAMES[kind], lambda ctx: attention_view(ctx, kind),
                read=lambda params, cfg, notes: read_link(params, cfg, notes, kind),
                write=lambda cfg: link_params(cfg, kind), judge=compare.judge_link)


def read_link(params, cfg, notes: list, kind: str):
    layer = int_param(params, "layer", 1, n_layers(cfg, kind), notes)
    if layer is not None:
        st.session_state[layer_key(kind)] = layer - 1
    if params.get("draw") in ("map", "lines"):
        st.session_state.draw_as = params["draw"]
    values = choice_param(params, "values", VALUES, notes)
    if values is not None:
        st.session_state.attn_values = values
    head = head_param(params, cfg, notes)
    if head is not None:
        st.session_state[head_key(kind)] = head
    compare.read_link(params, cfg, notes)


def link_params(cfg, kind: str) -> dict:
    s = st.session_state
    layer = s.get(layer_key(kind))
    params = {} if layer is None else {"layer": str(layer + 1)}
    params["head"] = head_link(s.get(head_key(kind)))
    if s.get("draw_as") == "lines":
        params["draw"] = "lines"
    if s.get("attn_values") == "norms":
        params["values"] = "norms"
    return params | compare.link_params(cfg)


@st.fragment
@page_view
def attention_view(ctx: Context, kind: str):
    maps = getattr(ctx.result, FIELDS[kind])
    L, H = maps.shape[:2]
    steps = [s.token for s in ctx.result.steps]
    st.caption(viz.map_caption(kind, steps, literal) +
               " Hover a cell for the exact weight.")
    controls = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")  # wraps on narrow screens
    st.session_state.setdefault(layer_key(kind), L - 1 if kind == "cross" else 0)
    layer = controls.segmented_control("Layer", list(range(L)), key=layer_key(kind), required=True,
                                       format_func=lambda i: str(i + 1), width="content")
    st.session_state.setdefault(head_key(kind), MEAN)
    head = head_picker(controls, H, head_key(kind), width="content")
    st.session_state.setdefault("draw_as", "map")
    style = controls.segmented_control("Draw as", ["map", "lines"], key="draw_as", required=True, width="content",
                                       help="Lines: each token of one side joined to the tokens it attends to, as "
                                            "thick as the weight, a colour per head (what BertViz calls the head "
                                            "view). Click a head in the legend to hide or show it, a token to keep "
                                            "only its lines.")
    st.session_state.setdefault("attn_values", "weights")
    values = controls.segmented_control(
        "Values", list(VALUES), key="attn_values", required=True, width="content", format_func=VALUES.get,
        help="Weights: the softmax α, each row sums to 1. Weighted norms (Kobayashi et al., EMNLP 2020): "
             "‖α·f(x)‖, the length of what each key actually adds to the query's output through this head "
             "(f(x) = (x·W_V + b_V)·W_O of the head): a large weight on a short vector moves little. Norms are "
             "lengths, not shares, so each map has its own colour range.")
    norms = values == "norms"
    stretch = controls.toggle("Stretch colours", key=f"{kind}_stretch", width="content", disabled=norms,
                              help="Colour from 0 to this map's largest weight instead of the fixed 0–1 scale: "
                                   "more contrast, but colours no longer compare between maps. (Norms always "
                                   "have their own range.)")
    if st.session_state.get("vs") not in compare.options(ctx):  # e.g. vs=model from a link, one model here
        st.session_state.vs = "none"
    controls.segmented_control("Compare with", compare.options(ctx), key="vs", required=True, width="content",
                               format_func=compare.OPTIONS.get)
    head = None if head == MEAN else head
    shown = Shown(kind, layer, head, stretch, style, norms)
    norm_maps = weighted_norms(ctx.checkpoint, ctx.result.source, tuple(s.token for s in ctx.result.steps)
                               ).norms[kind] if norms else None  # (L, H, Tq, Tk) like the maps
    second = compare.second_run(ctx) if st.session_state.vs != "none" else None
    if second is None:
        draw(ctx.result, shown, "one", maps=norm_maps)
    else:
        if norms:  # a second run may have heads switched off, which the norms cannot follow: weights, both sides
            st.caption("The comparison draws attention weights on both sides: weighted norms are drawn for this "
                       "page's own run alone (pick “nothing” to compare with).")
            shown = replace(shown, norms=False)
        first_name, second_name, other = second
        for col, (name, result, key, which) in zip(st.columns(2), ((first_name, ctx.result, "a", "first"),
                                                                   (second_name, other, "b", "second"))):
            with col:
                st.markdown(compare.header(name, result))
                draw(result, shown, key, width="stretch", table_label=f"Show the {which} map as a table")
        difference(ctx.result, other, shown, second_name)
    if norms:
        st.caption("Weighted norms ‖α·f(x)‖ (Kobayashi et al., EMNLP 2020): each cell is the weight times the length "
                   "of the key's value after this head's part of W_O (b_V in, b_O out), so it says how much the key "
                   "actually moved the query, not only how much it was weighed. Not a 0–1 scale: " +
                   ("each line is as thick as its norm over the layer's largest." if style == "lines" else
                    "the colour bar runs from 0 to the largest norm shown."))
    if head is None:
        st.caption(f"The mean of the {H} heads is a summary for reading, not something the model computes: each "
                   "head has its own map, and the layer concatenates their outputs. Pick a head to see one.")
    (q_tokens, q_unk), (k_tokens, k_unk) = (labels(ctx.result, s) for s in sides(kind))
    grid_values = "weighted norms, one colour range for every tile" if norms else "weights"
    st.markdown(f"**All {L} layers × {H} heads** ({grid_values}) — click a tile to open it above.")
    chart(viz.model_view(maps if norm_maps is None else norm_maps, q_tokens, k_tokens, causal=kind == "dec",
                         query_unknown=q_unk, key_unknown=k_unk, norms=norms),
          key=f"{kind}_grid", name=f"{kind}-all-heads", width="content", on_select=lambda: open_tile(kind),
          selection_mode="points")
    raw = {"src": ctx.result.src_tokens, "tgt": ctx.result.tgt_tokens}  # the CSV keeps the model's own tokens
    q_side, k_side = sides(kind)
    name = f"{kind}-layer{layer + 1}-{shown.head_name()}"
    if norm_maps is None:
        downloads(ctx, shown_map=(name, viz.select_head(maps, layer, head), raw[q_side], raw[k_side]))
    else:
        picked = one_map(norm_maps, layer, head)
        downloads(ctx, extra=[("This map's norms (CSV)", f"{name}-norms.csv", "text/csv",
                               lambda: norms_csv(picked, raw[q_side], raw[k_side]))])


def one_map(maps, layer: int, head: int | None, norms: bool = True):
    """(L, H, Q, K) -> (Q, K): viz.select_head for weights; for norms (not in 0..1) the same pick, unchecked."""
    if not norms:
        return viz.select_head(maps, layer, head)
    return maps[layer].mean(axis=0) if head is None else maps[layer, head]


def norms_csv(norms, query_tokens: list, key_tokens: list) -> str:
    """One map of norms (Q, K) as CSV, a row per cell as model.export.map_csv writes weights:
    `query_pos,query_token,key_pos,key_token,norm`."""
    rows = ((q, qt, k, kt, float(norms[q, k])) for q, qt in enumerate(query_tokens) for k, kt in enumerate(key_tokens))
    return _csv(["query_pos", "query_token", "key_pos", "key_token", "norm"], rows)


@dataclass(frozen=True)
class Shown:
    """What the view's controls picked: the map to draw, and how."""

    kind: str
    layer: int
    head: int | None  # None: the mean of the layer's heads
    stretch: bool
    style: str  # "map" or "lines"
    norms: bool = False  # draw norm-based attention ||alpha f(x)|| instead of the weights

    def head_name(self) -> str:
        return "mean" if self.head is None else f"head{self.head + 1}"

    def title(self, n_heads: int) -> str:
        name = f"mean of the {n_heads} heads" if self.head is None else f"head {self.head + 1}"
        return f"{KIND_NAMES[self.kind]}, layer {self.layer + 1}, {name}" + (", norms ‖α·f(x)‖" if self.norms else "")


def draw(result: Translation, shown: Shown, key: str, width="content", maps=None, table_label="Show as a table"):
    """The chosen map of one run, as a heatmap or as lines, and its numbers as a table; maps: the norms to draw
    instead of the weights."""
    maps = getattr(result, FIELDS[shown.kind]) if maps is None else maps
    picture(result, shown, key, width, maps)
    (q_tokens, q_unk), (k_tokens, k_unk) = (labels(result, s) for s in sides(shown.kind))
    picked = one_map(maps, shown.layer, shown.head, shown.norms)  # the numbers, however they are drawn
    map_table(picked, table_labels(q_tokens, q_unk), table_labels(k_tokens, k_unk),
              f"{shown.title(maps.shape[1])}{'' if shown.norms else ', weights'}; rows: {TABLE_AXES[shown.kind]}",
              key=f"{shown.kind}_{key}_table", corner="query \\ key", label=table_label,
              masked=viz.causal_mask(*picked.shape) if shown.kind == "dec" else None)


def picture(result: Translation, shown: Shown, key: str, width, maps):
    """The map as a heatmap, or its layer as lines."""
    (q_tokens, q_unk), (k_tokens, k_unk) = (labels(result, s) for s in sides(shown.kind))
    name = f"{shown.kind}-layer{shown.layer + 1}-{shown.head_name()}" + ("-norms" if shown.norms else "")
    title = shown.title(maps.shape[1])
    if shown.style == "lines":
        focus_key = f"{shown.kind}_{key}_focus"
        chart(viz.attention_lines(maps[shown.layer], q_tokens, k_tokens,
                                  heads=None if shown.head is None else [shown.head],
                                  focus=st.session_state.get(focus_key), title=title, query_unknown=q_unk,
                                  key_unknown=k_unk, norms=shown.norms),
              key=f"{shown.kind}_{key}_lines", name=f"{name}-lines", width=width, selection_mode="points",
              on_select=lambda: focus_token(f"{shown.kind}_{key}_lines", focus_key))
        if st.session_state.get(focus_key) is not None:
            side, pos = st.session_state[focus_key]
            st.button(f"Show every token's lines (now only {side} {pos})", key=f"{focus_key}_clear",
                      on_click=st.session_state.pop, args=(focus_key, None))
        return
    chart(viz.attention_heatmap(one_map(maps, shown.layer, shown.head, shown.norms), q_tokens, k_tokens,
                                causal=shown.kind == "dec", query_unknown=q_unk, key_unknown=k_unk, title=title,
                                stretch=shown.stretch, norms=shown.norms, subtitle=subtitle(result.source)),
          key=f"{shown.kind}_{key}", name=name, width=width)


def focus_token(chart_key: str, focus_key: str):
    """A click on a token of the line view keeps only its lines; a second click on it shows all again."""
    event = st.session_state.get(chart_key)
    points = event.selection.points if event else []
    picked = viz.token_of(points[0]) if points else None
    st.session_state[focus_key] = None if picked == st.session_state.get(focus_key) else picked


def difference(first: Translation, second: Translation, shown: Shown, second_name: str):
    """Second minus first, when both maps have the same shape; otherwise say why there is none."""
    a, b = (viz.select_head(getattr(r, FIELDS[shown.kind]), shown.layer, shown.head) for r in (first, second))
    if a.shape != b.shape:
        st.caption(f"No difference map: the two maps have different shapes ({a.shape[0]}×{a.shape[1]} and "
                   f"{b.shape[0]}×{b.shape[1]} tokens). Same-length sentences, or outputs of the same length, "
                   "give one.")
        return
    q_side, k_side = sides(shown.kind)
    (qa, _), (ka, _) = labels(first, q_side), labels(first, k_side)
    (qb, _), (kb, _) = labels(second, q_side), labels(second, k_side)
    both = lambda x, y: [s if s == t else f"{s} | {t}" for s, t in zip(x, y)]  # noqa: E731
    st.markdown(f"**Difference**: {literal(second_name)} minus the first. Red: more weight in the second "
                "run; blue: less; white: the same. The colours span ± the largest difference.")
    # Differences are small next to weights: the colours always span +-the largest one (the bar says how large).
    chart(viz.attention_heatmap(b - a, both(qa, qb), both(ka, kb), causal=shown.kind == "dec", signed=True,
                                stretch=True,
                                title="Difference: " + shown.title(getattr(first, FIELDS[shown.kind]).shape[1]),
                                subtitle=subtitle(first.source if first.source == second.source else
                                                  f"{first.source} | {second.source}")),
          key=f"{shown.kind}_diff", name=f"{shown.kind}-layer{shown.layer + 1}-{shown.head_name()}-difference",
          width="content")
    map_table(b - a, table_labels(both(qa, qb)), table_labels(both(ka, kb)),
              f"Difference, {second_name} minus the first: {shown.title(getattr(first, FIELDS[shown.kind]).shape[1])}; "
              f"rows: {TABLE_AXES[shown.kind]}", key=f"{shown.kind}_diff_table", corner="query \\ key",
              masked=viz.causal_mask(*a.shape) if shown.kind == "dec" else None, label="Show the difference as a table")
