"""The decoding trace: step through greedy decoding, and ask what if a step had said something else."""

import html

import streamlit as st

import viz

from .common import (MODEL_CHOICE, Context, alternatives, chart, cli_hint, diff_chips, int_param, load_translator,
                     map_table, offers, table_labels, token_chips, translate)
from .export import downloads
from .share import page_view

MAX_STEP = 10_000  # a step from the link beyond the output is clamped to its last step


def read_link(params, cfg, notes: list):
    """step (from 1) and whatif: the step shown, and a word forced there (judge_link checks it is a candidate)."""
    step = int_param(params, "step", 1, MAX_STEP, notes)
    if step is not None:
        st.session_state.trace_step = step  # the view clamps it to the output's length
    if params.get("whatif"):
        st.session_state.what_if = params["whatif"]


def judge_link(result, notes: list):
    """The link's what-if word, dropped with a note unless its step (clamped as the view clamps it) offers it."""
    t = min(st.session_state.get("trace_step", 1), len(result.steps)) - 1
    if not offers(result, t, st.session_state.get("what_if"), notes):
        st.session_state.what_if = MODEL_CHOICE


def link_params(cfg) -> dict:
    s = st.session_state
    params = {"step": str(s.get("trace_step", 1))}
    if s.get("what_if") not in (None, MODEL_CHOICE):
        params["whatif"] = s.what_if
    return params


def set_step(step: int, n_steps: int):
    st.session_state.trace_step = min(max(step, 1), n_steps)
    st.session_state.what_if = MODEL_CHOICE  # the alternatives belong to one step


def slider_moved(n_steps: int):
    set_step(st.session_state.step_slider, n_steps)


@st.fragment
@page_view
def trace_view(ctx: Context):
    result = ctx.result
    n = len(result.steps)
    # The step lives in its own key, not the slider's: it survives view changes, and a new sentence
    # keeps it (clamped when the new output is shorter) instead of jumping back to the start.
    st.session_state.trace_step = min(st.session_state.get("trace_step", 1), n)
    st.caption("Greedy decoding picks the most likely token at every step. Step through it: what the model "
               "considered, how sure it was, and where each head looked while choosing.")
    b1, b2, b3 = st.columns([1, 1, 5], vertical_alignment="center")
    step_now = st.session_state.trace_step
    # The arrow keys press these buttons anywhere on the page but in a text box, a list or the slider (which steps
    # with them itself): Streamlit leaves those keys to the field that has them.
    b1.button("◀ Previous", on_click=set_step, args=(step_now - 1, n), disabled=step_now <= 1, width="stretch",
              shortcut="left", key="trace_previous")
    b2.button("Next ▶", on_click=set_step, args=(step_now + 1, n), disabled=step_now >= n, width="stretch",
              shortcut="right", key="trace_next")
    if n > 1:
        st.session_state.step_slider = step_now
        b3.slider("Step", 1, n, key="step_slider", on_change=slider_moved, args=(n,), label_visibility="collapsed")
    st.caption("Keyboard: the ← and → keys step back and forward (Tab to the slider and they move it instead).")
    t = step_now - 1
    step = result.steps[t]
    st.markdown(f"**Step {t + 1} of {n}.** Output so far: " +
                token_chips([s.token for s in result.steps[:t + 1]], current=t), unsafe_allow_html=True)
    st.markdown(f"Reading <span class='chip'>{html.escape(result.tgt_tokens[t])}</span>, the model chose "
                f"<span class='chip now'>{html.escape(step.token)}</span> with probability **{step.prob:.3f}**; "
                f"entropy {step.entropy:.2f} nats; runner-up <span class='chip'>{html.escape(step.runner_up[0])}"
                f"</span> ({step.runner_up[1]:.3f}).", unsafe_allow_html=True)
    c1, c2 = st.columns([2, 3])
    with c1:
        chart(viz.candidates_bar(list(step.top), step.token, title="Top candidates for this step"),
              key="trace_top")
        map_table([[p] for _, p in step.top], table_labels([tok for tok, _ in step.top]), ["probability"],
                  f"Top candidates for step {t + 1} and their probabilities", key="trace_top_table",
                  corner="candidate")
        chart(viz.heads_at_step(result.decoder_attentions[:, :, t, :t + 1], result.tgt_tokens[:t + 1],
                                title="Decoder self-attention at this step"), key="trace_self")
        heads_table(result.decoder_attentions[:, :, t, :t + 1], result.tgt_tokens[:t + 1], None,
                    f"Decoder self-attention at step {t + 1}; rows: layer and head, columns: the English tokens so "
                    "far", key="trace_self_table")
    with c2:
        chart(viz.heads_at_step(result.cross_attentions[:, :, t, :], result.src_tokens,
                                key_unknown=result.src_unknown,
                                title="Cross-attention at this step: where each head read the source"),
              key="trace_cross")
        heads_table(result.cross_attentions[:, :, t, :], result.src_tokens, result.src_unknown,
                    f"Cross-attention at step {t + 1}; rows: layer and head, columns: the German tokens",
                    key="trace_cross_table")
    logit_lens(ctx, t)
    alt = what_if(ctx, t)
    st.markdown("**All steps**")
    st.dataframe(viz.steps_table(result.steps), hide_index=True)
    if alt is None:
        downloads(ctx)
    else:  # the what-if translation, recorded with its forced step
        downloads(ctx, result=alt, force={t: st.session_state.what_if})


def heads_table(rows, key_tokens: list, key_unknown, caption: str, key: str, label: str = "Show as a table"):
    """The table under a viz.heads_at_step chart: a row per layer and head (L*H), a column per key token."""
    L, H, K = rows.shape
    map_table(rows.reshape(L * H, K), [f"layer {i + 1}, head {h + 1}" for i in range(L) for h in range(H)],
              table_labels(key_tokens, key_unknown), caption, key=key, corner="head \\ key", label=label)


@st.cache_data(max_entries=32, show_spinner=False)
def lens(checkpoint: str | None, sentence: str, output_tokens: tuple):
    return load_translator(checkpoint).logit_lens(sentence, list(output_tokens))


def logit_lens(ctx: Context, t: int):
    """What each decoder layer would predict at this step, read through the output layer (the logit lens)."""
    result = ctx.result
    ll = lens(ctx.checkpoint, result.source, tuple(s.token for s in result.steps))
    chosen = result.steps[t].token
    rows = [{"after decoder layer": layer + 1, f"p({chosen})": round(float(ll.chosen_prob[layer, t]), 4),
             **{f"top {i + 1}": f"{tok} ({p:.3f})" for i, (tok, p) in
                enumerate(zip(ll.top_tokens[layer, t], ll.top_probs[layer, t]))}}
            for layer in range(ll.chosen_prob.shape[0])]
    st.markdown("**What each decoder layer would say** (the logit lens)")
    st.caption("The output layer applied to the state after each decoder layer (post-LN, so each is already "
               "normalised). The last row is the model's real choice; earlier rows show how the guess forms.")
    st.dataframe(rows, hide_index=True)


def what_if(ctx: Context, t: int):
    """Pick another candidate at this step and let greedy decoding go on from it."""
    result = ctx.result
    others = alternatives(result, t)
    st.session_state.setdefault("what_if", MODEL_CHOICE)
    if st.session_state.what_if not in others:
        st.session_state.what_if = MODEL_CHOICE
    choice = st.selectbox(f"What if step {t + 1} had said…", [MODEL_CHOICE, *others], key="what_if")
    if choice not in others:
        return None
    alt = translate(ctx.checkpoint, result.source, "", t, choice)
    st.markdown(f"**What-if translation** (step {t + 1} forced to “{html.escape(choice)}”, greedy after): " +
                diff_chips(viz.token_diff([s.token for s in result.steps], [s.token for s in alt.steps])),
                unsafe_allow_html=True)
    cli_hint(result.source, "--force", f"{t}:{choice}")
    if t + 1 < min(len(alt.steps), len(result.steps)):
        c1, c2 = st.columns(2)
        for col, (run, name, key) in zip((c1, c2), ((result, "Original", "whatif_orig"),
                                                     (alt, "What-if", "whatif_alt"))):
            with col:
                chart(viz.heads_at_step(run.cross_attentions[:, :, t + 1], run.src_tokens,
                                        title=f"{name}: cross-attention at step {t + 2}"), key=key)
                heads_table(run.cross_attentions[:, :, t + 1], run.src_tokens, run.src_unknown,
                            f"{name}: cross-attention at step {t + 2}; rows: layer and head, columns: the German "
                            "tokens", key=f"{key}_table", label=f"Show the {name.lower()} map as a table")
    return alt
