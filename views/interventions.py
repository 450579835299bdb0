"""Interventions and comparisons: switch heads off, score a reference, search with beams."""

import html

import streamlit as st

import viz
from model.errors import InputError
from model.export import steps_csv
from model.metrics import sentence_bleu

from .common import (KIND_NAMES, Context, analyze, beam, chart, cli_hint, diff_chips, head_label, score_reference,
                     translate)
from .export import downloads
from .share import MAX_BEAM, page_view


def n_layers(cfg, kind: str) -> int:
    return cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers


def ablation_spec(cfg, picked: dict) -> str:
    """{(kind, layer): [heads]} -> a head-mask spec; a layer with every head picked becomes the whole layer.

    A whole layer and one of its heads can then never both be named (issue 9).
    """
    items = []
    for kind in KIND_NAMES:
        for layer in range(n_layers(cfg, kind)):
            heads = sorted(picked.get((kind, layer), []))
            if len(heads) == cfg.n_heads:
                items.append(f"{kind}.{layer}")
            else:
                items += [f"{kind}.{layer}.{h}" for h in heads]
    return ",".join(items)


def summary(spec: str) -> str:
    """'cross.2,enc.0.3' -> 'Cross-attention layer 3 (all heads); Encoder self-attention layer 1, head 4'."""
    return "; ".join(f"{KIND_NAMES[item.split('.')[0]]} {head_label(item)}" for item in spec.split(",") if item)


def clear_ablation(cfg):
    for kind in KIND_NAMES:
        for layer in range(n_layers(cfg, kind)):
            st.session_state[f"ablate_{kind}_{layer}"] = []


@st.fragment
@page_view
def ablation_view(ctx: Context):
    cfg, result = ctx.cfg, ctx.result
    st.caption("Switch heads off for this request only (their output is zeroed; the shared model is never edited) "
               "and see what the translation loses. Pick every head of a layer to switch the whole layer off.")
    picked = {}
    for col, (kind, label) in zip(st.columns(3), KIND_NAMES.items()):
        col.markdown(f"**{label}**")
        for layer in range(n_layers(cfg, kind)):
            picked[(kind, layer)] = col.pills(f"{label}, layer {layer + 1}: heads to switch off",
                                              list(range(cfg.n_heads)), selection_mode="multi",
                                              key=f"ablate_{kind}_{layer}", format_func=lambda h: str(h + 1))
    spec = ablation_spec(cfg, picked)
    if not spec:
        st.info("Pick heads (or every head of a layer) to switch off.")
        return
    st.button("Switch every head back on", on_click=clear_ablation, args=(cfg,))
    st.markdown(f"**Switched off:** {html.escape(summary(spec))}")
    ablated = translate(ctx.checkpoint, result.source, spec)
    st.markdown("**Original:** " + html.escape(result.text), unsafe_allow_html=True)
    st.markdown("**Without those heads:** " + diff_chips(viz.token_diff(result.output_tokens, ablated.output_tokens)),
                unsafe_allow_html=True)
    cli_hint(result.source, "--mask-heads", spec)
    tokens = tuple(s.token for s in result.steps)
    after = analyze(ctx.checkpoint, result.source, tokens, spec)
    chart(viz.probability_change(list(tokens), [s.prob for s in result.steps], [s.prob for s in after.steps],
                                           title="Probability of each originally chosen token, with and without "
                                                 "those heads"), key="ablate_probs")
    downloads(ctx, result=ablated, heads_off=spec)


@st.fragment
@page_view
def reference_view(ctx: Context):
    result = ctx.result
    ref = st.text_input("English reference (the examples come with theirs)", key="reference")
    if not ref.strip():
        st.info("Type an English reference translation to see how likely the model finds each of its words.")
        return
    try:
        scored = score_reference(ctx.checkpoint, result.source, ref)
    except InputError as e:
        st.warning(f"{e}.")
        return
    forced = scored.translation
    c1, c2, c3 = st.columns(3)
    c1.metric("Sentence BLEU of the model's output", f"{sentence_bleu(result.output_tokens, ref):.1f}")
    c2.metric("Loss per reference token", f"{scored.loss:.3f}")
    c3.metric("Perplexity", f"{scored.ppl:.2f}")
    st.caption("Teacher forcing: the decoder is fed the reference, and at each step we read the probability the "
               "model gave the reference's next token.")
    st.dataframe(viz.steps_table(forced.steps).rename(columns={"token": "reference token"}), hide_index=True)
    layer = st.segmented_control("Layer", list(range(ctx.cfg.n_dec_layers)), format_func=lambda i: str(i + 1),
                                 key="reference_layer", default=ctx.cfg.n_dec_layers - 1, required=True)
    for r, name in ((forced, "teacher-forced on the reference"), (result, "the model's own output")):
        chart(viz.attention_heatmap(viz.select_head(r.cross_attentions, layer, None),
                                    viz.predicting(r.tgt_tokens, [s.token for s in r.steps]),
                                    r.src_tokens, key_unknown=r.src_unknown,
                                    title=f"Cross-attention, layer {layer + 1}, mean of heads: {name}"),
              key=f"reference_{'forced' if r is forced else 'free'}", width="content")
    downloads(ctx, extra=[("Reference, teacher-forced (CSV)", "reference-steps.csv", "text/csv",
                           lambda: steps_csv(forced))])


@st.fragment
@page_view
def beam_view(ctx: Context):
    result = ctx.result
    st.session_state.setdefault("beam_width", 4)
    width = st.slider("Beam width", 1, MAX_BEAM, key="beam_width")
    search = beam(ctx.checkpoint, result.source, width)
    st.markdown(f"**Beam search (width {width}):** " +
                diff_chips(viz.token_diff(result.output_tokens, search.best.output_tokens)), unsafe_allow_html=True)
    st.caption("Struck through: only in the greedy output; green: only in the beam output. Hypotheses are ranked by "
               "log-probability divided by length^0.6.")
    cli_hint(result.source, "--beam", str(width))
    st.markdown("**n-best list**")
    st.dataframe([{"rank": i + 1, "hypothesis": " ".join(c.tokens), "log-probability": round(c.score, 3),
                   "normalised score": round(c.normalized, 3)} for i, c in enumerate(search.nbest)], hide_index=True)
    st.markdown("**The search, step by step** (kept: stays in the beam; finished: ended with `<eos>`; pruned: fell out)")
    table = viz.beam_table(search.trace)
    st.dataframe(table, hide_index=True)
    downloads(ctx, result=search.best, beam=width,
              extra=[("Beam search steps (CSV)", f"beam{width}-search.csv", "text/csv", lambda: table.to_csv(index=False))])
