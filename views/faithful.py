"""Which explanation can you trust here? Every explanation's faithfulness at one step, measured by removal
(model/faithfulness.py), above the test-set table shipped beside the checkpoint.

    ?s=...&view=faithful&step=3                the third step, its source tokens removed
    ?s=...&view=faithful&step=3&side=prefix    its prefix (the English words before it) removed instead

Every explanation except integrated gradients is computed once per sentence and kept (the Attributions view's
methods, attention, ALTI+, norms); a step adds its integrated gradients and its removals, batched: one heavy
computation, which takes its turn on the server.
"""

import functools
import json
import shlex
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

from model import faithfulness as F
from model.checkpoint import checkpoint_folder
from model.i18n import N_, _, kept
from model.methods import Explanation, by_name
from model.translator import MAX_OUTPUT
from viz.faithfulness import deletion_curves
from viz.labels import subtitle

from . import Context
from .calls import HEAVY, faithfulness_table, load_translator, waiting_notice
from .export import downloads
from .state import choice_param, int_param, page_view, state_params
from .widgets import FAITHFULNESS, chart, literal

STEP_KEY, SIDE_KEY = "faith_step", "faith_side"
# with Context.names filled in, translated where shown
SIDES = {"source": N_("{src} source tokens"), "prefix": N_("{tgt} words written before")}
WHAT = {"source": N_("{src} tokens"), "prefix": N_("{tgt} prefix words")}
NOT_MEASURED = "—"  # every table's empty cell, as the captions say: Streamlit would draw None (its `placeholder`)


def read_link(params, cfg, notes: list):
    """step (from 1; the view clamps it to the output's length) and side (source or prefix)."""
    step = int_param(params, "step", 1, MAX_OUTPUT, notes)
    if step is not None:
        st.session_state[STEP_KEY] = step
    side = choice_param(params, "side", tuple(SIDES), notes)
    if side is not None:
        st.session_state[SIDE_KEY] = side


def link_params(cfg) -> dict:
    s = st.session_state
    side = s.get(SIDE_KEY, "source")
    return {"step": str(s.get(STEP_KEY, 1)), **({"side": side} if side != "source" else {})}


def explanation(cfg, name: str) -> Explanation:
    """The explanation a table's row names (model/methods.py), looked up among every layer and head of the model."""
    return named(cfg.n_dec_layers, cfg.n_heads)[name]


@functools.lru_cache(maxsize=8)
def named(n_layers: int, n_heads: int) -> dict:
    """by_name over every cross-attention head of a model of these sizes, made once (every row's link asks)."""
    return by_name(n_layers, [(layer, head) for layer in range(n_layers) for head in range(n_heads)])


def drawn_in(e: Explanation, side: str) -> dict:
    """The link parameters of the view that draws an explanation's scores."""
    if e.method in ("attention", "norms"):
        params = {"view": "cross" if side == "source" else "dec"}
        if e.layer is not None:
            params["layer"] = str(e.layer + 1)
            params["head"] = "mean" if e.head is None else str(e.head + 1)
        if e.method == "norms":
            params["values"] = "norms"
        return params
    if e.method == "rollout":
        return {"view": "flow"}
    if e.method == "ALTI+":
        return {"view": "contributions"}
    return {"view": "attribute", "method": e.method}


def link_to(ctx: Context, name: str, side: str) -> str:
    return "?" + urlencode({**state_params(ctx.cfg, None), **drawn_in(explanation(ctx.cfg, name), side)})


@st.cache_data(max_entries=16, show_spinner=False)
def sentence_explanations(checkpoint: str | None, sentence: str, output_tokens: tuple, _waiting=None):
    """Every explanation of every step but integrated gradients (added per step), for the steps to share."""
    head = F.aligning_head(checkpoint_folder(checkpoint))
    with HEAVY.turn(_waiting):
        return F.explanations(load_translator(checkpoint), sentence, list(output_tokens), ig_steps=[],
                              heads=() if head is None else (head,))


@st.cache_data(max_entries=64, show_spinner=False)
def step_faithfulness(checkpoint: str | None, sentence: str, output_tokens: tuple, step: int, _waiting=None):
    """One step's measures, both sides, as `python -m model.inspect faithfulness --step` prints them."""
    scores = sentence_explanations(checkpoint, sentence, output_tokens, _waiting=_waiting)
    with HEAVY.turn(_waiting):  # measure adds this step's integrated gradients to a copy: the cached scores stay
        f = F.measure(load_translator(checkpoint), sentence, list(output_tokens), steps=[step], scores=scores)
    return f.to_json()["steps"][step]


@st.fragment
@page_view
def faithful_view(ctx: Context):
    result = ctx.result
    st.caption(_("An explanation ranks the tokens a word was predicted from. If it is faithful to the model, "
                 "replacing what it ranks first by <unk> lowers the word's probability most (comprehensiveness), and "
                 "keeping only what it ranks first keeps the probability (low sufficiency) — better than random "
                 "orders do (DeYoung et al., 2020)."))
    shipped = faithfulness_table(ctx.checkpoint)
    if shipped is not None:
        st.markdown(_("**For this model:** {verdict}").format(verdict=literal(F.verdict(shipped))))

    T = len(result.steps)
    tokens = [s.token for s in result.steps]
    st.session_state[STEP_KEY] = min(max(int(st.session_state.get(STEP_KEY, 1)), 1), T)
    left, right = st.columns([3, 2])
    step = left.selectbox(_("Step"), list(range(1, T + 1)), key=STEP_KEY,
                          format_func=kept(lambda t: _("step {step}: {read} → {chosen}").format(
                              step=t, read=result.tgt_tokens[t - 1], chosen=tokens[t - 1])))
    st.session_state.setdefault(SIDE_KEY, "source")
    names = dict(src=ctx.names[0], tgt=ctx.names[1])
    side = right.segmented_control(_("Tokens removed"), list(SIDES), key=SIDE_KEY, required=True,
                                   format_func=kept(lambda k: _(SIDES[k]).format(**names)))
    t = step - 1

    with waiting_notice(_("Faithfulness")) as waiting, st.spinner(
            _("Removing tokens for step {step}, every method…").format(step=step)):
        measured = step_faithfulness(ctx.checkpoint, result.source, tuple(tokens), t, _waiting=waiting)
    m = measured[side]
    if m is None:
        st.info(_("Step {step} has no {target} word before it (only {token}): there is nothing to remove. Pick a "
                  "later step, or remove source tokens.").format(step=step, target=ctx.names[1],
                                                                 token=result.tgt_tokens[0]))
        return
    methods, rand = m["methods"], m["random"]
    first = int(ctx.cfg.source_start) if side == "source" else 1  # the position of the side's first content token
    n = len(m["tokens"])
    chart(deletion_curves({F.display_name(k): v["deletion"] for k, v in methods.items()}, rand["deletion"],
                          rand["deletion_range"],
                          removed_first={F.display_name(k): [token(m, p, first) for p in v["order"]]
                                         for k, v in methods.items()},
                          title=_("Step {step}: p(“{token}”)<br>as each method's top {what} go").format(
                              step=step, token=tokens[t], what=_(WHAT[side]).format(**names)),
                          subtitle=subtitle(result.source)),
          key="faith_curves", name=f"faithfulness-step{step}-{side}")
    st.caption(_("p = {p:.3f} with nothing removed; {n} tokens can be removed, each method's highest-ranked first. "
                 "The grey band holds 95% of {orders} random orders; a faithful ranking's curve falls below it at "
                 "once. Click a method in the legend to hide it.").format(p=measured["p"], n=n,
                                                                          orders=rand["orders"]))
    step_table(ctx, methods, rand, m, side)
    test_set_table(ctx, shipped, side)
    st.caption(_("The same numbers on the command line, as JSON:"))
    end = ["--"] if result.source.startswith("-") else []
    st.code(" ".join(["python -m model.inspect faithfulness --step", str(t), *end, shlex.quote(result.source)]),
            language="bash")
    downloads(ctx, extra=[(_("Faithfulness of this step (JSON)"), f"faithfulness-step{step}.json", "application/json",
                           lambda: json.dumps(measured, ensure_ascii=False))])


def token(m: dict, position: int, first: int = 1) -> str:
    """The label of a removed token: its place among the side's content tokens, the first of which is at position
    `first` (1 after <sos> on both sides of ours; 0 on a Marian model's source, which has no <sos>)."""
    return m["tokens"][position - first]


def step_table(ctx: Context, methods: dict, rand: dict, m: dict, side: str):
    first = int(ctx.cfg.source_start) if side == "source" else 1
    rows = [{"method": F.display_name(k), "comprehensiveness": v["comprehensiveness"], "sufficiency": v["sufficiency"],
             "τ with leave-one-out": v["tau"], "removed first": token(m, v["order"][0], first),
             "drawn in": link_to(ctx, k, side)} for k, v in methods.items()]
    rows.sort(key=lambda r: -r["comprehensiveness"])
    low, high = rand["comprehensiveness_range"]
    rows.append({"method": _("random orders ({orders}; 95%: {low:.3f} to {high:.3f})").format(
                     orders=rand["orders"], low=low, high=high),
                 "comprehensiveness": rand["comprehensiveness"], "sufficiency": rand["sufficiency"],
                 "τ with leave-one-out": None, "removed first": "", "drawn in": None})
    st.markdown(_("**This step, every method**"))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="faith_step_table", placeholder=NOT_MEASURED,
                 column_config=text_columns("method", "removed first") | number_columns() | {
                     "drawn in": st.column_config.LinkColumn(
                         _("drawn in"), display_text=_("open the view"),
                         help=_("the view that draws this method's scores"))})
    st.caption(_("Comprehensiveness: how far p falls, on average over k = 0..n, with the top k removed (higher: "
                 "more faithful). Sufficiency: how far it falls with only the top k kept (lower: more faithful). τ: "
                 "Kendall's rank agreement with leave-one-out, which removes one token at a time."))


# The tables' columns, by their names in the data; the page says them in its language
COLUMNS = {"method": N_("method"), "comprehensiveness": N_("comprehensiveness"), "sufficiency": N_("sufficiency"),
           "τ with leave-one-out": N_("τ with leave-one-out"), "removed first": N_("removed first"),
           "alignment error (AER)": N_("alignment error (AER)")}


def text_columns(*names: str) -> dict:
    return {c: st.column_config.TextColumn(_(COLUMNS[c])) for c in names}


def number_columns() -> dict:
    return {c: st.column_config.NumberColumn(_(COLUMNS[c]), format="%.3f")
            for c in ("comprehensiveness", "sufficiency", "τ with leave-one-out")}


def interval(e: F.Interval) -> str:
    return NOT_MEASURED if e.mean is None else f"{e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"


def test_set_table(ctx: Context, shipped: F.Table | None, side: str):
    st.markdown(_("**On the test set**"))
    if shipped is None:
        st.info(_("This checkpoint has no {file}: `python -m model.faithfulness --src FILE --out CHECKPOINT/{file}` "
                  "measures it.").format(file=FAITHFULNESS))
        return
    table = getattr(shipped, side)
    aer = lambda x: {"alignment error (AER)": x} if side == "source" else {}  # noqa: E731
    rows = [{"method": F.display_name(k), "comprehensiveness": interval(e.comprehensiveness),
             "sufficiency": interval(e.sufficiency), "τ with leave-one-out": interval(e.tau), **aer(e.aer),
             "drawn in": link_to(ctx, k, side)} for k, e in table.rows.items()]
    r = table.random
    rows.append({"method": _("random orders ({orders})").format(orders=r.orders),
                 "comprehensiveness": interval(r.comprehensiveness),
                 "sufficiency": interval(r.sufficiency), "τ with leave-one-out": NOT_MEASURED, **aer(None),
                 "drawn in": None})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="faith_test_table", placeholder=NOT_MEASURED,
                 column_config=text_columns("method", "comprehensiveness", "sufficiency", "τ with leave-one-out") | {
                     "alignment error (AER)": st.column_config.NumberColumn(_(COLUMNS["alignment error (AER)"]),
                                                                            format="%.3f"),
                     "drawn in": st.column_config.LinkColumn(_("drawn in"), display_text=_("open the view"))})
    data = shipped.data
    diagonal = (shipped.baselines or {}).get("diagonal", {}).get("aer")
    said = [_("{n} sentences of {data}, {steps} steps each drawn at random, the model's own translation; mean and "
              "95% bootstrap interval over sentences.").format(n=shipped.n_sentences, data=data["src"],
                                                               steps=shipped.steps_per_sentence)]
    if side == "source" and diagonal:
        said.append(_("AER: the alignment error against hand-checked links (lower: more plausible; a diagonal "
                      "alignment scores {diagonal:.3f}; {empty} where not measured).").format(diagonal=diagonal,
                                                                                             empty=NOT_MEASURED))
    said.append(_("Computed offline in {minutes:.0f} minutes: `{command}`.").format(minutes=data["seconds"] / 60,
                                                                                   command=data["command"]))
    st.caption(" ".join(said))
    if side == "source":
        with st.expander(_("How the methods agree with one another (mean Kendall τ over every measured step)")):
            a = shipped.agreement
            labels = [F.display_name(k) for k in a["methods"]]
            st.dataframe(pd.DataFrame(np.array(a["tau"], dtype=float), index=labels, columns=labels),
                         width="stretch", placeholder=NOT_MEASURED,
                         column_config={c: st.column_config.NumberColumn(format="%.2f") for c in labels})
