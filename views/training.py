"""Training: watch attention form. The shipped replay (checkpoints/replay/, `python -m model.replay --ship`) holds,
for every snapshot of one training run, the built-in examples' translations and every attention map, the
validation loss and BLEU, and each head's statistics and alignment error; this view scrubs through them.
"""

import json

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model.checkpoint import DEFAULT_CHECKPOINT
from model.export import table_csv
from model.head_stats import APPLIES, NAMES, STATS
from model.heads import KIND_NAMES
from model.i18n import _, kept
from model.replay import dequantize
from viz.training import snapshot_map

from . import Context
from .calls import model_name
from .export import downloads
from .state import MEAN, choice_param, head_link, head_param, int_param, page_view, whole_number
from .widgets import chart, head_picker, literal, map_table, table_labels, token_chips

REPLAY = DEFAULT_CHECKPOINT / "replay"
AER = "cross_aer"  # the alignment error of each cross head, beside the head statistics


@st.cache_data(max_entries=2, show_spinner=False)
def manifest() -> dict | None:
    path = REPLAY / "replay.json"
    return json.loads(path.read_text()) if path.is_file() else None


@st.cache_data(max_entries=64, show_spinner=False)
def point_maps(file: str, example: int) -> dict:
    """One example's maps at one snapshot, back to float weights."""
    with np.load(REPLAY / file) as z:
        return {k: dequantize(z[f"ex{example}_{k}"]) for k in KIND_NAMES}


def label(point: dict) -> str:
    return _("step {step:,} (epoch {epoch:.2f})").format(step=point["step"], epoch=point["epoch"])


def read_link(params, cfg, notes: list):
    """at: a snapshot's step; kind, layer and head (from 1, or mean) of the map; stat: the statistic over time."""
    m = manifest()
    at = params.get("at")
    if at is not None and m:
        steps = [p["step"] for p in m["snapshots"]]
        if whole_number(at, 0, max(steps)) in steps:
            st.session_state.training_at = int(at)
        else:
            notes.append(_("at={at} is not a snapshot of the replay (steps {steps})").format(
                at=repr(at[:40]), steps=", ".join(map(str, steps))))
    kind = choice_param(params, "kind", KIND_NAMES, notes)
    if kind is not None:
        st.session_state.training_kind = kind
    layer = int_param(params, "layer", 1, max(cfg.n_enc_layers, cfg.n_dec_layers), notes)
    if layer is not None:
        st.session_state.training_layer = layer - 1
    head = head_param(params, cfg, notes)
    if head is not None:
        st.session_state.training_head = head
    stat = choice_param(params, "stat", (AER, *STATS), notes)
    if stat is not None:
        st.session_state.training_stat = stat


def link_params(cfg) -> dict:
    s = st.session_state
    params = {"kind": s.get("training_kind", "cross"), "layer": str(s.get("training_layer", 1) + 1),
              "head": head_link(s.get("training_head")),
              "stat": s.get("training_stat", AER)}
    if "training_at" in s:
        params = {"at": str(s.training_at), **params}
    return params


def over_time(points: list, stat: str, kind: str) -> np.ndarray | None:
    """(N, L, H) of one statistic over the snapshots (None where this kind has no such statistic)."""
    if stat == AER:
        return np.array([p[AER] for p in points], dtype=float) if kind == "cross" else None
    if kind not in APPLIES[stat]:
        return None
    return np.array([[[np.nan if x is None else x for x in row] for row in p["head_stats"][stat][kind]]
                     for p in points], dtype=float)


@page_view
def training_view(ctx: Context):
    if ctx.translator.origin["family"] == "marian":
        st.info(_("No training replay for this model: its makers trained it with Marian NMT and kept no snapshots "
                  "of the run. The shipped model's run is replayed here when the page opens it (without "
                  "$TRANSFORMER_CHECKPOINT); a model trained with `python -m model.train ... --snapshots` gets its "
                  "own (`python -m model.replay`)."))
        return
    m = manifest()
    if not m:
        st.info(_("No training replay ships with this copy (checkpoints/replay/replay.json). Train with "
                  "`python -m model.train ... --snapshots` and write one with `python -m model.replay --snapshots DIR "
                  "--ship checkpoints/replay --data-dir ../shared/data/multi30k`."))
        return
    points, examples = m["snapshots"], m["examples"]
    st.caption(_("One training run of the {model}-position model, replayed: {n} snapshots from the untrained weights "
                 "(step 0) to the end. Models like this one first learn what English looks like, then word-for-word "
                 "translation, then word order (Voita, Sennrich & Titov, 2021): watch the translation, the maps and "
                 "the heads change.").format(model=_(m["model"]), n=len(points)))
    source = ctx.result.source.strip()
    if source in examples:
        example = examples.index(source)
    else:
        st.info(_("The replay covers the built-in examples, not a typed sentence: pick one below. To replay any "
                  "sentence, train with `python -m model.train ... --snapshots` and run `python -m model.replay "
                  "--snapshots runs/train/snapshots \"SENTENCE\"`."))
        example = st.selectbox(_("Example"), range(len(examples)), format_func=lambda i: examples[i],
                               key="training_example")
    s = st.session_state
    steps = [p["step"] for p in points]
    if s.get("training_at") not in steps:
        s.training_at = steps[-1]
    at = st.select_slider(_("Snapshot"), steps, key="training_at",
                          format_func=kept(lambda step: label(points[steps.index(step)])))
    i = steps.index(at)
    point = points[i]
    ex = point["examples"][example]
    final = points[-1]["examples"][example]
    words = [t for t in ex["steps"] if t != "<eos>"]
    st.markdown(_("**At {snapshot}:** {tokens}").format(
        snapshot=literal(label(point)), tokens=token_chips(words) if words else _("*(nothing: it ends at once)*")),
        unsafe_allow_html=True)
    if ex["steps"] != final["steps"]:
        st.markdown(_("**At the end:** {tokens}").format(tokens=token_chips([t for t in final["steps"]
                                                                                if t != "<eos>"])),
                    unsafe_allow_html=True)
    labels = [f"{p['step']:,}" for p in points]
    curves = {  # by the key of its chart: its name on the page, its values
        "loss": (_("validation loss"), [p["val_loss"] for p in points]),
        "BLEU": (_("validation BLEU"), [p["val_bleu"] for p in points]),
        "(ALTI+)": (_("source share (ALTI+)"), [p["source_share"] for p in points])}
    # said beside the curves: the switch above may name another
    run = _("the {model}-position model's training").format(model=_(m["model"]))
    picked = st.session_state.get("model")
    if picked != m["model"]:
        st.caption(_("These curves, the translations above and the maps below replay {run}: no replay ships for the "
                     "model picked above ({model}).").format(run=run, model=model_name(picked)))
    for col, (key, (name, values)) in zip(st.columns(len(curves)), curves.items()):
        with col:
            chart(viz.training_curve(labels, values, i, name, model=run), key=f"training_curve_{key}")
    st.caption(_("Validation loss per token and greedy BLEU on the 1,014 validation sentences; source share: how "
                 "much of each generated token came from the German (ALTI+), mean over the first {n} validation "
                 "sentences. The curves space the snapshots evenly, each labelled by its training step: early "
                 "snapshots are fewer steps apart than late ones. This snapshot: loss {loss:.3f}, BLEU {bleu:.1f}, "
                 "source share {share:.3f}.").format(n=m["n_share"], loss=point["val_loss"], bleu=point["val_bleu"],
                                                     share=point["source_share"]))

    s.setdefault("training_kind", "cross")
    s.setdefault("training_layer", 1)
    s.setdefault("training_head", MEAN)
    kind = st.segmented_control(_("Attention"), list(KIND_NAMES), format_func=kept(lambda k: _(KIND_NAMES[k])),
                                key="training_kind", required=True)
    maps = point_maps(point["file"], example)[kind]
    layer = st.segmented_control(_("Layer"), list(range(maps.shape[0])), format_func=lambda l: str(l + 1),
                                 key="training_layer", required=True)
    head = head_picker(st, maps.shape[1], "training_head")
    stretch = st.toggle(_("Stretch the colours to this map's largest weight"), key="training_stretch",
                        help=_("More contrast in a flat map; off, colours compare across snapshots (0 to 1)"))
    weights = viz.select_head(maps, layer, None if head == MEAN else head)
    queries = {"enc": ex["src_tokens"], "dec": ex["tgt_tokens"], "cross": ex["tgt_tokens"]}[kind]
    keys = ex["tgt_tokens"] if kind == "dec" else ex["src_tokens"]
    rows = queries if kind == "enc" else viz.predicting(queries, ex["steps"])
    where = dict(kind=_(KIND_NAMES[kind]), layer=layer + 1, snapshot=label(point))
    title = (_("{kind}, layer {layer}, mean of heads, {snapshot}").format(**where) if head == MEAN else
             _("{kind}, layer {layer}, head {head}, {snapshot}").format(head=head + 1, **where))
    chart(snapshot_map(weights, rows, keys, title=title, sentence=examples[example][:120], causal=kind == "dec",
                       stretch=stretch), key="training_map", width="content")
    map_table(weights, table_labels(rows), table_labels(keys),
              _("{title}; rows: queries, columns: keys").format(title=title),
              key="training_map_table", corner=_("query \\ key"),
              masked=viz.causal_mask(len(rows), len(keys)) if kind == "dec" else None)
    st.caption((viz.map_caption(kind, ex["steps"], literal) + " " if ex["steps"] else "") +
               _("Weights stored to 1/{levels} (uint8); the rows are this snapshot's own translation, so they change "
                 "as it does.").format(levels=m["levels"]))

    stats = [AER, *STATS]
    c1, c2 = st.columns(2)
    stat = c1.selectbox(_("Per head, over training"), stats, key="training_stat",
                        format_func=kept(lambda x: _("alignment error (AER, argmax)") if x == AER else _(NAMES[x])))
    kinds = ["cross"] if stat == AER else list(APPLIES[stat])
    grid_kind = c2.segmented_control(_("Of"), kinds, format_func=kept(lambda k: _(KIND_NAMES[k])),
                                     key=f"training_grid_kind_{stat}", default=kinds[-1], required=True)
    values = over_time(points, stat, grid_kind)
    name = "AER" if stat == AER else _(NAMES[stat])
    chart(viz.heads_over_time(values, labels, i, title=_("{statistic}, {kind} heads, over training").format(
                                  statistic=name, kind=_(KIND_NAMES[grid_kind])),
                              value=name), key="training_heads")
    L, H = values.shape[1:]
    map_table(values.reshape(len(points), L * H).T,
              [_("layer {layer} head {head}").format(layer=l + 1, head=h + 1) for l in range(L) for h in range(H)],
              labels, _("{statistic} of each {kind} head at each snapshot").format(statistic=name,
                                                                                   kind=_(KIND_NAMES[grid_kind])),
              key="training_heads_table", corner=_("head \\ step"))
    st.caption(_("A row per head, a column per snapshot; the outlined column is the snapshot above.") + " " +
               (_("AER of each cross head's argmax links against the hand-checked references ({gold}); lower is a "
                  "better alignment.").format(gold=m["gold"]) if stat == AER else
                _("Mean over {n} validation sentences' greedy translations at each snapshot.").format(
                    n=m["n_stats"])))
    curve = pd.DataFrame([{"step": p["step"], "epoch": p["epoch"], "validation loss": p["val_loss"],
                           "validation BLEU": p["val_bleu"], "source share": p["source_share"],
                           **{f"AER {k}": v for k, v in p["layer_aer"].items()}} for p in points])
    downloads(ctx, extra=[(_("The replay's curves (CSV)"), "training-curves.csv", "text/csv",
                           lambda: table_csv(curve))])
