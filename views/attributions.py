"""Beyond attention: which tokens each English word's prediction rests on, by gradients and by perturbation
(model/attribute.py), read beside ALTI+.

    ?s=...&view=attribute&method=integrated_gradients
    ?s=...&view=attribute&method=contrastive&foil=dog      each step against "dog" (no foil: its runner-up)

The numbers are `Translator.attribute` over the page's greedy output; ALTI+'s source share is the cached call the
Contributions view makes too (views.calls.contributions).
"""

import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model import faithfulness
from model.attribute import METHODS, SIGNED
from model.methods import METHODS as TABLE
from model.errors import InputError
from viz.attributions import largest_score
from viz.labels import subtitle, token_labels

from . import Context
from .calls import HEAVY, contributions, faithfulness_table, load_translator, models, outside_cache, waiting_notice
from .export import downloads
from .state import choice_param, page_view
from .widgets import chart, literal, map_table, table_labels, trust_line

METHOD_KEY, FOIL_KEY = "attr_method", "attr_foil"
# The first method where no faithfulness table ships (first_method): not heavy (one batched pass per token replaced),
# and its scores are what removing a token does, the removal the Faithfulness view measures by.
DEFAULT_METHOD = "leave_one_out"
RUNNER_UP = "each step's runner-up"  # the foil picker's default: each step against its own second choice
FOIL_WORDS = 2000  # the foil picker offers the English vocabulary's first (most frequent) words

# One plain line each, under the switch; the target F of a step is log p(the word it chose).
EXPLAINED = {
    "gradient": "How much the chosen word's log-probability would move if a token's embedding were nudged: the "
                "length of the gradient, so a size with no direction (Simonyan et al., 2014).",
    "input_x_gradient": "The gradient times the embedding itself: a first-order guess of how far each token "
                        "pushed the chosen word's log-probability up (red) or down (blue) (Shrikumar et al., 2016).",
    "integrated_gradients": "Gradients summed along a straight path from a baseline (every word read as <unk>) to "
                            "the real sentence: a step's scores add up to how much its log-probability changed along "
                            "the way (Sundararajan et al., 2017).",
    "leave_one_out": "Replace one token by <unk>, keep the rest, and see how far the chosen word's log-probability "
                     "drops (red) or rises (blue) (Li et al., 2016).",
    "value_zeroing": "Zero one token's value vector in each attention block, measure how much the block's outputs "
                     "change, and roll the shares through the layers as ALTI+ does (Mohebbi et al., 2023).",
    "contrastive": "Input × gradient of the gap between the chosen word's log-probability and a foil's: which "
                   "tokens made the model say this word rather than that one (Yin and Neubig, 2022).",
}


def english_words(checkpoint: str | None) -> list[str]:
    """The foils on offer: the English vocabulary's first FOIL_WORDS entries, less the two the model never writes."""
    vocab = load_translator(checkpoint).tgt_vocab
    return [w for w in vocab.itos[:FOIL_WORDS] if w not in vocab.never_written]


def trusted(table) -> list[str]:
    """The view's methods that a faithfulness table finds faithful and plausible on the source side, best first
    (model/faithfulness.py trusted, which the Faithfulness view's verdict reads too)."""
    return [m for m in faithfulness.trusted(table) if m in METHODS]


def first_method(checkpoint: str | None, source: str = "German") -> tuple[str, str]:
    """The method the view opens on, and a sentence saying why: the best of trusted(the shipped table), else
    DEFAULT_METHOD (`source`: what the page calls the source language)."""
    table = faithfulness_table(checkpoint)
    fallback = TABLE[DEFAULT_METHOD].label
    if table is None:
        return DEFAULT_METHOD, (f"No faithfulness table ships with this model, so the view opens on {fallback}: its "
                                "scores are what removing each token does, and it is quick.")
    src = (table.data or {}).get("src")
    where = f"{table.n_sentences} sentences of " + (Path(src).name.split(".")[0] if src else "the test set")
    found = trusted(table)
    if not found:
        return DEFAULT_METHOD, (f"The shipped faithfulness table finds none of these methods both faithful and "
                                f"plausible on {where}, so the view opens on {fallback}, whose scores are what "
                                "removing each token does.")
    return found[0], (f"Opened on {TABLE[found[0]].label}: the shipped faithfulness table finds it faithful and "
                      f"plausible on {where}. Removing the {source} tokens it ranks first lowers the probability of "
                      "the word written more than random orders do, keeping only them lowers it less, and its "
                      "alignments are closer to people's than a diagonal alignment's (its numbers: the next line).")


def read_link(params, cfg, notes: list):
    """method: one of METHODS; foil: with method=contrastive, a word of english_words (none: each runner-up)."""
    method = choice_param(params, "method", METHODS, notes)
    if method is not None:
        st.session_state[METHOD_KEY] = method
    foil = params.get("foil")
    if foil is None:
        return
    if (method or st.session_state.get(METHOD_KEY)) != "contrastive":  # contrastive is never the first method
        notes.append(f"foil={foil[:40]!r} is read only with method=contrastive")
    elif foil not in english_words(models().get(st.session_state.get("model"))):
        notes.append(f"foil={foil[:40]!r} is not one of the first {FOIL_WORDS} words of the model's English "
                     "vocabulary")
    else:
        st.session_state[FOIL_KEY] = foil


def link_params(cfg) -> dict:
    method = st.session_state.get(METHOD_KEY, DEFAULT_METHOD)
    foil = st.session_state.get(FOIL_KEY, RUNNER_UP)
    return {"method": method, **({"foil": foil} if method == "contrastive" and foil != RUNNER_UP else {})}


@st.cache_data(max_entries=32, show_spinner=False)
def attribution(checkpoint: str | None, sentence: str, output_tokens: tuple, method: str, foil: str | None,
                _waiting=None, _progress=None):
    """One method's Attribution of every step of an output; the heavy methods take their turn (HEAVY)."""
    def run():
        return load_translator(checkpoint).attribute(sentence, method, contrast=foil,
                                                     output_tokens=list(output_tokens), progress=_progress)
    if not TABLE[method].heavy:  # seconds on a long sentence: the heavy ones take turns (HEAVY)
        return run()
    with HEAVY.turn(_waiting):
        return run()


@st.fragment
@page_view
def attributions_view(ctx: Context):
    result = ctx.result
    source, target = ctx.names
    st.caption("Attention says where the model looked; these methods ask what the prediction rested on: for each "
               f"{target} word, a score for every {source} token and every {target} token written before it.")
    first, why = first_method(ctx.checkpoint, source)
    st.session_state.setdefault(METHOD_KEY, first)
    method = st.segmented_control("Method", METHODS, key=METHOD_KEY, required=True, format_func=lambda m: TABLE[m].label)
    if method == first:
        st.caption(literal(why))
    st.caption(literal(EXPLAINED[method]))
    trust_line(ctx.checkpoint, {"": method}, names=ctx.names)  # the contrastive target is not p(word): it has no line
    foil = None
    if method == "contrastive":
        picked = st.columns([2, 3])[0].selectbox(
            "Foil: the word each step is contrasted with", [RUNNER_UP, *english_words(ctx.checkpoint)], key=FOIL_KEY,
            help="Each step's target is log p(its word) − log p(the foil). The runner-up is the word the step found "
                 "most likely after its own.")
        foil = None if picked == RUNNER_UP else picked

    output = tuple(s.token for s in result.steps)
    try:
        a = run_attribution(ctx, method, foil, output)
    except ImportError:  # model/value_zeroing.py is written elsewhere: the view waits for it
        if method != "value_zeroing":
            raise  # a missing library (captum) is the page's error, not a method to wait for
        st.info("Value zeroing is not available yet: pick another method.")
        command_hint(result.source, method, foil)
        return
    except InputError as e:
        st.warning(literal(f"{e}."))
        return
    with waiting_notice("Contributions") as waiting:
        c = contributions(ctx.checkpoint, result.source, output, _waiting=waiting)

    rows, _ = token_labels(result, "tgt")
    name = TABLE[method].label
    signed = method in SIGNED
    target = "log p(its word) − log p(the foil)" if method == "contrastive" else "log p(its word)"
    st.markdown(f"**Step × token: {literal(name)} scores**")
    one_range = st.toggle("One colour range for both maps", value=True, key="attr_one_range",
                          help="Off: each map runs to its own largest score, so a map of small scores looks as strong "
                               "as one of large scores.")
    ranges = ("Both maps share one range, so their colours compare" if one_range else "Each map has its own range")
    st.caption(f"The first map holds each step's score for each source token; the second, for each token of its "
               f"prefix (grey: later tokens it cannot see). A step's target is {target}. " +
               (f"Red: the token raised it; blue: lowered it; white: no effect. {ranges}, centred on 0." if signed
                else f"From dark (none) to yellow (the most). {ranges}."))
    top = max(largest_score(a.source), largest_score(a.prefix, causal=True)) if one_range else None
    steps = [f"step {t + 1}: {r}" for t, r in enumerate(rows)]  # counted from 1, as the hover and the CSV count
    maps = (
        (viz.attribution_map(a.source, rows, a.src_tokens, signed=signed, key_unknown=result.src_unknown,
                             title=f"{viz.plain(name.capitalize())}: source tokens", key_axis="source token", top=top),
         a.source, table_labels(a.src_tokens, result.src_unknown), None, "source"),
        (viz.attribution_map(a.prefix, rows, a.tgt_tokens, signed=signed, causal=True,
                             title=f"{viz.plain(name.capitalize())}: prefix tokens",
                             key_axis="prefix token (decoder input)", top=top),
         a.prefix, table_labels(a.tgt_tokens), viz.causal_mask(len(rows), len(a.tgt_tokens)), "prefix"))
    for col, (fig, values, columns, masked, side) in zip(st.columns(2), maps):
        with col:
            chart(fig, key=f"attr_{side}", name=f"attributions-{method}-{side}", width="stretch")
            map_table(values, steps, columns, f"{name} scores of the {side} tokens; rows: steps (the token read → "
                      "the token chosen)", key=f"attr_{side}_table", corner="step \\ token", masked=masked)

    if a.foils is not None:
        st.markdown("**Foils**: " + "; ".join(f"step {t + 1}, “{literal(word)}” rather than “{literal(f)}”"
                                              for t, (word, f) in enumerate(zip(a.output_tokens, a.foils))))
    if a.completeness_gap is not None:
        completeness(a, steps)

    chart(viz.share_comparison(rows, {name: a.source_share, "ALTI+": c.source_share},
                               title="Source share of every step",
                               subtitle=subtitle(result.source)),
          key="attr_share", name=f"source-share-{method}")
    st.caption("A step's source share by this method: the size of its source scores (|score|, summed) over the size "
               "of all its scores, source and prefix together" +
               (" (for the gradient, the lengths of the gradients, inseq's convention)" if method == "gradient" else "")
               + ". ALTI+'s is the Contributions view's: its source contributions, which add up to the share.")
    command_hint(result.source, method, foil)
    downloads(ctx, extra=[("Attributions (JSON)", f"attributions-{method}.json", "application/json",
                           lambda: json.dumps(a.to_json(), ensure_ascii=False))])


def run_attribution(ctx: Context, method: str, foil: str | None, output: tuple):
    """The cached attribution, its wait for a turn shown, and integrated gradients' steps as a progress bar."""
    bar = st.empty()  # filled only while integrated gradients runs: a cache hit shows nothing

    def progress(done: int, total: int):
        bar.progress(done / total, text=f"Integrated gradients: step {done} of {total}…")

    try:
        with waiting_notice(TABLE[method].label.capitalize()) as waiting:
            return attribution(ctx.checkpoint, ctx.result.source, output, method, foil,
                               _waiting=waiting,
                               _progress=outside_cache(progress) if method == "integrated_gradients" else None)
    finally:
        bar.empty()


def completeness(a, steps: list[str]):
    """Integrated gradients' check on itself: a step's scores should add up to F - F' (Sundararajan et al., 2017,
    section 3, "completeness"); the gap is what the 64-point quadrature misses."""
    gap = np.asarray(a.completeness_gap, dtype=float)
    change = np.asarray(a.f - a.baseline_f, dtype=float)
    relative = gap / np.maximum(np.abs(change), 1e-12)
    worst, worst_rel = int(gap.argmax()), int(relative.argmax())
    st.markdown(f"**Completeness**: a step's scores should add up to F − F′, its log-probability with the real "
                f"sentence minus with the baseline. The largest gap is {gap[worst]:.4f} (step {worst + 1}); relative "
                f"to |F − F′| the largest is {relative[worst_rel]:.2%} (step {worst_rel + 1}).")
    number = st.column_config.NumberColumn(format="%.4f")
    st.dataframe(pd.DataFrame({  # the gap first: on a phone the last columns are a scroll away
        "step": steps, "gap": gap, "gap / |F − F′|": 100 * relative, "F − F′": change,
        "sum of scores": a.source.sum(axis=1) + a.prefix.sum(axis=1), "F": a.f, "F′ (baseline)": a.baseline_f}),
        hide_index=True, width="stretch",
        column_config={"gap / |F − F′|": st.column_config.NumberColumn(format="%.2f%%"),
                       **{c: number for c in ("gap", "F − F′", "sum of scores", "F", "F′ (baseline)")}})


def command_hint(sentence: str, method: str, foil: str | None):
    """The `python -m model.inspect attribute` line that prints the same numbers."""
    args = ["--method", method, *(["--contrast", foil] if foil else [])]
    end = ["--"] if sentence.startswith("-") else []  # a sentence starting with "-" is not read as an option
    st.caption("The same numbers on the command line, as JSON:")
    st.code(" ".join(["python -m model.inspect attribute", *map(shlex.quote, args), *end, shlex.quote(sentence)]),
            language="bash")
