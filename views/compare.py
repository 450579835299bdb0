"""A second run beside the first in every attention view (issues 12 and 14).

The second run is the same sentence through the other model, another sentence, the same sentence
with heads switched off, or with one step forced to another word. Each attention view then draws
the chosen map of both runs side by side and, when the two have the same shape, their signed
difference (second minus first). Each choice is made here, in the view, so that it holds while the
layer, head or kind changes.
"""

import streamlit as st

from model.errors import InputError
from model.result import Translation

from .common import MAX_SENTENCE, MODEL_NAMES, Context, analyze, literal, other_model, translate
from .interventions import ablation_spec, n_layers, summary

OPTIONS = {"none": "nothing", "model": "the other model", "sentence": "another sentence",
           "off": "heads switched off", "force": "a forced word"}
SHORT_KIND = {"enc": "encoder", "dec": "decoder", "cross": "cross"}


def options(ctx: Context) -> list[str]:
    return [o for o in OPTIONS if o != "model" or other_model(ctx.checkpoint)]


def head_items(cfg) -> list[str]:
    """Every head as 'kind.layer.head' (0-based), in the order the ablation view lists them."""
    return [f"{kind}.{layer}.{h}" for kind in ("enc", "dec", "cross") for layer in range(n_layers(cfg, kind))
            for h in range(cfg.n_heads)]


def item_label(item: str) -> str:
    """'enc.0.3' -> 'encoder L1 H4': short, for the chips of the multiselect."""
    kind, layer, head = item.split(".")
    return f"{SHORT_KIND[kind]} L{int(layer) + 1} H{int(head) + 1}"


def picked_heads(items: list[str]) -> dict[tuple[str, int], list[int]]:
    """['enc.0.3', 'enc.0.5'] -> {('enc', 0): [3, 5]}, the form ablation_spec takes (and the link writes)."""
    picked = {}
    for item in items:
        kind, layer, head = item.split(".")
        picked.setdefault((kind, int(layer)), []).append(int(head))
    return picked


def second_run(ctx: Context) -> tuple[str, str, Translation] | None:
    """Draw the controls of the chosen comparison; return (name of the first, name of the second, second run),
    or None when there is nothing to compare yet (a message says what to do)."""
    vs = st.session_state.get("vs", "none")
    r = ctx.result
    if vs == "model":
        slug, checkpoint = other_model(ctx.checkpoint)
        this = st.session_state.get("model", "learned")
        return MODEL_NAMES.get(this, this), MODEL_NAMES.get(slug, slug), translate(checkpoint, r.source)
    if vs == "sentence":
        other = st.text_input("Second sentence (press Enter)", key="s2", max_chars=MAX_SENTENCE,
                              placeholder="Die Katze rennt durch den Schnee.")
        if not other.strip():
            st.info("Type a second sentence. A minimal pair (one word changed) or a word-order change keeps the "
                    "token count, and then the difference of the two maps is drawn too.")
            return None
        try:
            return "this sentence", "second sentence", translate(ctx.checkpoint, other)
        except InputError as e:
            st.warning(f"{e}.")
            return None
    if vs == "off":
        picked = st.multiselect("Heads to switch off", head_items(ctx.cfg), key="vs_off", format_func=item_label,
                                placeholder="pick heads, e.g. cross L2 H8")
        if not picked:
            st.info("Pick the heads to switch off; the maps of that run are drawn beside the original's.")
            return None
        spec = ablation_spec(ctx.cfg, picked_heads(picked))
        # The maps of the ablated model reading the *same* output (teacher forcing), so the two always
        # have one shape and the difference shows what switching the heads off changes in the others.
        alone = translate(ctx.checkpoint, r.source, spec)
        st.caption(f"Without those heads, greedy decoding says: {literal(alone.text) or '(empty)'}. The maps on "
                   "the right are of the ablated model reading the original output, so that cell compares with "
                   "cell.")
        tokens = tuple(s.token for s in r.steps)
        return "all heads", f"without {summary(spec)}", analyze(ctx.checkpoint, r.source, tokens, spec)
    if vs == "force":
        c1, c2 = st.columns(2)
        if st.session_state.get("vs_step") not in range(len(r.steps)):  # from a link, or a longer output before
            st.session_state.pop("vs_step", None)
        step = c1.selectbox("At step", range(len(r.steps)), key="vs_step",
                            format_func=lambda t: f"{t + 1}: the model said “{r.steps[t].token}”")
        alternatives = [tok for tok, _ in r.steps[step].top if tok != r.steps[step].token]
        if st.session_state.get("vs_word") not in alternatives:
            st.session_state.pop("vs_word", None)
        word = c2.selectbox("say instead (then greedy again)", alternatives, key="vs_word")
        if word is None:
            return None
        return "the model's choice", f"step {step + 1} forced to “{word}”", translate(ctx.checkpoint, r.source, "",
                                                                                     step, word)
    return None


def header(name: str, result: Translation) -> str:
    """The heading of one side: which run, and its translation (user and model text shown literally)."""
    return f"**{literal(name)}**: {literal(result.text) or '(empty)'}"
