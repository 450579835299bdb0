"""A second run beside the first in every attention view.

The second run is the same sentence through the other model, another sentence, the same sentence
with heads switched off, or with one step forced to another word. Each attention view then draws
the chosen map of both runs side by side and, when the two have the same shape, their signed
difference (second minus first). Each choice is made here, in the view, so that it holds while the
layer, head or kind changes.
"""

import streamlit as st

from model.errors import InputError
from model.heads import HeadSet
from model.i18n import N_, _, kept
from model.result import Translation

from . import Context
from .calls import analyze, model_name, models, translate
from .state import alternatives, heads_param, int_param, offers, text_param
from .widgets import literal, text_box

OPTIONS = {"none": N_("nothing"), "model": N_("the other model"), "sentence": N_("another sentence"),
           "off": N_("heads switched off"), "force": N_("a forced word")}  # translated where shown


def other_model(checkpoint: str | None) -> tuple[str, str | None] | None:
    """The other model on offer (its slug and checkpoint), or None when the page has only one."""
    others = [(slug, c) for slug, c in models().items() if c != checkpoint]
    return others[0] if others and len(models()) > 1 else None


def options(ctx: Context) -> list[str]:
    return [o for o in OPTIONS if o != "model" or other_model(ctx.checkpoint)]


def read_link(params, cfg, notes: list):
    """An attention view's second run: vs=model, vs=sentence&s2=..., vs=off&off=..., vs=force&step=&whatif=."""
    vs = params.get("vs")
    if vs is None:
        return
    if vs not in OPTIONS:
        notes.append(_("{key}={value} is not one of {options}").format(key="vs", value=repr(vs[:40]),
                                                                       options=", ".join(OPTIONS)))
        return
    st.session_state.vs = vs
    if vs == "sentence":
        st.session_state.s2 = text_param(params, "s2", _("the second sentence (s2)"), notes) or ""
    elif vs == "off" and (heads := heads_param(params, cfg, notes)) is not None:
        st.session_state.vs_off = heads.picks()
    elif vs == "force":
        step = int_param(params, "step", 1, 10_000, notes)
        if step is not None:
            st.session_state.vs_step = step - 1  # the view drops it unless the output is that long
        if params.get("whatif"):
            st.session_state.vs_word = params["whatif"]


def judge_link(result: Translation, notes: list):
    """The link's forced word, dropped with a note unless its step offers it (the view would drop it silently)."""
    step = st.session_state.get("vs_step")
    t = step if step in range(len(result.steps)) else 0  # as the view falls back to the first step
    if st.session_state.get("vs") == "force" and not offers(result, t, st.session_state.get("vs_word"), notes):
        del st.session_state.vs_word


def link_params(cfg) -> dict:
    """The second run of an attention view, as URL parameters."""
    s = st.session_state
    vs = s.get("vs", "none")
    params = {} if vs == "none" else {"vs": vs}
    if vs == "sentence" and s.get("s2"):
        params["s2"] = s.s2
    elif vs == "off" and s.get("vs_off"):
        params["off"] = HeadSet.of(cfg, s.vs_off).spec(base=1)
    elif vs == "force" and s.get("vs_word") is not None:
        params.update(step=str(s.get("vs_step", 0) + 1), whatif=s.vs_word)
    return params


def second_run(ctx: Context) -> tuple[str, str, Translation] | None:
    """Draw the controls of the chosen comparison; return (name of the first, name of the second, second run),
    or None when there is nothing to compare yet (a message says what to do)."""
    vs = st.session_state.get("vs", "none")
    r = ctx.result
    if vs == "model":
        slug, checkpoint = other_model(ctx.checkpoint)
        this = st.session_state.get("model", "learned")
        return model_name(this), model_name(slug), translate(checkpoint, r.source)
    if vs == "sentence":
        other = text_box(st, _("Second sentence (press Enter)"), "s2", _("The second sentence"),
                         placeholder="Die Katze rennt durch den Schnee.")
        if not other.strip():
            st.info(_("Type a second sentence. A minimal pair (one word changed) or a word-order change keeps the "
                      "token count, and then the difference of the two maps is drawn too."))
            return None
        try:
            return _("this sentence"), _("second sentence"), translate(ctx.checkpoint, other)
        except InputError as e:
            st.warning(literal(f"{e}."))
            return None
    if vs == "off":
        # Typed text picks by prefix, with no "Select all/N matches" entry: Enter takes the first option that starts
        # with it, and a layer's option comes before its heads, so "cross L3" + Enter is layer 3's heads exactly (the
        # default fuzzy filter would also match "cross L1 H3" and offer to select all of those first).
        picked = st.multiselect(_("Heads to switch off"), HeadSet.choices(ctx.cfg), key="vs_off",
                                format_func=lambda p: p.short(), filter_mode="prefix", select_all=False,
                                placeholder=_("pick a layer or heads, e.g. cross L3 or cross L2 H8"))
        if not picked:
            st.info(_("Pick the heads to switch off; the maps of that run are drawn beside the original's."))
            return None
        heads = HeadSet.of(ctx.cfg, picked)
        spec = heads.spec()
        # The maps of the ablated model reading the *same* output (teacher forcing), so the two always
        # have one shape and the difference shows what switching the heads off changes in the others.
        alone = translate(ctx.checkpoint, r.source, spec)
        st.caption(_("Without those {n} heads, greedy decoding says “{text}”. The second run's maps are the ablated "
                     "model reading the original output, so that cell compares with cell.").format(
                         n=len(heads), text=literal(alone.text) or _("(empty)")))
        tokens = tuple(s.token for s in r.steps)
        return (_("all heads"), _("without {heads}").format(heads=heads.label()),
                analyze(ctx.checkpoint, r.source, tokens, spec))
    if vs == "force":
        c1, c2 = st.columns(2)
        if st.session_state.get("vs_step") not in range(len(r.steps)):  # from a link, or a longer output before
            st.session_state.pop("vs_step", None)
        step = c1.selectbox(_("At step"), range(len(r.steps)), key="vs_step",
                            format_func=kept(lambda t: _("{step}: the model said “{token}”").format(
                                step=t + 1, token=r.steps[t].token)))
        others = alternatives(r, step)
        if st.session_state.get("vs_word") not in others:
            st.session_state.pop("vs_word", None)
        word = c2.selectbox(_("say instead (then greedy again)"), others, key="vs_word")
        if word is None:
            return None
        return (_("the model's choice"), _("step {step} forced to “{word}”").format(step=step + 1, word=word),
                translate(ctx.checkpoint, r.source, "", step, word))
    return None


def header(name: str, result: Translation) -> str:
    """The heading of one side: which run, and its translation (user and model text shown literally)."""
    empty = _("(empty)")
    return f"**{literal(name)}**: {literal(result.text) or empty}"
