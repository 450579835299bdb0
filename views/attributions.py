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
from model.i18n import N_, _, kept
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
RUNNER_UP = N_("each step's runner-up")  # the foil picker's default (its value, translated where shown): each step
# against its own second choice
FOIL_WORDS = 2000  # the foil picker offers the English vocabulary's first (most frequent) words

# One plain line each, under the switch; the target F of a step is log p(the word it chose).
EXPLAINED = {
    "gradient": N_("How much the chosen word's log-probability would move if a token's embedding were nudged: the "
                   "length of the gradient, so a size with no direction (Simonyan et al., 2014)."),
    "input_x_gradient": N_("The gradient times the embedding itself: a first-order guess of how far each token "
                           "pushed the chosen word's log-probability up (red) or down (blue) (Shrikumar et al., "
                           "2016)."),
    "integrated_gradients": N_("Gradients summed along a straight path from a baseline (every word read as <unk>) "
                               "to the real sentence: a step's scores add up to how much its log-probability "
                               "changed along the way (Sundararajan et al., 2017)."),
    "leave_one_out": N_("Replace one token by <unk>, keep the rest, and see how far the chosen word's log-probability "
                        "drops (red) or rises (blue) (Li et al., 2016)."),
    "value_zeroing": N_("Zero one token's value vector in each attention block, measure how much the block's outputs "
                        "change, and roll the shares through the layers as ALTI+ does (Mohebbi et al., 2023)."),
    "contrastive": N_("Input × gradient of the gap between the chosen word's log-probability and a foil's: which "
                      "tokens made the model say this word rather than that one (Yin and Neubig, 2022)."),
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
        return DEFAULT_METHOD, _("No faithfulness table ships with this model, so the view opens on {method}: its "
                                 "scores are what removing each token does, and it is quick.").format(method=fallback)
    src = (table.data or {}).get("src")
    where = (_("{n} sentences of {data}").format(n=table.n_sentences, data=Path(src).name.split(".")[0]) if src else
             _("{n} sentences of the test set").format(n=table.n_sentences))
    found = trusted(table)
    if not found:
        return DEFAULT_METHOD, _("The shipped faithfulness table finds none of these methods both faithful and "
                                 "plausible on {where}, so the view opens on {method}, whose scores are what "
                                 "removing each token does.").format(where=where, method=fallback)
    return found[0], _("Opened on {method}: the shipped faithfulness table finds it faithful and plausible on "
                       "{where}. Removing the {source} tokens it ranks first lowers the probability of the word "
                       "written more than random orders do, keeping only them lowers it less, and its alignments are "
                       "closer to people's than a diagonal alignment's (its numbers: the next line).").format(
                           method=TABLE[found[0]].label, where=where, source=source)


def read_link(params, cfg, notes: list):
    """method: one of METHODS; foil: with method=contrastive, a word of english_words (none: each runner-up)."""
    method = choice_param(params, "method", METHODS, notes)
    if method is not None:
        st.session_state[METHOD_KEY] = method
    foil = params.get("foil")
    if foil is None:
        return
    if (method or st.session_state.get(METHOD_KEY)) != "contrastive":  # contrastive is never the first method
        notes.append(_("foil={foil} is read only with method=contrastive").format(foil=repr(foil[:40])))
    elif foil not in english_words(models().get(st.session_state.get("model"))):
        notes.append(_("foil={foil} is not one of the first {n} words of the model's English vocabulary").format(
            foil=repr(foil[:40]), n=FOIL_WORDS))
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
    st.caption(_("Attention says where the model looked; these methods ask what the prediction rested on: for each "
                 "{target} word, a score for every {source} token and every {target} token written before it.").format(
                   target=target, source=source))
    first, why = first_method(ctx.checkpoint, source)
    st.session_state.setdefault(METHOD_KEY, first)
    method = st.segmented_control(_("Method"), METHODS, key=METHOD_KEY, required=True,
                                  format_func=lambda m: TABLE[m].label)
    if method == first:
        st.caption(literal(why))
    st.caption(literal(_(EXPLAINED[method])))
    trust_line(ctx.checkpoint, {"": method}, names=ctx.names)  # the contrastive target is not p(word): it has no line
    foil = None
    if method == "contrastive":
        picked = st.columns([2, 3])[0].selectbox(
            _("Foil: the word each step is contrasted with"), [RUNNER_UP, *english_words(ctx.checkpoint)],
            key=FOIL_KEY, format_func=kept(lambda w: _(RUNNER_UP) if w == RUNNER_UP else w),
            help=_("Each step's target is log p(its word) − log p(the foil). The runner-up is the word the step "
                   "found most likely after its own."))
        foil = None if picked == RUNNER_UP else picked

    output = tuple(s.token for s in result.steps)
    try:
        a = run_attribution(ctx, method, foil, output)
    except ImportError:  # model/value_zeroing.py is written elsewhere: the view waits for it
        if method != "value_zeroing":
            raise  # a missing library (captum) is the page's error, not a method to wait for
        st.info(_("Value zeroing is not available yet: pick another method."))
        command_hint(result.source, method, foil)
        return
    except InputError as e:
        st.warning(literal(f"{e}."))
        return
    with waiting_notice(_("Contributions")) as waiting:
        c = contributions(ctx.checkpoint, result.source, output, _waiting=waiting)

    rows, _unknown = token_labels(result, "tgt")
    name = TABLE[method].label
    signed = method in SIGNED
    target = _("log p(its word) − log p(the foil)") if method == "contrastive" else _("log p(its word)")
    st.markdown(_("**Step × token: {method} scores**").format(method=literal(name)))
    one_range = st.toggle(_("One colour range for both maps"), value=True, key="attr_one_range",
                          help=_("Off: each map runs to its own largest score, so a map of small scores looks as "
                                 "strong as one of large scores."))
    if signed:
        colours = (_("Red: the token raised it; blue: lowered it; white: no effect. Both maps share one range, so "
                     "their colours compare, centred on 0.") if one_range else
                   _("Red: the token raised it; blue: lowered it; white: no effect. Each map has its own range, "
                     "centred on 0."))
    else:
        colours = (_("From dark (none) to yellow (the most). Both maps share one range, so their colours compare.")
                   if one_range else _("From dark (none) to yellow (the most). Each map has its own range."))
    st.caption(_("The first map holds each step's score for each source token; the second, for each token of its "
                 "prefix (grey: later tokens it cannot see). A step's target is {target}.").format(target=target)
               + " " + colours)
    top = max(largest_score(a.source), largest_score(a.prefix, causal=True)) if one_range else None
    # counted from 1, as the hover and the CSV count
    steps = [_("step {step}: {token}").format(step=t + 1, token=r) for t, r in enumerate(rows)]
    shown = viz.plain(name.capitalize())
    maps = (
        (viz.attribution_map(a.source, rows, a.src_tokens, signed=signed, key_unknown=result.src_unknown,
                             title=_("{method}: source tokens").format(method=shown), key_axis=_("source token"),
                             top=top),
         a.source, table_labels(a.src_tokens, result.src_unknown), None, "source",
         _("{method} scores of the source tokens; rows: steps (the token read → the token chosen)")),
        (viz.attribution_map(a.prefix, rows, a.tgt_tokens, signed=signed, causal=True,
                             title=_("{method}: prefix tokens").format(method=shown),
                             key_axis=_("prefix token (decoder input)"), top=top),
         a.prefix, table_labels(a.tgt_tokens), viz.causal_mask(len(rows), len(a.tgt_tokens)), "prefix",
         _("{method} scores of the prefix tokens; rows: steps (the token read → the token chosen)")))
    for col, (fig, values, columns, masked, side, what) in zip(st.columns(2), maps):
        with col:
            chart(fig, key=f"attr_{side}", name=f"attributions-{method}-{side}", width="stretch")
            map_table(values, steps, columns, what.format(method=name), key=f"attr_{side}_table",
                      corner=_("step \\ token"), masked=masked)

    if a.foils is not None:
        foils = "; ".join(_("step {step}, “{word}” rather than “{foil}”").format(step=t + 1, word=literal(word),
                                                                                foil=literal(f))
                          for t, (word, f) in enumerate(zip(a.output_tokens, a.foils)))
        st.markdown(_("**Foils**: {foils}").format(foils=foils))
    if a.completeness_gap is not None:
        completeness(a, steps)

    chart(viz.share_comparison(rows, {name: a.source_share, "ALTI+": c.source_share},
                               title=_("Source share of every step"),
                               subtitle=subtitle(result.source)),
          key="attr_share", name=f"source-share-{method}")
    st.caption(_("A step's source share by this method: the size of its source scores (|score|, summed) over the "
                 "size of all its scores, source and prefix together (for the gradient, the lengths of the gradients, "
                 "inseq's convention). ALTI+'s is the Contributions view's: its source contributions, which add up "
                 "to the share.") if method == "gradient" else
               _("A step's source share by this method: the size of its source scores (|score|, summed) over the "
                 "size of all its scores, source and prefix together. ALTI+'s is the Contributions view's: its source "
                 "contributions, which add up to the share."))
    command_hint(result.source, method, foil)
    downloads(ctx, extra=[(_("Attributions (JSON)"), f"attributions-{method}.json", "application/json",
                           lambda: json.dumps(a.to_json(), ensure_ascii=False))])


def run_attribution(ctx: Context, method: str, foil: str | None, output: tuple):
    """The cached attribution, its wait for a turn shown, and integrated gradients' steps as a progress bar."""
    bar = st.empty()  # filled only while integrated gradients runs: a cache hit shows nothing

    def progress(done: int, total: int):
        bar.progress(done / total, text=_("Integrated gradients: step {done} of {total}…").format(done=done,
                                                                                                  total=total))

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
    st.markdown(_("**Completeness**: a step's scores should add up to F − F′, its log-probability with the real "
                  "sentence minus with the baseline. The largest gap is {gap:.4f} (step {step}); relative to "
                  "|F − F′| the largest is {relative:.2%} (step {relative_step}).").format(
                    gap=gap[worst], step=worst + 1, relative=relative[worst_rel], relative_step=worst_rel + 1))
    number = st.column_config.NumberColumn(format="%.4f")
    gap_name, relative_name, scores_name, baseline_name = (_("gap"), _("gap / |F − F′|"), _("sum of scores"),
                                                           _("F′ (baseline)"))
    st.dataframe(pd.DataFrame({  # the gap first: on a phone the last columns are a scroll away
        _("step"): steps, gap_name: gap, relative_name: 100 * relative, "F − F′": change,
        scores_name: a.source.sum(axis=1) + a.prefix.sum(axis=1), "F": a.f, baseline_name: a.baseline_f}),
        hide_index=True, width="stretch",
        column_config={relative_name: st.column_config.NumberColumn(format="%.2f%%"),
                       **{c: number for c in (gap_name, "F − F′", scores_name, "F", baseline_name)}})


def command_hint(sentence: str, method: str, foil: str | None):
    """The `python -m model.inspect attribute` line that prints the same numbers."""
    args = ["--method", method, *(["--contrast", foil] if foil else [])]
    end = ["--"] if sentence.startswith("-") else []  # a sentence starting with "-" is not read as an option
    st.caption(_("The same numbers on the command line, as JSON:"))
    st.code(" ".join(["python -m model.inspect attribute", *map(shlex.quote, args), *end, shlex.quote(sentence)]),
            language="bash")
