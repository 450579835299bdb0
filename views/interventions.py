"""Interventions and comparisons: switch heads off, score a reference, search with beams."""

import streamlit as st

import viz
from model.errors import InputError
from model.export import steps_csv, table_csv
from model.heads import KIND_NAMES, Head, HeadSet, n_layers
from model.i18n import _
from model.languages import OURS
from model.metrics import sentence_bleu

from . import Context
from .calls import HEAVY, analyze, load_translator, translate, waiting_notice
from .export import downloads
from .state import heads_param, int_param, page_view, text_param
from .widgets import chart, cli_hint, diff_chips, literal, map_table, table_labels, text_box

MAX_BEAM = 8


def ablate_key(kind: str, layer: int) -> str:
    """The heads switched off in one layer of the ablation view (a list of numbers from 0)."""
    return f"ablate_{kind}_{layer}"


@st.cache_data(max_entries=64, show_spinner=False)
def score_reference(checkpoint: str | None, sentence: str, reference: str):
    return load_translator(checkpoint).score_reference(sentence, reference)


@st.cache_data(max_entries=32, show_spinner=False)  # its caller's spinner says what it computes, in the page's language
def beam(checkpoint: str | None, sentence: str, width: int, _waiting=None):
    """Beam search (a heavy computation: it takes its turn)."""
    with HEAVY.turn(_waiting):
        return load_translator(checkpoint).beam(sentence, width)


def switched_off(cfg) -> HeadSet:
    """The heads picked on the ablation view's pills (every head of a layer is the whole layer)."""
    return HeadSet.of(cfg, (Head(kind, layer, h) for kind in KIND_NAMES for layer in range(n_layers(cfg, kind))
                            for h in st.session_state.get(ablate_key(kind, layer)) or []))


def switch_off(cfg, heads: HeadSet):
    """Set the ablation view's pills to these heads (none: every head back on)."""
    for kind in KIND_NAMES:
        for layer in range(n_layers(cfg, kind)):
            st.session_state[ablate_key(kind, layer)] = heads.in_layer(kind, layer)


def read_ablation_link(params, cfg, notes: list):
    """off: the heads switched off."""
    heads = heads_param(params, cfg, notes)
    if heads is not None:
        switch_off(cfg, heads)


def ablation_link(cfg) -> dict:
    off = switched_off(cfg).spec(base=1)
    return {"off": off} if off else {}


@st.fragment
@page_view
def ablation_view(ctx: Context):
    cfg, result = ctx.cfg, ctx.result
    st.caption(_("Switch heads off for this request only (their output is zeroed; the shared model is never edited) "
                 "and see what the translation loses. Pick every head of a layer to switch the whole layer off."))
    for col, kind in zip(st.columns(3), KIND_NAMES):
        label = _(KIND_NAMES[kind])
        col.markdown(f"**{label}**")
        for layer in range(n_layers(cfg, kind)):
            col.pills(_("{kind}, layer {layer}: heads to switch off").format(kind=label, layer=layer + 1),
                      list(range(cfg.n_heads)), selection_mode="multi", key=ablate_key(kind, layer),
                      format_func=lambda h: str(h + 1))
    heads = switched_off(cfg)
    if not heads:
        st.info(_("Pick heads (or every head of a layer) to switch off."))
        return
    spec = heads.spec()
    st.button(_("Switch every head back on"), on_click=switch_off, args=(cfg, HeadSet()))
    st.markdown(_("**Switched off:** {heads}").format(heads=literal(heads.label())))
    ablated = translate(ctx.checkpoint, result.source, spec)
    st.markdown(_("**Original:**") + " " + literal(result.text), unsafe_allow_html=True)
    st.markdown(_("**Without those heads:**") + " "
                + diff_chips(viz.token_diff(result.output_tokens, ablated.output_tokens)), unsafe_allow_html=True)
    cli_hint(result.source, "--mask-heads", spec)
    tokens = tuple(s.token for s in result.steps)
    after = analyze(ctx.checkpoint, result.source, tokens, spec)
    chart(viz.probability_change(list(tokens), [s.prob for s in result.steps], [s.prob for s in after.steps],
                                 title=_("Probability of each originally chosen token, with and without those "
                                         "heads")), key="ablate_probs")
    downloads(ctx, result=ablated, heads_off=spec)


def read_reference_link(params, cfg, notes: list):
    reference = text_param(params, "ref", _("the reference (ref)"), notes)
    if reference is not None:
        st.session_state.reference = reference


def reference_link(cfg) -> dict:
    return {"ref": st.session_state.reference} if st.session_state.get("reference") else {}


@st.fragment
@page_view
def reference_view(ctx: Context):
    result = ctx.result
    source, target = ctx.names
    english = tuple(ctx.translator.origin["languages"]) == OURS  # the examples: German sentences, English references
    ref = text_box(st, _("{target} reference").format(target=target)
                   + (" " + _("(the examples come with theirs)") if english else ""), "reference", _("The reference"))
    if not ref.strip():
        st.info(_("Type an English reference translation to see how likely the model finds each of its words.")
                if english else
                _("Type a reference translation ({target}) to see how likely the model finds each of its words.")
                .format(target=target))
        return
    try:
        scored = score_reference(ctx.checkpoint, result.source, ref)
    except InputError as e:
        st.warning(literal(f"{e}."))
        return
    forced = scored.translation
    c1, c2, c3 = st.columns(3)
    c1.metric(_("Sentence BLEU of the model's output"),
              f"{sentence_bleu(result.output_tokens, ref, result.pieces):.1f}",
              help=_("sacrebleu's BLEU of the text, cased, on its own 13a tokens (the model writes pieces)")
              if result.pieces else _("on lower-cased spaCy tokens, as the model's own tokens are"))
    c2.metric(_("Loss per reference token"), f"{scored.loss:.3f}")
    c3.metric(_("Perplexity"), f"{scored.ppl:.2f}")
    st.caption(_("Teacher forcing: the decoder is fed the reference, and at each step we read the probability the "
                 "model gave the reference's next token."))
    st.dataframe(viz.steps_table(forced.steps).rename(columns={"token": _("reference token")}), hide_index=True)
    layer = st.segmented_control(_("Layer"), list(range(ctx.cfg.n_dec_layers)), format_func=lambda i: str(i + 1),
                                 key="reference_layer", default=ctx.cfg.n_dec_layers - 1, required=True)
    runs = ((forced, "forced", _("Cross-attention, layer {layer}, mean of heads: teacher-forced on the reference"),
             _("Show the teacher-forced map as a table")),
            (result, "free", _("Cross-attention, layer {layer}, mean of heads: the model's own output"),
             _("Show the own output map as a table")))
    for r, key, title, label in runs:
        weights, rows = viz.select_head(r.cross_attentions, layer, None), viz.predicting(r.tgt_tokens,
                                                                                          [s.token for s in r.steps])
        title = title.format(layer=layer + 1)
        chart(viz.attention_heatmap(weights, rows, r.src_tokens, key_unknown=r.src_unknown, title=title),
              key=f"reference_{key}", width="content")
        map_table(weights, table_labels(rows), table_labels(r.src_tokens, r.src_unknown),
                  _("{title}; rows: {target} steps (the token read → the token chosen), columns: {source} tokens")
                  .format(title=title, target=target, source=source),
                  key=f"reference_{key}_table", corner=_("query \\ key"), label=label)
    downloads(ctx, extra=[(_("Reference, teacher-forced (CSV)"), "reference-steps.csv", "text/csv",
                           lambda: steps_csv(forced))])


def read_beam_link(params, cfg, notes: list):
    width = int_param(params, "beam", 1, MAX_BEAM, notes)
    if width is not None:
        st.session_state.beam_width = width


def beam_link(cfg) -> dict:
    return {"beam": str(st.session_state.get("beam_width", 4))}


@st.fragment
@page_view
def beam_view(ctx: Context):
    result = ctx.result
    st.session_state.setdefault("beam_width", 4)
    width = st.slider(_("Beam width"), 1, MAX_BEAM, key="beam_width")
    with waiting_notice(_("Beam search")) as waiting, st.spinner(_("Searching with beams…")):
        search = beam(ctx.checkpoint, result.source, width, _waiting=waiting)
    st.markdown(_("**Beam search (width {width}):**").format(width=width) + " " +
                diff_chips(viz.token_diff(result.output_tokens, search.best.output_tokens)), unsafe_allow_html=True)
    alpha = ctx.translator.beam_rule()["alpha"]  # ours GNMT's 0.6, a Marian model's length_penalty
    st.caption(_("Struck through: only in the greedy output; green: only in the beam output. Hypotheses are ranked "
                 "by log-probability divided by length^{alpha:g}.").format(alpha=alpha))
    cli_hint(result.source, "--beam", str(width))
    st.markdown(_("**n-best list**"))
    vocab = ctx.translator.tgt_vocab

    def text(tokens):  # words by spaces, or a Marian model's pieces into text; the end token apart
        ended = bool(tokens) and tokens[-1] == vocab.eos
        return vocab.join(list(tokens[:-1] if ended else tokens)) + (f" {vocab.eos}" if ended else "")

    columns = dict(rank=_("rank"), hypothesis=_("hypothesis"), score=_("log-probability"),
                   normalised=_("normalised score"))
    st.dataframe([{columns["rank"]: i + 1, columns["hypothesis"]: text(c.tokens), columns["score"]: round(c.score, 3),
                   columns["normalised"]: round(c.normalized, 3)} for i, c in enumerate(search.nbest)],
                 hide_index=True)
    st.markdown(_("**The search, step by step** (kept: stays in the beam; finished: ended with `{eos}`; pruned: fell "
                  "out)").format(eos=ctx.translator.tgt_vocab.eos))
    table = viz.beam_table(search.trace)
    st.dataframe(table, hide_index=True)
    downloads(ctx, result=search.best, beam=width,
              extra=[(_("Beam search steps (CSV)"), f"beam{width}-search.csv", "text/csv",
                      lambda: table_csv(table))])
