"""Feed-forward features: each feed-forward block read through its transcoder (model/transcoders.py), a feature's
page, and features switched off or scaled for this request only.

    ?s=...&view=features                                   the strongest features of the first encoder block
    ?s=...&view=features&fblock=dec.1&feat=dec.1.57        a block, and the page of one of its features
    ?s=...&view=features&feat=enc.2.137&fedit=enc.2.137=0  with that feature switched off (several: commas)

fblock names a block (enc.0 .. dec.2, counted from 0 as the model's arrays are), feat a feature (BLOCK.INDEX),
fedit the edits in force (BLOCK.INDEX=SCALE, 0 switches a feature off, scales from -10 to 10). A value the
checkpoint cannot have is a note; a checkpoint without transcoders (a converted model) says which command makes them.
"""

import functools
import json
import shlex

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model import transcoders
from model.checkpoint import checkpoint_folder
from model.errors import InputError
from model.export import table_csv
from model.i18n import N_, _, kept

from . import Context
from .calls import HEAVY, load_translator, waiting_notice
from .export import downloads
from .state import page_view, text_param
from .widgets import chart, diff_chips, highlight, literal, map_table, table_labels

BLOCK_KEY, FEATURE_KEY, EDIT_KEY, SCALE_KEY = "feat_block", "feat_pick", "feat_edits", "feat_scale"
TABLE_KEY, LAYER_KEY = "features_table", "features_map_layer"
SCALES = [-2.0, -1.0, 0.0, 0.5, 2.0, 4.0]  # the scales offered: 0 switches a feature off, 1 would change nothing
# the table's feature columns, strongest first (sentence_features' top): the CSV's names, translated where shown
RANKS = (N_("1st"), N_("2nd"), N_("3rd"), N_("4th"), N_("5th"))


def read_link(params, cfg, notes: list):
    """fblock, feat, fedit: checked against the checkpoint's transcoders when the view draws (a bad one: a note)."""
    for key, state, what in (("fblock", BLOCK_KEY, _("the block (fblock)")),
                             ("feat", FEATURE_KEY, _("the feature (feat)")),
                             ("fedit", EDIT_KEY, _("the features' edits (fedit)"))):
        value = text_param(params, key, what, notes)
        if value is not None:
            st.session_state[state] = value.strip()


def link_params(cfg) -> dict:
    s = st.session_state
    out = {"fblock": s.get(BLOCK_KEY), "feat": s.get(FEATURE_KEY), "fedit": s.get(EDIT_KEY)}
    return {k: v for k, v in out.items() if v and not (k == "fblock" and v == "enc.0")}


# the calls, cached by their arguments ------------------------------------------------------------------------------
@st.cache_resource(max_entries=4, show_spinner=False)
def dictionaries(checkpoint: str | None):
    """The checkpoint's transcoders on the model's device, loaded once per server (InputError where it has none).
    Read, never changed: an edit is a per-call patch (transcoders.edit_patch)."""
    return transcoders.load(checkpoint_folder(checkpoint), load_translator(checkpoint).device)


def labels(checkpoint: str | None) -> dict:
    """{block: [label per feature]}: the index's labels (transcoders.read_index caches the index per process)."""
    return transcoders.read_index(checkpoint_folder(checkpoint))["labels"]


@st.cache_data(max_entries=64, show_spinner=False)
def sentence_features(checkpoint: str | None, sentence: str, output_tokens: tuple) -> list:
    """Every block's strongest features over the page's output: one forced pass (about a fifth of the translation's
    time: bench/features_speed.py), so it takes no turn."""
    tr = load_translator(checkpoint)
    dicts, _card = dictionaries(checkpoint)
    return transcoders.sentence_features(tr, dicts, tr.force(sentence, list(output_tokens)))


@st.cache_data(max_entries=256, show_spinner=False)
def feature_page(checkpoint: str | None, name: str) -> dict:
    dicts, _card = dictionaries(checkpoint)
    return transcoders.feature_page(load_translator(checkpoint), transcoders.read_index(checkpoint_folder(checkpoint)),
                                    name, dicts)


@st.cache_data(max_entries=64, show_spinner=False)
def edited(checkpoint: str | None, sentence: str, output_tokens: tuple, spec: str, _waiting=None):
    """With the edits in force (a per-call patch: the shared weights are never edited): the greedy translation, and
    the probability of each token of the page's output, teacher-forced (the same output, so the two compare)."""
    import torch

    from model.extras import Extras

    tr = load_translator(checkpoint)
    dicts, _card = dictionaries(checkpoint)
    patch = transcoders.edit_patch(dicts, transcoders.parse_edits(spec, dicts))
    with HEAVY.turn(_waiting):
        after = tr.translate_batch([sentence], patch=patch)[0]
        src, tgt, out = tr.inputs(tr.force(sentence, list(output_tokens)))
        with torch.no_grad():
            logp = tr.model(src, tgt, Extras(patch=patch, need_weights=False)).logits[0].float().log_softmax(-1)
    return after, logp.gather(-1, out[:, None]).squeeze(-1).exp().tolist()


# the edits ---------------------------------------------------------------------------------------------------------
def edits_spec(edits: dict) -> str:
    return ",".join(f"{b}.{f}={s:g}" for (b, f), s in edits.items())


def edit_words(edits: dict) -> str:
    return ", ".join(_("{feature} off").format(feature=f"{b}.{f}") if s == 0 else f"{b}.{f} × {s:g}"
                     for (b, f), s in edits.items())


def apply_edit(name: str, dicts: dict):
    """The picked feature at the picked scale joins the edits in force (a second edit of it replaces the first)."""
    try:
        edits = transcoders.parse_edits(st.session_state.get(EDIT_KEY) or "", dicts)
    except InputError:  # the link's bad edits were noted and dropped when the view drew
        edits = {}
    edits[transcoders.parse_feature(name, dicts)] = float(st.session_state.get(SCALE_KEY, 0.0))
    st.session_state[EDIT_KEY] = edits_spec(edits)


def clear_edits():
    st.session_state[EDIT_KEY] = ""


def open_cell(block: str, tops: tuple):
    """A feature's cell clicked in the table: its page opens (the same pick as the list under the table)."""
    cells = st.session_state[TABLE_KEY].selection.cells
    if cells:
        row, column = cells[0]
        rank = RANKS.index(column) if column in RANKS else len(RANKS)
        if row < len(tops) and rank < len(tops[row]):
            st.session_state[FEATURE_KEY] = f"{block}.{tops[row][rank][0]}"


def checked_feature(dicts: dict) -> str | None:
    """The picked feature, normalised ("enc.2.0137" -> "enc.2.137"), or None with a note where it is no feature."""
    value = st.session_state.get(FEATURE_KEY)
    if not value:
        return None
    try:
        return ".".join(map(str, transcoders.parse_feature(value, dicts)))
    except InputError as e:
        st.warning(literal(f"feat: {e}."))
        return None


# the view ----------------------------------------------------------------------------------------------------------
@st.fragment
@page_view
def features_view(ctx: Context):
    st.caption(_("The feed-forward block of each layer, read through its transcoder: a wide layer of features of "
                 "which only a few are active at each token, trained to write what the block writes (Dunefsky et al., "
                 "2024; Paulo et al., 2025). What the features miss, the error, is shown beside them."))
    try:
        dicts, card = dictionaries(ctx.checkpoint)
    except InputError:
        folder = shlex.quote(str(checkpoint_folder(ctx.checkpoint)))
        st.info(_("This model has no transcoders, so no feed-forward features to show: `python -m model.transcoders "
                  "train --checkpoint {folder}` trains them (half an hour on 2 cores at the shipped model's size), "
                  "then `python -m model.transcoders index --checkpoint {folder}` writes their pages.").format(
                    folder=folder))
        return
    blocks = list(dicts)
    if st.session_state.get(BLOCK_KEY) not in blocks:
        if st.session_state.get(BLOCK_KEY):
            st.warning(literal(_("fblock: {block} is not one of {blocks}.").format(
                block=repr(st.session_state[BLOCK_KEY]), blocks=", ".join(blocks))))
        st.session_state[BLOCK_KEY] = blocks[0]
    block = st.segmented_control(_("Feed-forward block"), blocks, key=BLOCK_KEY, required=True,
                                 format_func=kept(transcoders.block_label))
    m = card["measures"][block]
    st.caption(_("This block's transcoder on the validation set: {fvu:.1%} of the block's output variance "
                 "unexplained, {l0:.1f} features active per token, {dead:.1%} of its {width:,} features never active, "
                 "loss recovered {recovered:.2f}. All six replaced (no error term): test2016 BLEU {replaced:.2f} "
                 "against the model's {bleu:.2f}.").format(
                   fvu=m["fvu"], l0=m["l0"], dead=m["dead"], width=dicts[block].width, recovered=m["loss_recovered"],
                   replaced=card["test2016_bleu_all_replaced"], bleu=card["test2016_bleu"]))
    tokens = tuple(s.token for s in ctx.result.steps)
    with st.spinner(_("Reading the features…")):
        found = {b.block: b for b in sentence_features(ctx.checkpoint, ctx.result.source, tokens)}[block]
    table = features_table(ctx, found)
    picked = checked_feature(dicts)
    st.session_state[FEATURE_KEY] = picked
    best = {}
    for top in found.top:
        for f, v in top:
            best[f] = max(best.get(f, 0.0), v)
    options = [f"{block}.{f}" for f in sorted(best, key=lambda f: -best[f])]
    if picked and picked not in options:
        options.insert(0, picked)  # a feature from the link or of another block, active here or not
    names = labels(ctx.checkpoint)

    def option(n: str) -> str:
        b, f = transcoders.parse_feature(n, dicts)
        if b == block and f in best:
            return _("{feature} · “{label}” · {activation:.2f} here").format(feature=n, label=names[b][f],
                                                                           activation=best[f])
        return f"{n} · “{names[b][f]}”"

    name = st.selectbox(_("Open a feature's page (or click its cell in the table)"), options, key=FEATURE_KEY,
                        index=None, placeholder=_("pick a feature…"), format_func=kept(option))
    if name:
        page_panel(ctx, name, dicts)
    edits_panel(ctx, dicts, table, name)


def features_table(ctx: Context, found) -> pd.DataFrame:
    """Per position (a source token, or a decoding step) its strongest features, strongest first, and the block's
    error beside the length of what it writes: a click on a feature's cell opens its page."""
    block, encoder = found.block, found.block.startswith("enc")
    names = labels(ctx.checkpoint)[block]
    where = "source token" if encoder else "step"
    rows = viz.predicting(found.tokens, [s.token for s in ctx.result.steps]) if not encoder else list(found.tokens)
    share = np.asarray(found.error) / np.maximum(np.asarray(found.norm), 1e-9)
    table = pd.DataFrame({  # the error first, beside the features: never scrolled out of sight
        "position": range(1, len(rows) + 1), where: rows, "‖FFN‖": np.round(found.norm, 3),
        "error ‖FFN − T‖": np.round(found.error, 3), "error share": share,
        **{rank: [f"{top[i][0]} “{names[top[i][0]]}” {top[i][1]:.2f}" if i < len(top) else "" for top in found.top]
           for i, rank in enumerate(RANKS)}})
    st.markdown((_("**The strongest features at each source token** ({block}: feature, its label, its activation)")
                 if encoder else
                 _("**The strongest features at each decoding step** ({block}: feature, its label, its activation)"))
                .format(block=transcoders.block_label(block)))
    # The table's columns keep the CSV's (English) names; the page says them in its language
    st.dataframe(table, hide_index=True, key=TABLE_KEY, on_select=functools.partial(open_cell, block, found.top),
                 selection_mode="single-cell", column_config={
                     "position": st.column_config.NumberColumn("#", width=40, pinned=True),
                     where: st.column_config.TextColumn(_("source token") if encoder else _("step"),
                                                        width=120 if encoder else 160, pinned=True),
                     "‖FFN‖": st.column_config.NumberColumn(width=70, help=_("The length of what the block writes")),
                     "error ‖FFN − T‖": st.column_config.NumberColumn(
                         _("error"), width=70, help=_("‖FFN(x) − T(x)‖: the length of what the features miss here")),
                     "error share": st.column_config.ProgressColumn(
                         _("error / ‖FFN‖"), format="percent", min_value=0.0, max_value=1.0, width=100,
                         help=_("How much of what the block writes here its features miss: "
                                "‖FFN(x) − T(x)‖ / ‖FFN(x)‖")),
                     **{rank: st.column_config.TextColumn(_(rank), width=190) for rank in RANKS}})
    if encoder:
        st.caption(_("Each row is one source token: the block's input there is read by the transcoder, whose active "
                     "features write T(x); the error FFN(x) − T(x) is what they miss (the model itself always runs "
                     "with it)."))
    else:
        st.caption(_("Each row is one step: the block's input there is read by the transcoder, whose active features "
                     "write T(x); the error FFN(x) − T(x) is what they miss (the model itself always runs with it).")
                   + " " + _("A step is named by the token it reads → the token written next."))
    return table


def page_panel(ctx: Context, name: str, dicts: dict):
    page = feature_page(ctx.checkpoint, name)
    st.markdown(_("**Feature {feature}** ({where}): “{label}”, active on {density:.3%} of the training tokens, at "
                  "most {peak:.2f}").format(feature=literal(page["feature"]), where=literal(page["where"]),
                                            label=literal(page["label"]), density=page["density"], peak=page["peak"]))
    left, right = st.columns([3, 2])
    with left:
        decoder = page["block"].startswith("dec")
        st.markdown(_("**Where it is strongest in the training sentences** (the English written so far, the token it "
                      "fires on marked, → the word written next)") if decoder else
                    _("**Where it is strongest in the training sentences** (the token it fires on marked)"))
        for c in page["contexts"]:
            shown = [literal(t) for t in c["tokens"]]
            shown[c["position"]] = highlight(shown[c["position"]])
            after = f" → <b>{literal(c['next'])}</b>" if "next" in c else ""
            st.markdown(f"<span class='feature-context'>{c['activation']:.2f}: {' '.join(shown)}{after}</span>",
                        unsafe_allow_html=True)
    with right:
        chart(viz.feature_histogram(page["histogram"]["edges"], page["histogram"]["counts"],
                                    title=_("{feature}: its activations<br>on the training tokens").format(
                                        feature=page["feature"])),
              key="feature_hist", name=f"feature-{page['feature']}")
        effect = page["effect"]
        if "promotes" in effect:
            st.markdown(_("**Its direction through the generator** promotes {promotes}; suppresses {suppresses}.")
                        .format(promotes=", ".join(f"“{literal(w)}” {v:+.2f}" for w, v in effect["promotes"]),
                                suppresses=", ".join(f"“{literal(w)}” {v:+.2f}" for w, v in effect["suppresses"])))
        elif effect["switched_off"]:
            hurt = ", ".join(f"“{literal(m['word'])}” ({m['delta_logp']:+.3f})" for m in effect["switched_off"])
            st.markdown(_("**Switched off** on its top sentences, the reference words' log-probability changes by "
                          "{delta:+.3f} on average; most hurt: {hurt}").format(delta=effect["mean_delta_logp"],
                                                                               hurt=hurt))
    st.session_state.setdefault(SCALE_KEY, 0.0)
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    scale = c1.select_slider(_("Scale {feature} by (0 switches it off, 1 would leave it as it is)").format(
                                 feature=name), SCALES, key=SCALE_KEY,
                             format_func=kept(lambda s: _("0 (off)") if s == 0 else f"{s:g}"))
    c2.button(_("Switch {feature} off").format(feature=name) if scale == 0 else
              _("Scale {feature} by {scale:g}").format(feature=name, scale=scale), on_click=apply_edit,
              args=(name, dicts), key="feature_apply", type="primary")


def edits_panel(ctx: Context, dicts: dict, table: pd.DataFrame, name: str | None):
    result = ctx.result
    spec = st.session_state.get(EDIT_KEY) or ""
    try:
        edits = transcoders.parse_edits(spec, dicts)
    except InputError as e:
        st.warning(literal(f"fedit: {e}."))
        st.session_state[EDIT_KEY] = ""
        edits = {}
    if not edits:
        st.caption(_("Pick a feature, then switch it off or scale it to see what the translation loses."))
        export(ctx, table, name)
        return
    spec = edits_spec(edits)
    c1, c2 = st.columns([3, 1], vertical_alignment="center")
    c1.markdown(_("**Edits in force:** {edits} (this request only: the shared model is never edited)").format(
        edits=literal(edit_words(edits))))
    c2.button(_("Clear the edits"), on_click=clear_edits, key="feature_clear")
    tokens = tuple(s.token for s in result.steps)
    with waiting_notice(_("Features")) as waiting:
        after, probs = edited(ctx.checkpoint, result.source, tokens, spec, _waiting=waiting)
    same = after.output_tokens == result.output_tokens
    st.markdown(_("**Original:** {text}").format(text=literal(result.text)), unsafe_allow_html=True)
    chips = diff_chips(viz.token_diff(result.output_tokens, after.output_tokens))
    st.markdown((_("**With the edits:** {tokens} (the same words)") if same else _("**With the edits:** {tokens}"))
                .format(tokens=chips), unsafe_allow_html=True)
    before = [s.prob for s in result.steps]
    t = int(np.argmax(np.abs(np.subtract(probs, before))))
    st.caption(_("The largest change in the probability of a token of the original output: step {step}, “{token}”, "
                 "{before:.3f} → {after:.3f} (the edited model reads the original output, so each step compares with "
                 "the same step).").format(step=t + 1, token=literal(tokens[t]), before=before[t], after=probs[t]))
    chart(viz.probability_change(list(tokens), before, probs,
                                 title=_("Each original token's probability,<br>with and without the edits")),
          key="features_probs", name="features-probabilities")
    maps(ctx, after, same)
    export(ctx, table, name, extra={"edits": spec, "edited_output_tokens": list(after.output_tokens),
                                    "probability_before": before, "probability_after": probs})


def maps(ctx: Context, after, same: bool):
    """Cross-attention before and with the edits, the mean of one layer's heads or of every layer's (the maps' own
    drawing, viz.attention_heatmap, each with its table); where the output kept its words, their difference too (an
    edit often moves the maps little). The layer is a detail of the picture, not in the link (as the reference
    view's)."""
    result, (source, target) = ctx.result, ctx.names
    layers = ["mean", *range(ctx.cfg.n_dec_layers)]
    layer = st.segmented_control(_("Cross-attention layer"), layers, key=LAYER_KEY, default="mean", required=True,
                                 format_func=kept(lambda x: _("all (mean)") if x == "mean" else str(x + 1)))
    which = (_("mean of every head") if layer == "mean" else
             _("layer {layer}, mean of heads").format(layer=layer + 1))

    def mean(r):  # (L, H, T, S) -> (T, S)
        maps = np.asarray(r.cross_attentions)
        return maps.mean(axis=(0, 1)) if layer == "mean" else viz.select_head(maps, layer, None)

    def rows(r):
        return viz.predicting(r.tgt_tokens, [s.token for s in r.steps])

    def drawn(weights, r, title: str, key: str, label: str, **style):
        chart(viz.attention_heatmap(weights, rows(r), r.src_tokens, key_unknown=r.src_unknown, title=title, **style),
              key=f"features_cross_{key}", width="content", name=f"features-cross-{key}")
        map_table(weights, table_labels(rows(r)), table_labels(r.src_tokens, r.src_unknown),
                  _("{title}; rows: {target} steps (the token read → the token chosen), columns: {source} tokens")
                  .format(title=title.replace("<br>", " "), target=target, source=source),
                  key=f"features_cross_{key}_table", corner=_("query \\ key"), label=label)

    runs = ((result, _("Cross-attention, {which}:<br>original"), "original", _("Show the original map as a table")),
            (after, _("Cross-attention, {which}:<br>with the edits"), "edited", _("Show the edited map as a table")))
    for col, (r, title, key, label) in zip(st.columns(2), runs):
        with col:
            drawn(mean(r), r, title.format(which=which), key, label)
    if not same:
        st.caption(_("The output changed, so the two maps' rows differ: compare them step by step."))
        return
    diff = mean(after) - mean(result)
    st.caption(_("The largest change of a weight: {change:.4f}.").format(change=np.abs(diff).max()))
    drawn(diff, result, _("With the edits minus the original<br>(cross-attention, {which})").format(which=which),
          "difference", _("Show the difference map as a table"), signed=True, stretch=True)


def export(ctx: Context, table: pd.DataFrame, name: str | None, extra: dict | None = None):
    """The export section: the page's result, this block's table (CSV), the open feature's page and the edits'
    outcome (JSON)."""
    files = [(_("Features (CSV)"), "features.csv", "text/csv", lambda: table_csv(table))]
    if name:
        files.append((_("Feature page (JSON)"), f"feature-{name}.json", "application/json",
                      lambda: json.dumps(feature_page(ctx.checkpoint, name), ensure_ascii=False)))
    if extra:
        files.append((_("With the edits (JSON)"), "features-edited.json", "application/json",
                      lambda: json.dumps(extra, ensure_ascii=False)))
    downloads(ctx, extra=files)
