"""Causes: activation patching between the page's sentence and a second one that differs in a word (model/patch.py).

    ?s=Ein+Mann+spielt+Gitarre.&view=patch&s2=Eine+Frau+spielt+Gitarre.
    ?s=...&view=patch&s2=...&dir=noising        the other direction (default: denoising)

Not a fragment: picking a contrast pair changes the page's sentence, which the whole page follows.
"""

import json
import shlex

import numpy as np
import streamlit as st

from model.contrast import changed_words, read_pairs, swapped
from model.errors import InputError
from model.i18n import N_, _, kept, ngettext
from model.patch import DIRECTIONS, patch
from model.tables import command_line
from model.translator import ROOT
from viz.labels import subtitle
from viz.patching import effect_map

from . import Context
from .calls import HEAVY, checkpoint_json, load_translator, waiting_notice
from .export import downloads
from .state import choice_param, page_view, text_param
from .widgets import chart, literal, text_box

DIR_KEY, PAIR_KEY = "patch_dir", "patch_pair"
PAIRS = ROOT / "assets/contrast/pairs.jsonl"
TABLE = "patching.json"
SAID = {"denoising": N_("Each site taken from the clean run into the corrupted one (denoising): 1 means this site "
                        "alone brings the clean word back, 0 that it does nothing alone."),
        "noising": N_("Each site taken from the corrupted run into the clean one (noising): 0 means this site alone "
                      "destroys the clean word, 1 that it does nothing alone.")}
KIND_TITLES = {"enc": N_("Encoder self-attention heads"), "dec": N_("Decoder self-attention heads"),
               "cross": N_("Cross-attention heads")}


def read_link(params, cfg, notes: list):
    """s2: the corrupted sentence; dir: denoising or noising."""
    s2 = text_param(params, "s2", _("the second sentence (s2)"), notes)
    if s2 is not None:
        st.session_state.s2 = s2
    d = choice_param(params, "dir", DIRECTIONS, notes)
    if d is not None:
        st.session_state[DIR_KEY] = d


def link_params(cfg) -> dict:
    s = st.session_state
    d = s.get(DIR_KEY, "denoising")
    return {**({"s2": s.s2} if s.get("s2") else {}), **({"dir": d} if d != "denoising" else {})}


@st.cache_data(max_entries=1, show_spinner=False)
def contrast_pairs() -> list[dict]:
    return read_pairs(PAIRS) if PAIRS.is_file() else []


@st.cache_data(max_entries=32, show_spinner=False)
def patching(checkpoint: str | None, clean: str, corrupt: str, _waiting=None) -> dict:
    """Every site of the pair patched, both directions, as `python -m model.patch --clean --corrupt` prints it."""
    with HEAVY.turn(_waiting):
        return patch(load_translator(checkpoint), clean, corrupt).to_json()


def changes(clean: str, corrupt: str) -> str:
    """What the second sentence changes, counted from the pair (the label of its box): "2 words changed"."""
    if not corrupt.strip():
        return _("the same with a word changed")
    n = changed_words(clean, corrupt)
    return _("no word changed") if n == 0 else ngettext("{n} word changed", "{n} words changed", n).format(n=n)


def use_pair():
    """A contrast pair picked: its clean sentence becomes the page's, its corrupted one the second."""
    picked = st.session_state.get(PAIR_KEY)
    if picked is not None:
        pair = contrast_pairs()[picked]
        st.session_state.sentence, st.session_state.s2 = pair["clean"], pair["corrupt"]
        st.session_state.reference, st.session_state.example = "", ""


@page_view
def patch_view(ctx: Context):
    result = ctx.result
    st.caption(_("Change one word and see where the change travels: every activation of one run is put, one site at "
                 "a time, into the other run, and the change of the logit difference between the two words says how "
                 "much of the difference that site carries (Vig et al., 2020; Meng et al., 2022)."))
    german = ctx.translator.origin["languages"][0] == "de"  # the contrast pairs and swaps are German sentences
    pairs = contrast_pairs() if german else []
    length = len(result.src_tokens)  # a swap that changes the token count (a word of other pieces) cannot be patched
    suggestions = [x for x in swapped(result.source) if len(ctx.translator.source_ids(x[1])[0]) == length]
    if not st.session_state.get("s2") and suggestions:
        st.session_state.s2 = suggestions[0][1]  # a swap the contrast set uses, on this sentence
    left, right = st.columns([3, 2])
    with left:
        corrupt = text_box(st, _("Second sentence: {changes} (press Enter)").format(
                               changes=changes(result.source, st.session_state.get("s2", ""))), "s2",
                           _("The second sentence"))
    if pairs:
        right.selectbox(_("Or a contrast pair from Multi30k ({n})").format(n=len(pairs)), range(len(pairs)),
                        key=PAIR_KEY, index=None, placeholder=_("pick a pair…"), on_change=use_pair,
                        format_func=lambda i: f"{pairs[i]['category']}: {pairs[i]['de'][0]} → {pairs[i]['de'][1]}: "
                                              f"{pairs[i]['clean'][:60]}")
    if not corrupt:
        st.info(_("Type a second sentence that differs from the first in a word (the same number of tokens), or "
                  "pick a contrast pair."))
        contrast_set(ctx)
        return
    try:
        with waiting_notice(_("Patching")) as waiting, st.spinner(_("Patching every site, both directions…")):
            p = patching(ctx.checkpoint, result.source, corrupt, _waiting=waiting)
    except InputError as e:
        st.warning(literal(f"{e}."))
        contrast_set(ctx)
        return
    st.markdown(_("**Where the difference travels:** {summary}").format(summary=literal(p["summary"])))
    st.session_state.setdefault(DIR_KEY, "denoising")
    d = st.segmented_control(_("Direction"), list(DIRECTIONS), key=DIR_KEY, required=True,
                             format_func=kept(lambda x: {"denoising": _("clean into corrupted"),
                                                    "noising": _("corrupted into clean")}[x]))
    ld = p["ld"]
    st.caption(_(SAID[d]) + " " + _("The metric: (LD_patched − LD_corrupt) / (LD_clean − LD_corrupt) at step {step}, "
                                    "LD = logit(“{word}”) − logit(“{other}”): {clean:.2f} in the clean run, "
                                    "{corrupt:.2f} in the corrupted one, both with the clean prefix.").format(
        step=p["step"] + 1, word=literal(p["words"][0]), other=literal(p["words"][1]), clean=ld["clean"],
        corrupt=ld["corrupt"]))
    src = [c if c == x else f"{c}→{x}" for c, x in zip(p["src_tokens"]["clean"], p["src_tokens"]["corrupt"])]
    layers = lambda n: [_("embedding"), *(_("after layer {layer}").format(layer=i) for i in range(1, n))]  # noqa: E731
    enc, dec = np.array(p["encoder"][d]), np.array(p["decoder"][d])
    sub = subtitle(result.source)
    chart(effect_map(enc, layers(len(enc)), src, title=_("Encoder: the residual stream<br>at each source position"),
                     subtitle=sub, x_title=_("source position"), marked=p["swapped"], hover_row=_("encoder") + " ",
                     hover_col=_("source token") + " "), key="patch_enc", name=f"patching-encoder-{d}")
    chart(effect_map(dec, layers(len(dec)), p["tgt_tokens"], x_title=_("decoder input (the step reads the last)"),
                     title=_("Decoder: the residual stream<br>at each position up to step {step}").format(
                         step=p["step"] + 1),
                     hover_row=_("decoder") + " ", hover_col=_("decoder input") + " "), key="patch_dec",
          name=f"patching-decoder-{d}")
    cols = st.columns(3)
    for col, kind in zip(cols, ("enc", "dec", "cross")):
        h = np.array(p["heads"][d][kind])
        with col:
            chart(effect_map(h, [_("layer {layer}").format(layer=i + 1) for i in range(len(h))],
                             [str(j + 1) for j in range(h.shape[1])], title=_(KIND_TITLES[kind]), x_title=_("head"),
                             hover_col=_("head") + " "), key=f"patch_heads_{kind}", name=f"patching-heads-{kind}-{d}")
    st.caption(_("A head's site is its output before W_O, at every position at once."))
    edges(p)
    contrast_set(ctx)
    st.caption(_("The same numbers on the command line, as JSON:"))
    st.code(f"python -m model.patch --clean {shlex.quote(result.source)} --corrupt {shlex.quote(corrupt)}",
            language="bash")
    downloads(ctx, extra=[(_("Patching (JSON)"), "patching.json", "application/json",
                           lambda: json.dumps(p, ensure_ascii=False))])


def edges(p: dict):
    """The strongest cross-attention edges by attribution patching, each confirmed by exact patching."""
    if not p["edges"]:
        return
    st.markdown(_("**The strongest cross-attention edges** (denoising)"))
    estimated, exactly = _("estimated"), _("exact")
    rows = [{_("layer"): e["layer"] + 1, _("head"): e["head"] + 1,
             _("query (decoder input)"): p["tgt_tokens"][e["query"]],
             _("key (source token)"): p["src_tokens"]["clean"][e["key"]], estimated: e["estimate"],
             exactly: e["exact"]} for e in p["edges"]]
    number = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(rows, hide_index=True, width="stretch", column_config={estimated: number, exactly: number})
    est = np.array([e["estimate"] for e in p["edges"]])
    exact = np.array([e["exact"] for e in p["edges"]])
    st.caption(_("An edge is one head's weight on one source token at one query, α·v: patched alone. Every edge was "
                 "estimated from one backward pass (attribution patching, Nanda 2023; Kramár et al., 2024) and these "
                 "{n} strongest were then patched exactly: the largest gap between the two is {gap:.3f}.").format(
                   n=len(rows), gap=np.abs(est - exact).max()))


def contrast_set(ctx: Context):
    """Which heads carry a noun's gender, a colour, a number: the shipped table over the contrast set."""
    table = checkpoint_json(ctx.checkpoint, TABLE)
    if table is None:
        st.info(_("No contrast-set table beside this checkpoint: `{command}` writes it (this one alone: `python -m "
                  "model.patch --pairs assets/contrast/pairs.jsonl --out DIR/patching.json`).").format(
                    command=command_line(ctx.checkpoint)))
        return
    if not table["categories"]:
        st.info(_("No pair of the contrast set changes this model's translation ({n} pairs tried), so its table has "
                  "no category to show.").format(n=len(table["skipped"])))
        return
    st.markdown(_("**Over the contrast set** ({n} pairs from Multi30k): which heads carry a noun's gender, a colour, "
                  "a number?").format(n=table["data"]["n"]))
    st.markdown("\n".join(f"- {literal(c['summary'])}" for c in table["categories"].values()))
    names = list(table["categories"])
    category = st.segmented_control(_("Category"), names, key="patch_category", default=names[0])
    c = table["categories"][category or names[0]]
    cross = c["denoising"]["heads"]["cross"]
    mean, low, high = (np.array(cross[k]) for k in ("mean", "low", "high"))
    chart(effect_map(mean, [_("layer {layer}").format(layer=i + 1) for i in range(len(mean))],
                     [str(j + 1) for j in range(mean.shape[1])],
                     title=_("Cross-attention heads, {category}: mean effect over {n} pairs (denoising)").format(
                         category=category, n=c["n"]),
                     x_title=_("head"), hover_col=_("head") + " "),
          key="patch_table", name=f"patching-contrast-{category}")
    layer, head = np.unravel_index(int(np.argmax(mean)), mean.shape)
    st.caption(_("95% bootstrap interval of the strongest, layer {layer} head {head}: {low:.2f} to {high:.2f}. "
                 "Computed offline in {minutes:.0f} minutes: `{command}`.").format(
                   layer=layer + 1, head=head + 1, low=low[layer, head], high=high[layer, head],
                   minutes=table["data"]["seconds"] / 60, command=table["data"]["command"]))
