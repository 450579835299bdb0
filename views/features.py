"""Feed-forward features: each feed-forward block read through its transcoder (model/transcoders.py), a feature's
page, and features switched off or scaled for this request only.

    ?s=...&view=features                                   the strongest features of the first encoder block
    ?s=...&view=features&fblock=dec.1&feat=dec.1.57        a block, and the page of one of its features
    ?s=...&view=features&feat=enc.2.137&fedit=enc.2.137=0  with that feature switched off (several: commas)

fblock names a block (enc.0 .. dec.2, counted from 0 as the model's arrays are), feat a feature (BLOCK.INDEX),
fedit the edits in force (BLOCK.INDEX=SCALE, 0 switches a feature off). A value the checkpoint cannot have is a note.
"""

import html

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model import transcoders
from model.checkpoint import checkpoint_folder
from model.errors import InputError

from . import Context
from .calls import HEAVY, load_translator, waiting_notice
from .state import page_view, text_param
from .widgets import chart, diff_chips, literal

BLOCK_KEY, FEATURE_KEY, EDIT_KEY, SCALE_KEY = "feat_block", "feat_pick", "feat_edits", "feat_scale"
SCALES = [-2.0, -1.0, 0.0, 0.5, 2.0, 4.0]  # the scales offered: 0 switches a feature off, 1 would change nothing


def read_link(params, cfg, notes: list):
    """fblock, feat, fedit: checked against the checkpoint's transcoders when the view draws (a bad one: a note)."""
    for key, state, what in (("fblock", BLOCK_KEY, "the block (fblock)"), ("feat", FEATURE_KEY, "the feature (feat)"),
                             ("fedit", EDIT_KEY, "the features' edits (fedit)")):
        value = text_param(params, key, what, notes)
        if value is not None:
            st.session_state[state] = value.strip()


def link_params(cfg) -> dict:
    s = st.session_state
    out = {"fblock": s.get(BLOCK_KEY), "feat": s.get(FEATURE_KEY), "fedit": s.get(EDIT_KEY)}
    return {k: v for k, v in out.items() if v and not (k == "fblock" and v == "enc.0")}


@st.cache_resource(max_entries=4, show_spinner=False)
def dictionaries(checkpoint: str | None):
    """The checkpoint's transcoders on the model's device, loaded once per server (InputError where it has none)."""
    return transcoders.load(checkpoint_folder(checkpoint), load_translator(checkpoint).device)


@st.cache_data(max_entries=64, show_spinner=False)
def sentence_features(checkpoint: str | None, sentence: str, output_tokens: tuple) -> list:
    tr = load_translator(checkpoint)
    dicts, _ = dictionaries(checkpoint)
    return transcoders.sentence_features(tr, dicts, tr.force(sentence, list(output_tokens)))


@st.cache_data(max_entries=256, show_spinner=False)
def feature_page(checkpoint: str | None, name: str) -> dict:
    folder = checkpoint_folder(checkpoint)
    dicts, _ = dictionaries(checkpoint)
    return transcoders.feature_page(load_translator(checkpoint), transcoders.read_index(folder), name, dicts)


@st.cache_data(max_entries=64, show_spinner=False)
def edited(checkpoint: str | None, sentence: str, spec: str, _waiting=None):
    """The greedy translation with the edits in force (a per-call patch: the shared weights are never edited)."""
    tr = load_translator(checkpoint)
    dicts, _ = dictionaries(checkpoint)
    patch = transcoders.edit_patch(dicts, transcoders.parse_edits(spec, dicts))
    with HEAVY.turn(_waiting):
        return tr.translate_batch([sentence], patch=patch)[0]


@st.cache_data(max_entries=64, show_spinner=False)
def edited_steps(checkpoint: str | None, sentence: str, output_tokens: tuple, spec: str) -> list:
    """The probabilities of the original output's tokens, teacher-forced, with the edits in force."""
    import torch

    from model.extras import Extras

    tr = load_translator(checkpoint)
    dicts, _ = dictionaries(checkpoint)
    forced = tr.force(sentence, list(output_tokens))
    src, tgt, out = tr.inputs(forced)
    patch = transcoders.edit_patch(dicts, transcoders.parse_edits(spec, dicts))
    with torch.no_grad():
        logp = tr.model(src, tgt, Extras(patch=patch, need_weights=False)).logits[0].float().log_softmax(-1)
    return logp.gather(-1, out[:, None]).squeeze(-1).exp().tolist()


def checked(value: str | None, parse, fallback, what: str):
    """A link's value parsed, or the fallback with a note naming what was wrong."""
    if not value:
        return fallback
    try:
        return parse(value)
    except InputError as e:
        st.warning(literal(f"{what}: {e}."))
        return fallback


def edits_spec(edits: dict) -> str:
    return ",".join(f"{b}.{f}={s:g}" for (b, f), s in edits.items())


def apply_edit(name: str, dicts: dict):
    """The picked feature at the picked scale joins the edits in force (a second edit of it replaces the first)."""
    edits = transcoders.parse_edits(st.session_state.get(EDIT_KEY) or "", dicts)
    edits[transcoders.parse_feature(name, dicts)] = float(st.session_state.get(SCALE_KEY, 0.0))
    st.session_state[EDIT_KEY] = edits_spec(edits)


def clear_edits():
    st.session_state[EDIT_KEY] = ""


@st.fragment
@page_view
def features_view(ctx: Context):
    result = ctx.result
    st.caption("The feed-forward block of each layer, read through its transcoder: a wide layer of features of which "
               "only a few are active at each token, trained to write what the block writes (Dunefsky et al., 2024; "
               "Paulo et al., 2025). What the features miss, the error, is shown beside them.")
    try:
        dicts, card = dictionaries(ctx.checkpoint)
    except InputError as e:
        st.info(literal(f"{e}."))
        return
    blocks = list(dicts)
    if st.session_state.get(BLOCK_KEY) not in blocks:
        if st.session_state.get(BLOCK_KEY):
            st.warning(literal(f"fblock: {st.session_state[BLOCK_KEY]!r} is not one of {', '.join(blocks)}."))
        st.session_state[BLOCK_KEY] = blocks[0]
    block = st.segmented_control("Feed-forward block", blocks, key=BLOCK_KEY, required=True,
                                 format_func=transcoders.block_label)
    m = card["measures"][block]
    st.caption(f"This block's transcoder on the validation set: {m['fvu']:.1%} of the block's output variance "
               f"unexplained, {m['l0']:.1f} features active per token, {m['dead']:.1%} of its "
               f"{dicts[block].width} features never active, loss recovered {m['loss_recovered']:.2f}. All six "
               f"replaced (no error term): test2016 BLEU {card['test2016_bleu_all_replaced']:.2f} against the model's "
               f"{card['test2016_bleu']:.2f}.")
    tokens = tuple(s.token for s in result.steps)
    with st.spinner("Reading the features…"):
        found = {b.block: b for b in sentence_features(ctx.checkpoint, result.source, tokens)}[block]
    labels = transcoders.read_index(checkpoint_folder(ctx.checkpoint))["labels"][block]
    encoder = block.startswith("enc")
    rows = [{"position": i + 1, "token" if encoder else "decoder input": tok,
             "strongest features": "; ".join(f"{block}.{f} “{labels[f]}” {v:.2f}" for f, v in top),
             "error ‖FFN − T‖": round(e, 3), "‖FFN‖": round(n, 3)}
            for i, (tok, top, e, n) in enumerate(zip(found.tokens, found.top, found.error, found.norm))]
    st.markdown(f"**The strongest features at each {'source token' if encoder else 'decoding step'}**")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="features_table")
    best = {}
    for top in found.top:
        for f, v in top:
            best[f] = max(best.get(f, 0.0), v)
    options = [f"{block}.{f}" for f in sorted(best, key=lambda f: -best[f])]
    picked = checked(st.session_state.get(FEATURE_KEY),
                     lambda v: ".".join(map(str, transcoders.parse_feature(v, dicts))), None, "feat")
    if picked and picked not in options:
        options.insert(0, picked)  # a feature from the link, active here or not
    st.session_state[FEATURE_KEY] = picked

    def option(n: str) -> str:
        b, f = transcoders.parse_feature(n, dicts)
        here = f" · {best[f]:.2f} here" if b == block and f in best else ""
        return f"{n} · “{index_labels[b][f]}”{here}"

    index_labels = transcoders.read_index(checkpoint_folder(ctx.checkpoint))["labels"]
    name = st.selectbox("Open a feature's page", options, key=FEATURE_KEY, index=None, placeholder="pick a feature…",
                        format_func=option)
    if name:
        page_panel(ctx, name, dicts)
    edits_panel(ctx, dicts)


def page_panel(ctx: Context, name: str, dicts: dict):
    try:
        page = feature_page(ctx.checkpoint, name)
    except InputError as e:
        st.info(literal(f"{e}."))
        return
    st.markdown(f"**Feature {literal(page['feature'])}** ({literal(page['where'])}): “{literal(page['label'])}”, "
                f"active on {page['density']:.3%} of the training tokens, at most {page['peak']:.2f}")
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Where it is strongest in the training sentences**")
        for c in page["contexts"]:
            shown = [html.escape(t) for t in c["tokens"]]
            shown[c["position"]] = f"<mark>{shown[c['position']]}</mark>"
            after = f" → <b>{html.escape(c['next'])}</b>" if "next" in c else ""
            st.markdown(f"<span class='feature-context'>{c['activation']:.2f}: {' '.join(shown)}{after}</span>",
                        unsafe_allow_html=True)
    with right:
        chart(viz.feature_histogram(page["histogram"]["edges"], page["histogram"]["counts"],
                                    title=f"{page['feature']}: its activations on the training tokens"),
              key="feature_hist", name=f"feature-{page['feature']}")
        effect = page["effect"]
        if "promotes" in effect:
            st.markdown("**Its direction through the generator** promotes " +
                        ", ".join(f"“{literal(w)}” {v:+.2f}" for w, v in effect["promotes"]) + "; suppresses " +
                        ", ".join(f"“{literal(w)}” {v:+.2f}" for w, v in effect["suppresses"]) + ".")
        elif effect["switched_off"]:
            st.markdown(f"**Switched off** on its top sentences, the reference words' log-probability changes by "
                        f"{effect['mean_delta_logp']:+.3f} on average; most hurt: " +
                        ", ".join(f"“{literal(m['word'])}” ({m['delta_logp']:+.3f})" for m in effect["switched_off"]))
    c1, c2 = st.columns([2, 1])
    st.session_state.setdefault(SCALE_KEY, 0.0)
    c1.select_slider(f"Scale {name} by (0 switches it off)", SCALES, key=SCALE_KEY)
    c2.button("Apply to the translation", on_click=apply_edit, args=(name, dicts), key="feature_apply")


def edits_panel(ctx: Context, dicts: dict):
    result = ctx.result
    spec = st.session_state.get(EDIT_KEY) or ""
    try:
        edits = transcoders.parse_edits(spec, dicts)
    except InputError as e:
        st.warning(literal(f"fedit: {e}."))
        st.session_state[EDIT_KEY] = ""
        return
    if not edits:
        st.caption("Pick a feature, then switch it off or scale it to see what the translation loses.")
        return
    spec = edits_spec(edits)
    st.markdown("**Edits in force:** " + ", ".join(
        f"{b}.{f} {'off' if s == 0 else f'× {s:g}'}" for (b, f), s in edits.items()))
    st.button("Clear the edits", on_click=clear_edits, key="feature_clear")
    with waiting_notice("Features") as waiting:
        after = edited(ctx.checkpoint, result.source, spec, _waiting=waiting)
    st.markdown("**Original:** " + literal(result.text), unsafe_allow_html=True)
    st.markdown("**With the edits:** " + diff_chips(viz.token_diff(result.output_tokens, after.output_tokens)),
                unsafe_allow_html=True)
    tokens = tuple(s.token for s in result.steps)
    probs = edited_steps(ctx.checkpoint, result.source, tokens, spec)
    chart(viz.probability_change(list(tokens), [s.prob for s in result.steps], probs,
                                 title="Probability of each originally chosen token, with and without the edits"),
          key="features_probs")
    left, right = st.columns(2)
    for col, r, what in ((left, result, "original"), (right, after, "with the edits")):
        with col:
            rows = viz.predicting(r.tgt_tokens, [s.token for s in r.steps])
            chart(viz.attention_heatmap(np.asarray(r.cross_attentions).mean(axis=(0, 1)), rows, r.src_tokens,
                                        key_unknown=r.src_unknown, title=f"Cross-attention, mean of all heads: {what}"),
                  key=f"features_cross_{'after' if r is after else 'before'}", width="content")
