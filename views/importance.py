"""Head importance over the test set: BLEU drop and loss rise with each head alone switched off."""

import json
import time

import numpy as np
import streamlit as st

import viz
from model.head_importance import head_importance_for_sentence
from model.heads import KIND_NAMES, Head
from model.tables import command_line

from . import Context
from .calls import HEAVY, checkpoint_json, load_translator, waiting_notice
from .export import downloads
from .state import open_head, page_view
from .widgets import chart, grid_table


@st.cache_data(max_entries=32, show_spinner="Switching each head off in turn…")
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
    with waiting_notice("Head importance") as waiting:
        now = sentence_importance(ctx.checkpoint, ctx.result.source, _waiting=waiting)
    table = checkpoint_json(ctx.checkpoint, "head_importance.json")
    if table is None:
        st.info(f"No head-importance table of the test set next to this checkpoint. Compute it with "
                f"`{command_line(ctx.checkpoint)}` (this one alone: `python -m model.head_importance --src "
                "test_2016_flickr.de.gz --ref test_2016_flickr.en.gz`).")
    else:
        corpus_importance(ctx, table)
    this_sentence(*now)
    downloads(ctx, extra=[] if table is None else [
        ("Head importance of the test set (JSON)", "head_importance.json", "application/json",
         lambda: json.dumps(table, indent=1))])


def this_sentence(rise: dict, seconds: float):
    """Importance for the sentence on the page, computed now: 1 + 72 masked variants in one batch."""
    st.markdown("**This sentence**, computed now")
    st.caption(f"How much the loss of this sentence's own translation rises (teacher-forced, nats per token) when "
               f"each head alone is switched off: the baseline and all {sum(v.size for v in rise.values())} masked "
               f"variants ran as rows of one batch, in {seconds * 1000:.0f} ms. One sentence is one sample: a head "
               "that matters here may not matter on average, and the other way round.")
    lim = max(float(np.abs(v).max()) for v in rise.values()) or 1.0
    for col, (kind, label) in zip(st.columns(3), KIND_NAMES.items()):
        with col:
            chart(viz.importance_heatmap(rise[kind], title=label, value="loss rise", lim=lim, digits=3),
                  key=f"importance_now_{kind}")
            grid_table(rise[kind], f"Loss rise of this sentence with each head alone switched off, {label}",
                       key=f"importance_now_{kind}_table")


def corpus_importance(ctx: Context, table: dict):
    base, kinds = table["baseline"], table["kinds"]
    drops = {k: base["bleu"] - np.array(kinds[k]["bleu"]) for k in KIND_NAMES}
    rises = {k: np.array(kinds[k]["loss"]) - base["loss"] for k in KIND_NAMES}
    boot = table.get("bootstrap")
    st.caption(f"For every head: how much test BLEU drops and loss rises when only that head is switched off "
               f"(Michel et al., 2019). Baseline on {table['data']['n']} test sentences: BLEU {base['bleu']:.2f}, "
               f"loss {base['loss']:.3f}. Red: the model needs this head; blue: it does better without it. "
               "One colour range for the three kinds, so their cells compare.")
    if boot:
        st.caption(f"Noise: a {boot['level']:.0%} paired bootstrap interval over sentences ({boot['resamples']} "
                   "resamples) is in each cell's hover; * marks a head whose interval excludes 0, i.e. a change "
                   "beyond resampling noise. Most BLEU changes of single heads are within the noise.")
    else:
        st.caption("Noise: single-head BLEU changes below ~0.3 are within the run-to-run noise of test BLEU.")
    metric = st.segmented_control("Measure", ["BLEU drop", "loss rise"], key="importance_metric",
                                  default="BLEU drop", required=True)
    values, ci_key, digits = (drops, "bleu_drop_ci", 2) if metric == "BLEU drop" else (rises, "loss_rise_ci", 3)
    lim = max(float(np.abs(v).max()) for v in values.values())
    for col, (kind, label) in zip(st.columns(3), KIND_NAMES.items()):
        ci = kinds[kind].get(ci_key)
        with col:
            chart(viz.importance_heatmap(values[kind], title=label, value=metric, lim=lim, interval=ci,
                                         digits=digits), key=f"importance_{kind}")
            grid_table(values[kind], f"Test set {metric} with each head alone switched off, {label}",
                       key=f"importance_{kind}_table")
    ranked = sorted(((float(d), Head(k, i, h)) for k, v in drops.items() for (i, h), d in np.ndenumerate(v)),
                    key=lambda dh: (dh[0], dh[1].spec()), reverse=True)
    rise = {Head(k, i, h): float(r) for k, v in rises.items() for (i, h), r in np.ndenumerate(v)}
    drop = {head: d for d, head in ranked}
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.selectbox("Look at a head (largest BLEU drop first)", list(drop), key="importance_pick",
                 format_func=lambda h: f"{h.label()}: BLEU {-drop[h]:+.2f}, loss {rise[h]:+.3f}")
    c2.button("Open in its view", on_click=lambda: open_head(st.session_state.importance_pick), width="stretch")
