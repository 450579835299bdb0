"""Encoder self-attention, decoder self-attention and cross-attention: one head big, every head as a grid.

Each draws the attention weights alpha_ij, or (values=norms in the link) norm-based attention ||alpha_ij f(x_j)||
(Kobayashi et al., EMNLP 2020): the weight times the length of the transformed value it weighs, which says how
far key j actually moved query i (model/contributions.py, docs/contract.md "Attention norms").
"""

from dataclasses import dataclass

import numpy as np
import streamlit as st

import viz
from model.export import _csv
from model.heads import KIND_NAMES, n_layers
from model.i18n import N_, SOURCE, _, kept, language, ngettext
from model.result import Translation
from viz.labels import SIDES, positioned, subtitle, token_labels

from . import Context, View, compare, guess
from .calls import weighted_norms
from .export import downloads
from .instant import WEIGHT_STEP, figure_json, packed, show, skeleton, with_means
from .state import (MEAN, choice_param, head_key, head_link, head_param, int_param, layer_key, opening_layer,
                    page_view, pick_seq_key)
from .widgets import literal, table_labels, trust_line

VALUES = {"weights": N_("weights α"), "norms": N_("weighted norms ‖α·f(x)‖")}  # what the maps draw: ?values=norms
# The colour stretch, picked in the browser alone (views/maps.js): its switch and what it does (translated where
# the view sends it).
STRETCH = {"label": N_("Stretch colours"),
           "help": N_("Colour from 0 to this map's largest weight instead of the fixed 0–1 scale: more contrast, but "
                      "colours no longer compare between maps. (Norms always have their own range.)")}
# What a map's table holds, rows then columns (its accessible name says so).
TABLE_AXES = {"enc": N_("{src} tokens (queries), columns: {src} tokens (keys)"),
              "dec": N_("{tgt} steps (the token read → the token chosen), columns: {tgt} tokens so far (keys)"),
              "cross": N_("{tgt} steps (the token read → the token chosen), columns: {src} tokens (keys)")}


def view_entry(kind: str) -> View:
    """The view switch's entry of one kind's attention view: ?view=KIND&layer=&head=&draw=, and a comparison."""
    return View(kind, KIND_NAMES[kind], lambda ctx: attention_view(ctx, kind),
                read=lambda params, cfg, notes: read_link(params, cfg, notes, kind),
                write=lambda cfg: link_params(cfg, kind), judge=compare.judge_link, asks=True, browser=True)


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
    maps = ctx.result.maps(kind)  # (L, H, Q, K)
    L, H = maps.shape[:2]
    steps = [s.token for s in ctx.result.steps]
    st.caption(viz.map_caption(kind, steps, literal, ctx.names, ctx.result.tgt_tokens[0]) + " " +
               _("Hover a cell for the exact weight."))
    found = guess.map_question(ctx.result, kind, first_pick(kind, ctx.result)[0], int(ctx.cfg.source_start),
                               ctx.names[0]) if guess.on() else None
    if found and guess.hidden(found[0]):  # guess first: the maps wait for the answer
        return
    if found:
        guess.marked_row(*found, ctx.result, kind, key=f"guess_row_{kind}")
    # What needs the model (norms, a second run) is picked here and reruns the view; what only redraws (layer,
    # head, map or lines, colour stretch, a tile, a token's lines) is picked in the browser (views/maps.js).
    controls = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")  # wraps on narrow screens
    st.session_state.setdefault("attn_values", "weights")
    values = controls.segmented_control(
        _("Values"), list(VALUES), key="attn_values", required=True, width="content",
        format_func=kept(lambda v: _(VALUES[v])),
        help=_("Weights: the softmax α, each row sums to 1. Weighted norms (Kobayashi et al., EMNLP 2020): "
               "‖α·f(x)‖, the length of what each key actually adds to the query's output through this head "
               "(f(x) = (x·W_V + b_V)·W_O of the head): a large weight on a short vector moves little. Norms are "
               "lengths, not shares, so each map has its own colour range."))
    norms = values == "norms"
    if st.session_state.get("vs") not in compare.options(ctx):  # e.g. vs=model from a link, one model here
        st.session_state.vs = "none"
    controls.segmented_control(_("Compare with"), compare.options(ctx), key="vs", required=True, width="content",
                               format_func=kept(lambda o: _(compare.OPTIONS[o])))
    norm_maps = weighted_norms(ctx.checkpoint, ctx.result.source, tuple(s.token for s in ctx.result.steps)
                               ).norms[kind] if norms else None  # (L, H, Tq, Tk) like the maps
    second = compare.second_run(ctx) if st.session_state.vs != "none" else None
    if second is not None and norms:  # a second run may have heads switched off, which the norms cannot follow
        st.caption(_("The comparison draws attention weights on both sides: weighted norms are drawn for this "
                     "page's own run alone (pick “nothing” to compare with)."))
        norms, norm_maps = False, None
    if kind != "enc":  # encoder self-attention ranks no output word's inputs: nothing to remove for it
        name = "norms" if norms else "attention"
        trust_line(ctx.checkpoint, {_("layer {layer}").format(layer=i + 1): f"{name} L{i + 1}" for i in range(L)},
                   "source" if kind == "cross" else "prefix", ctx.names)
    layer, head, style = first_pick(kind, ctx.result)
    shown = Shown(kind, layer, head, style, norms, ctx.names)
    if second is None:
        panels, diff = [panel(ctx.result, shown, maps if norm_maps is None else norm_maps, lang=language())], None
    else:
        first_name, second_name, other = second
        panels = [panel(ctx.result, shown, maps, header=(first_name, ctx.result.text), which="first",
                        lang=language()),
                  panel(other, shown, other.maps(kind), header=(second_name, other.text),
                        which="second", lang=language())]
        diff = difference(ctx.result, other, shown, second_name)
    if norms:
        st.caption(_("Weighted norms ‖α·f(x)‖ (Kobayashi et al., EMNLP 2020): each cell is the weight times the "
                     "length of the key's value after this head's part of W_O (b_V in, b_O out), so it says how much "
                     "the key actually moved the query, not only how much it was weighed. Not a 0–1 scale: the colour "
                     "bar runs from 0 to the largest norm shown; a line is as thick as its norm over the layer's "
                     "largest."))
    (q_tokens, q_unk), (k_tokens, k_unk) = (token_labels(ctx.result, s) for s in SIDES[kind])
    grid_title = (_("All {L} layers × {H} heads (weighted norms, one colour range for every tile) — click a tile to "
                    "open it above.") if norms else
                  _("All {L} layers × {H} heads (weights) — click a tile to open it above.")).format(L=L, H=H)
    show("maps", {
        "slug": kind, "seq": st.session_state.get(pick_seq_key(kind), 0), "layers": L, "heads": H,
        "pick": {"layer": shown.layer, "head": H if shown.head is None else shown.head, "draw": shown.style,
                 "stretch": False},  # the colour stretch is the browser's alone (not in the link)
        "norms": norms, "panels": panels, "difference": diff,
        "names": [[f"{kind}-layer{i + 1}-{'mean' if h == H else f'head{h + 1}'}" + ("-norms" if norms else "")
                   for h in range(H + 1)] for i in range(L)],
        "stretch": {name: _(text) for name, text in STRETCH.items()},
        "mean_note": _("The mean of the {H} heads is a summary for reading, not something the model computes: each "
                       "head has its own map, and the layer concatenates their outputs. Pick a head to see one.")
                     .format(H=H),
        "grid_title": grid_title,
        # The grid's layout and look; its cells (a tile per layer and head, GAP cells apart) are filled in the
        # browser from the first panel's maps: 19 MB of cells and hover labels for a 100-token sentence never travel.
        "grid": grid(maps if norm_maps is None else norm_maps, q_tokens, k_tokens, kind, q_unk, k_unk, norms,
                     language()),
        "gap": viz.GAP,
    }, key=f"{kind}_maps")
    downloads(ctx)


@st.cache_data(max_entries=64, show_spinner=False)
def grid(maps, q_tokens: list, k_tokens: list, kind: str, q_unk: list, k_unk: list, norms: bool,
         lang: str = SOURCE) -> str:
    """The all-heads grid's figure, without its cells (cached as `panel` is; `lang`, the page's language, keys the
    cache: the figure's words are in it)."""
    return figure_json(viz.model_view(maps, q_tokens, k_tokens, causal=kind == "dec", query_unknown=q_unk,
                                      key_unknown=k_unk, norms=norms, cells=False))


def first_pick(kind: str, result) -> tuple:
    """The layer, head (None: the mean) and drawing the server knows of: the link's, or the defaults (the layer
    state.opening_layer picks for this sentence). The browser starts from these and keeps its own picks after."""
    s = st.session_state
    L = len(result.maps(kind))
    layer = s.get(layer_key(kind), opening_layer(result, kind))
    head = s.get(head_key(kind), MEAN)
    return min(layer, L - 1), None if head == MEAN else head, s.get("draw_as", "map")


@st.cache_data(max_entries=64, show_spinner=False)
def panel(result: Translation, shown: "Shown", maps, header=None, which: str = "", lang: str = SOURCE) -> dict:
    """One run's maps for the component: every layer's heads and their mean, packed; the figure viz builds for
    the first pick; the colour range and title of every pick; each layer's line figure; its table and CSV.

    Cached per run and pick: a page opened from a link, a view switch and a comparison's rerun build it once (its
    figures cost ~0.1 s of the server's CPU, most of an attention view's run). `lang`, the page's language, keys the
    cache: the titles, labels and figures are in it."""
    L, H = maps.shape[:2]
    (q_tokens, q_unk), (k_tokens, k_unk) = (token_labels(result, s) for s in SIDES[shown.kind])
    full = with_means(maps)  # (L, H + 1, Q, K): head H is the mean
    first = H if shown.head is None else shown.head
    causal = shown.kind == "dec"
    masked = viz.causal_mask(*full.shape[2:]) if causal else None
    picks = [[Shown(shown.kind, i, None if h == H else h, norms=shown.norms) for h in range(H + 1)] for i in range(L)]
    raw = {"src": result.src_tokens, "tgt": result.tgt_tokens, "inputs": result.tgt_tokens}  # the model's own tokens
    q_side, k_side = SIDES[shown.kind]
    return {
        "header": header,
        "maps": packed(full) if shown.norms else packed(full, step=WEIGHT_STEP),
        "causal": causal,
        "titles": [[p.title(H) for p in row] for row in picks],
        "scales": [[[viz.heat_scale(full[i, h], masked, stretch=s, norms=shown.norms) for s in (False, True)]
                    for h in range(H + 1)] for i in range(L)],
        "figure": figure_json(skeleton(viz.attention_heatmap(
            full[shown.layer, first], q_tokens, k_tokens, causal=causal, query_unknown=q_unk, key_unknown=k_unk,
            title=shown.title(H), norms=shown.norms, subtitle=subtitle(result.source)), "z", "customdata")),
        "labels": {"q": positioned(q_tokens, q_unk), "k": positioned(k_tokens, k_unk)},  # the hover's names
        # The line view: one layer's figure without its lines, and what each layer draws in it (its lines and its
        # tokens' hover).
        "lines": {"figure": figure_json(viz.attention_lines(maps[0], q_tokens, k_tokens, title=picks[0][H].title(H),
                                                            query_unknown=q_unk, key_unknown=k_unk, norms=shown.norms,
                                                            segments=False)),
                  "layers": [viz.layer_lines(maps[i], q_tokens, k_tokens, query_unknown=q_unk, key_unknown=k_unk,
                                             norms=shown.norms) for i in range(L)]},
        "table": {"label": {"first": _("Show the first map as a table"),
                            "second": _("Show the second map as a table")}.get(which, _("Show as a table")),
                  "rows": table_labels(q_tokens, q_unk), "cols": table_labels(k_tokens, k_unk),
                  "axes": (_("; rows: {axes}") if shown.norms else _(", weights; rows: {axes}")).format(
                      axes=shown.axes)},
        "csv": csv_parts(csv_label(which, shown.norms), raw[q_side], raw[k_side], "norm" if shown.norms else "weight"),
    }


def csv_label(which: str, norms: bool) -> str:
    """The label of a map's CSV button: the first or second map of a comparison, or the only one; weights or norms."""
    return {("", False): _("This map (CSV)"), ("", True): _("This map's norms (CSV)"),
            ("first", False): _("This first map (CSV)"), ("first", True): _("This first map's norms (CSV)"),
            ("second", False): _("This second map (CSV)"), ("second", True): _("This second map's norms (CSV)")}[
        (which, norms)]


def csv_parts(label: str, query_tokens: list, key_tokens: list, value: str) -> dict:
    """What the browser needs to write a map's CSV as model.export.map_csv does (the same columns and quoting;
    the values with the 4 decimals the page holds): the header and each token's cells, quoted here."""
    def cells(tokens):
        return [_csv([], [[i, t]]).strip() for i, t in enumerate(tokens)]
    return {"label": label, "header": _csv(["query_pos", "query_token", "key_pos", "key_token", value], []).strip(),
            "rows": cells(query_tokens), "cols": cells(key_tokens)}


@dataclass(frozen=True)
class Shown:
    """What the view's controls picked: the map to draw, and how."""

    kind: str
    layer: int
    head: int | None  # None: the mean of the layer's heads
    style: str = "map"  # or "lines"
    norms: bool = False  # draw norm-based attention ||alpha f(x)|| instead of the weights
    names: tuple = ("German", "English")  # what the page calls the source and target (Context.names)

    @property
    def axes(self) -> str:
        """What the map's table holds, rows then columns (its accessible name says so)."""
        return _(TABLE_AXES[self.kind]).format(src=self.names[0], tgt=self.names[1])

    def title(self, n_heads: int) -> str:
        where = dict(kind=_(KIND_NAMES[self.kind]), layer=self.layer + 1, n=n_heads,
                     head=None if self.head is None else self.head + 1)
        if self.head is None:
            found = (_("{kind}, layer {layer}, mean of the {n} heads, norms ‖α·f(x)‖") if self.norms else
                     _("{kind}, layer {layer}, mean of the {n} heads"))
        else:
            found = (_("{kind}, layer {layer}, head {head}, norms ‖α·f(x)‖") if self.norms else
                     _("{kind}, layer {layer}, head {head}"))
        return found.format(**where)


SAME = 5e-5  # a difference under half the last decimal the page shows is none
WHY_THE_SAME = {
    "off": N_("a switched-off head still computes its weights; only its output is dropped, so the maps change only "
              "where that output is read: in the layers after it (and, for an encoder head, in every cross-attention "
              "layer)"),
    "force": N_("a forced word changes only what comes after it: the rows of the steps up to it read the same "
                "inputs"),
}


def say_where_the_same(d, kind: str, vs: str | None):
    """A caption naming the layers whose maps are the same in both runs (every difference under SAME: the page
    shows 4 decimals, and the first run's maps come from cached step-by-step decoding, the second's from one
    teacher-forced pass, which differ by float rounding), and why a comparison of this kind leaves them so."""
    same = [i for i in range(d.shape[0]) if np.nanmax(np.abs(d[i])) < SAME]
    if not same or len(same) == d.shape[0] and vs not in WHY_THE_SAME:
        return
    where = ", ".join(str(i + 1) for i in same)
    differ = [i + 1 for i in range(d.shape[0]) if i not in same]
    numbers = dict(kind=_(KIND_NAMES[kind]), layers=where, why=_(WHY_THE_SAME[vs]) if vs in WHY_THE_SAME else "")
    if vs in WHY_THE_SAME:
        blank = ngettext("{kind} layer {layers}: the same in both runs, so the difference there is blank ({why}).",
                         "{kind} layers {layers}: the same in both runs, so the difference there is blank ({why}).",
                         len(same))
    else:
        blank = ngettext("{kind} layer {layers}: the same in both runs, so the difference there is blank.",
                         "{kind} layers {layers}: the same in both runs, so the difference there is blank.",
                         len(same))
    if differ:
        shows = ngettext("The change shows in layer {layers}.", "The change shows in layers {layers}.",
                         len(differ)).format(layers=", ".join(map(str, differ)))
    else:
        shows = _("No layer of this kind reads it: look at the other kinds of attention, or at the words themselves "
                  "(Ablate heads, the decoding trace).")
    st.caption(blank.format(**numbers) + " " + shows)


def difference(first: Translation, second: Translation, shown: "Shown", second_name: str) -> dict | None:
    """Second minus first as a panel of the component, when both runs' maps have the same shape; otherwise None,
    and a caption says why there is none."""
    a, b = first.maps(shown.kind), second.maps(shown.kind)
    if a.shape != b.shape:
        st.caption(_("No difference map: the two maps have different shapes ({q1}×{k1} and {q2}×{k2} tokens). "
                     "Same-length sentences, or outputs of the same length, give one.").format(
                         q1=a.shape[2], k1=a.shape[3], q2=b.shape[2], k2=b.shape[3]))
        return None
    L, H = a.shape[:2]
    q_side, k_side = SIDES[shown.kind]
    (qa, _qa_unk), (ka, _ka_unk) = token_labels(first, q_side), token_labels(first, k_side)
    (qb, _qb_unk), (kb, _kb_unk) = token_labels(second, q_side), token_labels(second, k_side)
    both = lambda x, y: [s if s == t else f"{s} | {t}" for s, t in zip(x, y)]  # noqa: E731
    causal = shown.kind == "dec"
    masked = viz.causal_mask(*a.shape[2:]) if causal else None
    d = with_means(b) - with_means(a)
    say_where_the_same(d, shown.kind, st.session_state.get("vs"))
    # Differences are small next to weights: the colours always span +-the largest one (the bar says how large).
    scales = [[[viz.heat_scale(d[i, h], masked, stretch=True, signed=True)] * 2 for h in range(H + 1)]
              for i in range(L)]
    titles = [[_("Difference: {title}").format(title=Shown(shown.kind, i, None if h == H else h).title(H))
               for h in range(H + 1)] for i in range(L)]
    return {
        "header": [_("Difference"), _("{second} minus the first. Red: more weight in the second run; blue: less; "
                                      "white: the same. The colours span ± the largest difference.").format(
                                          second=second_name)],
        "maps": packed(d, offset=-1.0, step=WEIGHT_STEP), "causal": causal, "titles": titles, "scales": scales,
        "figure": figure_json(skeleton(viz.attention_heatmap(
            d[shown.layer, H if shown.head is None else shown.head], both(qa, qb), both(ka, kb), causal=causal,
            signed=True, stretch=True,
            title=titles[shown.layer][H if shown.head is None else shown.head],
            subtitle=subtitle(first.source if first.source == second.source else f"{first.source} | {second.source}")),
            "z", "customdata")),
        "labels": {"q": positioned(both(qa, qb)), "k": positioned(both(ka, kb))},
        "lines": None,
        "table": {"label": _("Show the difference as a table"), "rows": table_labels(both(qa, qb)),
                  "cols": table_labels(both(ka, kb)),
                  "axes": _(", {second} minus the first; rows: {axes}").format(second=second_name, axes=shown.axes)},
        "csv": None,
    }
