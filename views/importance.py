"""Head importance over the test set: BLEU drop and loss rise with each head alone switched off."""

import json
import time

import numpy as np
import streamlit as st

import viz
from model.head_importance import head_importance_for_sentence
from model.heads import KIND_NAMES, Head
from model.i18n import N_, _, kept
from model.tables import command_line

from . import Context
from .calls import HEAVY, checkpoint_json, load_translator, waiting_notice
from .export import downloads
from .state import open_head, page_view
from .widgets import chart, grid_table


@st.cache_data(max_entries=32, show_spinner=False)  # its caller's spinner says what it computes, in the page's language
def sentence_importance(checkpoint: str | None, sentence: str, _waiting=None) -> tuple[dict, float]:
    """Loss rise of this sentence's greedy output with each head masked alone, and the seconds it took (a heavy
    computation: it takes its turn; the seconds are the computation's own)."""
    with HEAVY.turn(_waiting):
        start = time.perf_counter()
        rise = head_importance_for_sentence(load_translator(checkpoint), sentence)
        return rise, time.perf_counter() - start


@page_view
def importance_view(ctx: Context):
    # Not a fragment: "Open in its view" changes the view switch outside this view, which a fragment
    # rerun would never redraw (the button did nothing in a real browser).
    # This sentence's computation first: its notice shows at once, not after the test set's charts are drawn.
    with waiting_notice(_("Head importance")) as waiting, st.spinner(_("Switching each head off in turn…")):
        now = sentence_importance(ctx.checkpoint, ctx.result.source, _waiting=waiting)
    table = checkpoint_json(ctx.checkpoint, "head_importance.json")
    if table is None:
        st.info(_("No head-importance table of the test set next to this checkpoint. Compute it with `{command}` "
                  "(this one alone: `python -m model.head_importance --src test_2016_flickr.de.gz --ref "
                  "test_2016_flickr.en.gz`).").format(command=command_line(ctx.checkpoint)))
    else:
        corpus_importance(ctx, table)
    this_sentence(*now)
    downloads(ctx, extra=[] if table is None else [
        (_("Head importance of the test set (JSON)"), "head_importance.json", "application/json",
         lambda: json.dumps(table, indent=1))])


def this_sentence(rise: dict, seconds: float):
    """Importance for the sentence on the page, computed now: 1 + 72 masked variants in one batch."""
    st.markdown(_("**This sentence**, computed now"))
    st.caption(_("How much the loss of this sentence's own translation rises (teacher-forced, nats per token) when "
                 "each head alone is switched off: the baseline and all {n} masked variants ran as rows of one batch, "
                 "in {ms:.0f} ms. One sentence is one sample: a head that matters here may not matter on average, and "
                 "the other way round.").format(n=sum(v.size for v in rise.values()), ms=seconds * 1000))
    lim = max(float(np.abs(v).max()) for v in rise.values()) or 1.0
    for col, kind in zip(st.columns(3), KIND_NAMES):
        label = _(KIND_NAMES[kind])
        with col:
            chart(viz.importance_heatmap(rise[kind], title=label, value=_("loss rise"), lim=lim, digits=3),
                  key=f"importance_now_{kind}")
            grid_table(rise[kind], _("Loss rise of this sentence with each head alone switched off, {kind}").format(
                kind=label), key=f"importance_now_{kind}_table")


def corpus_importance(ctx: Context, table: dict):
    base, kinds = table["baseline"], table["kinds"]
    drops = {k: base["bleu"] - np.array(kinds[k]["bleu"]) for k in KIND_NAMES}
    rises = {k: np.array(kinds[k]["loss"]) - base["loss"] for k in KIND_NAMES}
    boot = table.get("bootstrap")
    st.caption(_("For every head: how much test BLEU drops and loss rises when only that head is switched off "
                 "(Michel et al., 2019). Baseline on {n} test sentences: BLEU {bleu:.2f}, loss {loss:.3f}. Red: the "
                 "model needs this head; blue: it does better without it. One colour range for the three kinds, so "
                 "their cells compare.").format(n=table["data"]["n"], bleu=base["bleu"], loss=base["loss"]))
    if boot:
        st.caption(_("Noise: a {level:.0%} paired bootstrap interval over sentences ({resamples} resamples) is in each "
                     "cell's hover; * marks a head whose interval excludes 0, i.e. a change beyond resampling noise. "
                     "Most BLEU changes of single heads are within the noise.").format(
                         level=boot["level"], resamples=boot["resamples"]))
    else:
        st.caption(_("Noise: single-head BLEU changes below ~0.3 are within the run-to-run noise of test BLEU."))
    # The switch's values stay English (the code compares them); they are translated where shown
    metric = st.segmented_control(_("Measure"), [N_("BLEU drop"), N_("loss rise")], key="importance_metric",
                                  default="BLEU drop", required=True, format_func=kept(_))
    values, ci_key, digits = (drops, "bleu_drop_ci", 2) if metric == "BLEU drop" else (rises, "loss_rise_ci", 3)
    caption = (_("Test set BLEU drop with each head alone switched off, {kind}") if metric == "BLEU drop" else
               _("Test set loss rise with each head alone switched off, {kind}"))
    lim = max(float(np.abs(v).max()) for v in values.values())
    for col, kind in zip(st.columns(3), KIND_NAMES):
        label = _(KIND_NAMES[kind])
        ci = kinds[kind].get(ci_key)
        with col:
            chart(viz.importance_heatmap(values[kind], title=label, value=_(metric), lim=lim, interval=ci,
                                         digits=digits), key=f"importance_{kind}")
            grid_table(values[kind], caption.format(kind=label), key=f"importance_{kind}_table")
    ranked = sorted(((float(d), Head(k, i, h)) for k, v in drops.items() for (i, h), d in np.ndenumerate(v)),
                    key=lambda dh: (dh[0], dh[1].spec()), reverse=True)
    rise = {Head(k, i, h): float(r) for k, v in rises.items() for (i, h), r in np.ndenumerate(v)}
    drop = {head: d for d, head in ranked}
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.selectbox(_("Look at a head (largest BLEU drop first)"), list(drop), key="importance_pick",
                 format_func=kept(lambda h: _("{head}: BLEU {bleu:+.2f}, loss {loss:+.3f}").format(
                     head=h.label(), bleu=-drop[h], loss=rise[h])))
    c2.button(_("Open in its view"), on_click=lambda: open_head(st.session_state.importance_pick), width="stretch")
