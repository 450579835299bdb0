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
SAID = {"denoising": "Each site taken from the clean run into the corrupted one (denoising): 1 means this site alone "
                     "brings the clean word back, 0 that it does nothing alone.",
        "noising": "Each site taken from the corrupted run into the clean one (noising): 0 means this site alone "
                   "destroys the clean word, 1 that it does nothing alone."}
KIND_TITLES = {"enc": "Encoder self-attention heads", "dec": "Decoder self-attention heads",
               "cross": "Cross-attention heads"}


def read_link(params, cfg, notes: list):
    """s2: the corrupted sentence; dir: denoising or noising."""
    s2 = text_param(params, "s2", "the second sentence (s2)", notes)
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
        return "the same with a word changed"
    n = changed_words(clean, corrupt)
    return "no word changed" if n == 0 else "1 word changed" if n == 1 else f"{n} words changed"


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
    st.caption("Change one word and see where the change travels: every activation of one run is put, one site at a "
               "time, into the other run, and the change of the logit difference between the two words says how "
               "much of the difference that site carries (Vig et al., 2020; Meng et al., 2022).")
    german = ctx.translator.origin["languages"][0] == "de"  # the contrast pairs and swaps are German sentences
    pairs = contrast_pairs() if german else []
    length = len(result.src_tokens)  # a swap that changes the token count (a word of other pieces) cannot be patched
    suggestions = [x for x in swapped(result.source) if len(ctx.translator.source_ids(x[1])[0]) == length]
    if not st.session_state.get("s2") and suggestions:
        st.session_state.s2 = suggestions[0][1]  # a swap the contrast set uses, on this sentence
    left, right = st.columns([3, 2])
    with left:
        corrupt = text_box(st, f"Second sentence: {changes(result.source, st.session_state.get('s2', ''))} "
                               "(press Enter)", "s2", "The second sentence")
    if pairs:
        right.selectbox(f"Or a contrast pair from Multi30k ({len(pairs)})", range(len(pairs)), key=PAIR_KEY,
                        index=None, placeholder="pick a pair…", on_change=use_pair,
                        format_func=lambda i: f"{pairs[i]['category']}: {pairs[i]['de'][0]} → {pairs[i]['de'][1]}: "
                                              f"{pairs[i]['clean'][:60]}")
    if not corrupt:
        st.info("Type a second sentence that differs from the first in a word (the same number of tokens), or pick "
                "a contrast pair.")
        contrast_set(ctx)
        return
    try:
        with waiting_notice("Patching") as waiting, st.spinner("Patching every site, both directions…"):
            p = patching(ctx.checkpoint, result.source, corrupt, _waiting=waiting)
    except InputError as e:
        st.warning(literal(f"{e}."))
        contrast_set(ctx)
        return
    st.markdown(f"**Where the difference travels:** {literal(p['summary'])}")
    st.session_state.setdefault(DIR_KEY, "denoising")
    d = st.segmented_control("Direction", list(DIRECTIONS), key=DIR_KEY, required=True,
                             format_func=lambda x: {"denoising": "clean into corrupted",
                                                    "noising": "corrupted into clean"}[x])
    ld = p["ld"]
    st.caption(f"{SAID[d]} The metric: (LD_patched − LD_corrupt) / (LD_clean − LD_corrupt) at step {p['step'] + 1}, "
               f"LD = logit(“{literal(p['words'][0])}”) − logit(“{literal(p['words'][1])}”): {ld['clean']:.2f} in "
               f"the clean run, {ld['corrupt']:.2f} in the corrupted one, both with the clean prefix.")
    src = [c if c == x else f"{c}→{x}" for c, x in zip(p["src_tokens"]["clean"], p["src_tokens"]["corrupt"])]
    layers = lambda n: ["embedding", *(f"after layer {i}" for i in range(1, n))]  # noqa: E731
    enc, dec = np.array(p["encoder"][d]), np.array(p["decoder"][d])
    sub = subtitle(result.source)
    chart(effect_map(enc, layers(len(enc)), src, title="Encoder: the residual stream<br>at each source position",
                     subtitle=sub, x_title="source position", marked=p["swapped"], hover_row="encoder ",
                     hover_col="source token "), key="patch_enc", name=f"patching-encoder-{d}")
    chart(effect_map(dec, layers(len(dec)), p["tgt_tokens"], x_title="decoder input (the step reads the last)",
                     title=f"Decoder: the residual stream<br>at each position up to step {p['step'] + 1}",
                     hover_row="decoder ", hover_col="decoder input "), key="patch_dec", name=f"patching-decoder-{d}")
    cols = st.columns(3)
    for col, kind in zip(cols, ("enc", "dec", "cross")):
        h = np.array(p["heads"][d][kind])
        with col:
            chart(effect_map(h, [f"layer {i + 1}" for i in range(len(h))], [str(j + 1) for j in range(h.shape[1])],
                             title=KIND_TITLES[kind], x_title="head", hover_col="head "), key=f"patch_heads_{kind}",
                  name=f"patching-heads-{kind}-{d}")
    st.caption("A head's site is its output before W_O, at every position at once.")
    edges(p)
    contrast_set(ctx)
    st.caption("The same numbers on the command line, as JSON:")
    st.code(f"python -m model.patch --clean {shlex.quote(result.source)} --corrupt {shlex.quote(corrupt)}",
            language="bash")
    downloads(ctx, extra=[("Patching (JSON)", "patching.json", "application/json",
                           lambda: json.dumps(p, ensure_ascii=False))])


def edges(p: dict):
    """The strongest cross-attention edges by attribution patching, each confirmed by exact patching."""
    if not p["edges"]:
        return
    st.markdown("**The strongest cross-attention edges** (denoising)")
    rows = [{"layer": e["layer"] + 1, "head": e["head"] + 1, "query (decoder input)": p["tgt_tokens"][e["query"]],
             "key (source token)": p["src_tokens"]["clean"][e["key"]], "estimated": e["estimate"],
             "exact": e["exact"]} for e in p["edges"]]
    number = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(rows, hide_index=True, width="stretch", column_config={"estimated": number, "exact": number})
    est = np.array([e["estimate"] for e in p["edges"]])
    exact = np.array([e["exact"] for e in p["edges"]])
    st.caption(f"An edge is one head's weight on one source token at one query, α·v: patched alone. Every edge was "
               f"estimated from one backward pass (attribution patching, Nanda 2023; Kramár et al., 2024) and these "
               f"{len(rows)} strongest were then patched exactly: the largest gap between the two is "
               f"{np.abs(est - exact).max():.3f}.")


def contrast_set(ctx: Context):
    """Which heads carry a noun's gender, a colour, a number: the shipped table over the contrast set."""
    table = checkpoint_json(ctx.checkpoint, TABLE)
    if table is None:
        st.info(f"No contrast-set table beside this checkpoint: `{command_line(ctx.checkpoint)}` writes it (this one "
                "alone: `python -m model.patch --pairs assets/contrast/pairs.jsonl --out DIR/patching.json`).")
        return
    if not table["categories"]:
        st.info(f"No pair of the contrast set changes this model's translation ({len(table['skipped'])} pairs "
                "tried), so its table has no category to show.")
        return
    st.markdown(f"**Over the contrast set** ({table['data']['n']} pairs from Multi30k): which heads carry a noun's "
                "gender, a colour, a number?")
    st.markdown("\n".join(f"- {literal(c['summary'])}" for c in table["categories"].values()))
    names = list(table["categories"])
    category = st.segmented_control("Category", names, key="patch_category", default=names[0])
    c = table["categories"][category or names[0]]
    cross = c["denoising"]["heads"]["cross"]
    mean, low, high = (np.array(cross[k]) for k in ("mean", "low", "high"))
    chart(effect_map(mean, [f"layer {i + 1}" for i in range(len(mean))], [str(j + 1) for j in range(mean.shape[1])],
                     title=f"Cross-attention heads, {category}: mean effect over {c['n']} pairs (denoising)",
                     x_title="head", hover_col="head "),
          key="patch_table", name=f"patching-contrast-{category}")
    layer, head = np.unravel_index(int(np.argmax(mean)), mean.shape)
    st.caption(f"95% bootstrap interval of the strongest, layer {layer + 1} head {head + 1}: "
               f"{low[layer, head]:.2f} to {high[layer, head]:.2f}. Computed offline in "
               f"{table['data']['seconds'] / 60:.0f} minutes: `{table['data']['command']}`.")
