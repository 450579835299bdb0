"""Does attention explain the translation? How much each step drew on the source and on its own English prefix
(ALTI+, Ferrando et al., EMNLP 2022), read against the test set, beside where cross-attention looked.

    ?s=...&view=contributions

The numbers are `Translator.contributions` over the page's greedy output (model/contributions.py); the test set's
distribution of the share is `source_share.json` beside the checkpoint (`python -m model.source_share`).
"""

import json

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model.export import _csv, table_csv
from model.i18n import N_, _, ngettext
from model.tables import command_line
from viz.labels import subtitle, token_labels

from . import Context
from .calls import checkpoint_json, contributions, load_translator, waiting_notice
from .export import downloads
from .state import page_view
from .widgets import chart, literal, map_table, table_labels, trust_line

SHARE_FILE = "source_share.json"
# The step x token maps go two a row while each, at its own size (square cells, viz/attention.py), fits half a
# 1400 px page with a little to spare: a wider one would shrink there, leaving a band of empty space under it (its
# height stays), so it gets a row of its own. Three in a row left 170 px of map each.
PAIR_PX = 800

WHAT_IT_MEASURES = N_(
    "**What ALTI+ measures** (Ferrando et al., EMNLP 2022). Each attention block's output for a token is a sum of "
    "parts, one per input token (its value vector, weighted and projected, plus the token's own residual); ALTI+ "
    "scores each part by how close it lies to the whole output (Manhattan distance), and carries these shares "
    "through the layers, encoder first, so that every step's prediction is split between the {src} source tokens "
    "and the {tgt} tokens written before it. **What it approximates**: the LayerNorm is treated as linear (each "
    "token's spread held fixed), the feed-forward blocks are left out (they mix no tokens, but they do change the "
    "vectors), and closeness stands in for influence: it is not what removing a token would do.")


def share_lines(table: dict | None) -> tuple[float | None, float | None]:
    """The test set's per-step median and low-share threshold from source_share.json (None, None without it)."""
    try:
        return float(table["per_step"]["quantiles"]["0.5"]), float(table["low_share_threshold"]["per_step"])
    except (TypeError, KeyError, ValueError):
        return None, None


@st.fragment
@page_view
def contributions_view(ctx: Context):
    result = ctx.result
    source, target = ctx.names
    st.caption(_("How much of each {target} token's prediction came from the {source} source, and how much from the "
                 "{target} already written (the prefix)? Each step's contributions add up to 1: its source share "
                 "plus its prefix share.").format(target=target, source=source))
    with waiting_notice(_("Contributions")) as waiting:
        c = contributions(ctx.checkpoint, result.source, tuple(s.token for s in result.steps), _waiting=waiting)
    table = checkpoint_json(ctx.checkpoint, SHARE_FILE)
    median, threshold = share_lines(table)
    if threshold is None:
        st.info(_("No `{file}` beside this checkpoint, so the shares are drawn without the test set's median and "
                  "low-share threshold, and no step is flagged. Compute it with `{command}`.").format(
                    file=SHARE_FILE, command=command_line(ctx.checkpoint)))
    rows, _unknown = token_labels(result, "tgt")
    chart(viz.source_share_bars(rows, c.source_share, median=median, threshold=threshold,
                                title=_("Source share of every step (ALTI+)"), subtitle=subtitle(result.source)),
          key="contrib_share", name="source-share")
    flags(c, rows, table, threshold)
    trust_line(ctx.checkpoint, {"": "ALTI+"}, names=ctx.names)
    st.markdown(_("**Step × token: contributions beside attention**"))
    L, H = result.cross_attentions.shape[:2]
    st.caption(_("“ALTI+: source tokens” is what each step drew from each source token, “ALTI+: prefix tokens” "
                 "what it drew from each token of its prefix (grey: later tokens it cannot see): a row of the two "
                 "together sums to 1. “Cross-attention” is the weights over the same source tokens, the mean over "
                 "all {L} layers and {H} heads: where the heads looked, not how much of it reached the prediction. "
                 "Each map has its own colour range.").format(L=L, H=H))
    maps = (
        viz.contribution_map(c.source, rows, result.src_tokens, key_unknown=result.src_unknown,
                             title=_("ALTI+: source tokens"), key_axis=_("source token")),
        viz.attention_heatmap(result.cross_attentions.mean(axis=(0, 1)), rows, result.src_tokens,
                              key_unknown=result.src_unknown, stretch=True, key_axis=_("source token"),
                              query_axis=_("step: the token read → the token chosen"),
                              title=_("Cross-attention, mean of {L} layers × {H} heads").format(L=L, H=H)),
        viz.contribution_map(c.prefix, rows, result.tgt_tokens, causal=True, title=_("ALTI+: prefix tokens"),
                             key_axis=_("prefix token (decoder input)")))
    # counted from 1, as the hover and the CSV count
    steps = [_("step {step}: {token}").format(step=t + 1, token=r) for t, r in enumerate(rows)]
    source, prefix = table_labels(result.src_tokens, result.src_unknown), table_labels(result.tgt_tokens)
    tables = ((c.source, source, None, _("ALTI+ contributions of the source tokens")),
              (result.cross_attentions.mean(axis=(0, 1)), source, None,
               _("Cross-attention weights, mean of {L} layers × {H} heads").format(L=L, H=H)),
              (c.prefix, prefix, viz.causal_mask(len(steps), len(prefix)),
               _("ALTI+ contributions of the prefix tokens")))
    # Source and attention share their axes, so they sit side by side; below them the prefix, beside what ALTI+
    # measures; each in a row of its own where they are wider (PAIR_PX).
    if all(fig.layout.width <= PAIR_PX for fig in maps):
        first, second = st.columns(2), st.columns(2)
        places, aside = (*first, second[0]), second[1]
    else:
        places, aside = [st.container() for _fig in maps], st.container()
    for col, fig, key, (values, columns, masked, what) in zip(places, maps, ("source", "attention", "prefix"),
                                                              tables):
        with col:
            chart(fig, key=f"contrib_{key}", name=f"contributions-{key}", width="content")
            map_table(values, steps, columns,
                      _("{what}; rows: steps (the token read → the token chosen)").format(what=what),
                      key=f"contrib_{key}_table", corner=_("step \\ token"), masked=masked)
    aside.markdown(_(WHAT_IT_MEASURES).format(src=ctx.names[0], tgt=ctx.names[1]))
    ffn = feed_forward_parts(ctx.checkpoint, result.source, tuple(s.token for s in result.steps))
    feed_forward_section(ffn, rows, c, result.source)
    downloads(ctx, extra=[
        (_("Contributions (JSON)"), "contributions.json", "application/json",
         lambda: json.dumps(c.to_json(), ensure_ascii=False)),
        (_("Source share per step (CSV)"), "source-share.csv", "text/csv", lambda: share_csv(c, threshold)),
        (_("Contributions per step and token (CSV)"), "contributions.csv", "text/csv",
         lambda: contributions_csv(c))])


@st.cache_data(max_entries=64, show_spinner=False)
def feed_forward_parts(checkpoint: str | None, sentence: str, output_tokens: tuple) -> dict:
    """Each decoder feed-forward block's part of every written word's logit (model/contributions.py direct_logits),
    split by the checkpoint's transcoders where it has them (model/transcoders.py block_logits)."""
    from model import transcoders
    from model.checkpoint import checkpoint_folder
    from model.contributions import direct_logits
    from model.errors import InputError

    tr = load_translator(checkpoint)
    forced = tr.force(sentence, list(output_tokens))
    try:
        dicts, _card = transcoders.load(checkpoint_folder(checkpoint), tr.device)
    except InputError as e:
        d = direct_logits(tr.capture(forced), tr.model, forced.output_ids)
        L = tr.cfg.n_dec_layers
        parts = np.stack([d["logits"][:, d["parts"].index(f"L{l + 1} ffn")] for l in range(L)], 1)
        return {"blocks": [f"dec.{l}" for l in range(L)], "parts": parts, "error": None, "logit": d["total"],
                "top": None, "missing": str(e)}
    b = transcoders.block_logits(tr, dicts, forced)
    return {"blocks": list(b.blocks), "parts": b.features + b.dense, "features": b.features, "error": b.error,
            "logit": b.logit, "top": b.top, "missing": None}


def feed_forward_section(ffn: dict, rows: list, c, sentence: str):
    """The blind spot closed: what each decoder feed-forward block wrote into the chosen word's logit,
    beside ALTI+'s source share, with the transcoder's error shown."""
    st.markdown(_("**The feed-forward blocks in the chosen word's logit**"))
    st.caption(_("ALTI+ leaves the feed-forward blocks out. Here the chosen word's logit is split into what each "
                 "part of the decoder wrote along its residual stream (each LayerNorm held at its own spread, as ALTI+ "
                 "holds it): the bars are the decoder's feed-forward blocks' parts. The encoder's blocks reach the "
                 "logit only through cross-attention: switch their features off in the Feed-forward features view to "
                 "see what they do."))
    labels = [_("decoder layer {layer}").format(layer=int(b.split('.')[1]) + 1) for b in ffn["blocks"]]
    chart(viz.ffn_logit_bars(rows, labels, ffn["parts"], ffn["error"],
                             title=_("Feed-forward blocks: their part of each chosen word's logit"),
                             subtitle=subtitle(sentence)), key="contrib_ffn", name="feed-forward-logit")
    if ffn["missing"]:
        st.caption(_("No transcoders for this checkpoint, so each block's part is not split into features: "
                     "{reason}.").format(reason=literal(ffn['missing'])))
    table = {_("step"): [f"{t + 1}: {r}" for t, r in enumerate(rows)],
             _("logit"): [round(float(v), 3) for v in ffn["logit"]],
             _("ALTI+ source share"): [round(float(v), 3) for v in c.source_share]}
    for l, label in enumerate(labels):
        table[label] = [round(float(v), 3) for v in ffn["parts"][:, l]]
        if ffn["error"] is not None:
            table[_("{layer}: error").format(layer=label)] = [round(float(v), 3) for v in ffn["error"][:, l]]
            table[_("{layer}: strongest features").format(layer=label)] = [
                ", ".join(f"{ffn['blocks'][l]}.{f} {v:+.2f}" for f, v in ffn["top"][t][l]) for t in range(len(rows))]
    st.dataframe(pd.DataFrame(table), hide_index=True, key="contrib_ffn_table")


def flags(c, rows: list, table: dict | None, threshold: float | None):
    """The steps below the test set's low-share threshold, and the sentence's mean share against the test set's."""
    if threshold is None:
        return
    low = viz.low_steps(c.source_share, threshold)
    dale = _("Dale et al. (ACL 2023) found that a low source contribution marks hallucinations: output the "
             "model wrote from its own prefix rather than from the source. A signal to look at, not a verdict.")
    if low:
        found = "; ".join(_("step {step}, “{token}”: {share:.3f}").format(step=t + 1, token=literal(rows[t]),
                                                                        share=float(c.source_share[t])) for t in low)
        st.markdown(ngettext("**{n} step below the low-share threshold** ({threshold:.3f}, the test set's 5th "
                             "percentile of step shares): {steps}",
                             "**{n} steps below the low-share threshold** ({threshold:.3f}, the test set's 5th "
                             "percentile of step shares): {steps}", len(low)).format(n=len(low), threshold=threshold,
                                                                                     steps=found))
    else:
        st.markdown(_("**No step below the low-share threshold** ({threshold:.3f}, the test set's 5th percentile "
                      "of step shares).").format(threshold=threshold))
    mean = float(np.mean(c.source_share))
    try:
        sentence_low = float(table["low_share_threshold"]["per_sentence"])
        sentence_median = float(table["per_sentence"]["quantiles"]["0.5"])
        numbers = dict(mean=mean, median=sentence_median, low=sentence_low)
        sentence = (_("This sentence's mean share is {mean:.3f} (test-set sentences: median {median:.3f}, 5th "
                      "percentile {low:.3f}; it is below).") if mean < sentence_low else
                    _("This sentence's mean share is {mean:.3f} (test-set sentences: median {median:.3f}, 5th "
                      "percentile {low:.3f}).")).format(**numbers)
    except (TypeError, KeyError, ValueError):
        sentence = _("This sentence's mean share is {mean:.3f}.").format(mean=mean)
    st.caption(dale + " " + sentence)


def share_csv(c, threshold: float | None) -> str:
    """step (from 1), the token read, the token chosen, its source and prefix shares, and whether it is flagged."""
    return table_csv(pd.DataFrame({
        "step": range(1, len(c.output_tokens) + 1), "token_read": c.tgt_tokens, "token_chosen": c.output_tokens,
        "source_share": [float(v) for v in c.source_share],
        "prefix_share": [float(v) for v in c.prefix.sum(axis=1)],
        "below_threshold": [int(threshold is not None and float(v) < threshold) for v in c.source_share]}))


def contributions_csv(c) -> str:
    """One row per step and token it drew on: the source tokens, then the prefix tokens it could see."""
    rows = []
    for t, (read, chosen) in enumerate(zip(c.tgt_tokens, c.output_tokens)):
        rows += [(t + 1, read, chosen, "source", j, tok, float(c.source[t, j])) for j, tok in enumerate(c.src_tokens)]
        rows += [(t + 1, read, chosen, "prefix", j, c.tgt_tokens[j], float(c.prefix[t, j])) for j in range(t + 1)]
    return _csv(["step", "token_read", "token_chosen", "side", "key_pos", "key_token", "contribution"], rows)
