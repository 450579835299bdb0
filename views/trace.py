"""The decoding trace: step through greedy decoding, and ask what if a step had said something else: one of its
candidates, from the box the browser draws, or any word of the model's target vocabulary (`model.translate --force`
takes any), from the box under it."""

import html

import streamlit as st

import viz
from model.i18n import SOURCE, _, language
from model.languages import language_names
from viz.labels import positioned

from . import Context, guess
from .calls import load_translator, models, translate
from .export import downloads
from .instant import WEIGHT_STEP, figure_json, packed, show
from .state import ANY_WORD, MODEL_CHOICE, alternatives, forceable, int_param, page_view, whole_number
from .widgets import chart, cli_hint, diff_chips, literal, map_table, table_labels

MAX_STEP = 10_000  # a step from the link beyond the output is clamped to its last step


def read_link(params, cfg, notes: list):
    """step (from 1) and whatif: the step shown, and a word forced there (judge_link checks the model knows it)."""
    step = int_param(params, "step", 1, MAX_STEP, notes)
    if step is not None:
        st.session_state.trace_step = step  # the view clamps it to the output's length
    if params.get("whatif"):
        st.session_state.what_if = params["whatif"]


def judge_link(result, notes: list):
    """The link's what-if word, dropped with a note unless its step (clamped as the view clamps it) can say it: any
    word of the model's English vocabulary, as the command line's --force takes."""
    t = min(st.session_state.get("trace_step", 1), len(result.steps)) - 1
    translator = load_translator(models().get(st.session_state.get("model")))
    target = language_names(translator.origin["languages"])[1]
    if not forceable(result, t, st.session_state.get("what_if"), translator.tgt_vocab, notes, target):
        st.session_state.what_if = MODEL_CHOICE


def link_params(cfg) -> dict:
    s = st.session_state
    params = {"step": str(s.get("trace_step", 1))}
    if s.get("what_if") not in (None, MODEL_CHOICE, ANY_WORD):
        params["whatif"] = s.what_if
    return params


def seq_key() -> str:
    """How many times the server has set the step (a what-if picked, a what-if left): the browser keeps its own
    step (views/trace.js) until this number changes."""
    return "trace_pick_seq"


def server_step(step: int, word: str = MODEL_CHOICE):
    """The server takes a step from the browser (a forced word needs a decoding; leaving one drops it)."""
    st.session_state.trace_step, st.session_state.what_if = step, word
    st.session_state[seq_key()] = st.session_state.get(seq_key(), 0) + 1


def whatif_picked():
    event = st.session_state.trace_steps["whatif"] or {}
    if event.get("step"):
        server_step(int(event["step"]), event.get("word") or MODEL_CHOICE)


def evidence_picked():
    """The browser asks for the training evidence of its step: that view opens at that step (views/evidence.py)."""
    step = whole_number(str(st.session_state.trace_steps["evidence"] or ""), 1, 10_000)  # a client sends anything
    if step:
        st.session_state.evidence_step, st.session_state.view = step - 1, "evidence"
        st.session_state.evidence_jump = True  # the view switch is outside this fragment: the page reruns


def whatif_left():
    step = st.session_state.trace_steps["step"]
    if step:
        server_step(int(step))


@st.fragment
@page_view
def trace_view(ctx: Context):
    result = ctx.result
    n = len(result.steps)
    # The step lives in its own key: it survives view changes, and a new sentence keeps it (clamped when the new
    # output is shorter) instead of jumping back to the start. The browser steps on its own (views/trace.js).
    st.session_state.trace_step = min(st.session_state.get("trace_step", 1), n)
    st.caption(_("Greedy decoding picks the most likely token at every step. Step through it: what the model "
                 "considered, how sure it was, and where each head looked while choosing."))
    t = st.session_state.trace_step - 1
    if guess.on():  # guess first: the word, then how sure; the step's pictures wait for both answers
        first = guess.next_word_question(result, t)
        if guess.hidden(first) or guess.hidden(guess.sure_question(result, t)):
            return
        guess.marked_candidates(result, t, first, key="guess_candidates")
    st.session_state.setdefault("what_if", MODEL_CHOICE)
    word = st.session_state.what_if  # one this step cannot say (its own word, another model's): dropped
    if word != ANY_WORD and not forceable(result, t, word, ctx.translator.tgt_vocab, []):
        st.session_state.what_if = MODEL_CHOICE
    show("trace", trace_data(ctx, t), key="trace_steps", on_whatif_change=whatif_picked,
         on_step_change=whatif_left, on_evidence_change=evidence_picked)
    if st.session_state.pop("evidence_jump", False):
        st.rerun(scope="app")
    alt = what_if(ctx, t)
    st.markdown(_("**All steps**"))
    st.dataframe(viz.steps_table(result.steps), hide_index=True)
    if alt is None:
        downloads(ctx)
    else:  # the what-if translation, recorded with its forced step
        downloads(ctx, result=alt, force={t: st.session_state.what_if})


def trace_data(ctx: Context, t: int) -> dict:
    """Everything the browser draws a step from (views/trace.js), for every step: the step's numbers, its
    candidates' figure, where every head looked (packed maps and the figures viz builds for step t), the logit
    lens, and the words a what-if could force."""
    r = ctx.result
    n, L, H = len(r.steps), *r.cross_attentions.shape[:2]
    ll = lens(ctx.checkpoint, r.source, tuple(s.token for s in r.steps))
    heads = [_("layer {layer}, head {head}").format(layer=i + 1, head=h + 1) for i in range(L) for h in range(H)]
    forced = st.session_state.what_if

    def others(i: int) -> list[str]:  # the browser's what-if box at step i: a word forced there, then ANY_WORD
        words = alternatives(r, i)
        return [*words, *([forced] if i == t and forced not in (MODEL_CHOICE, ANY_WORD, *words) else []), ANY_WORD]

    return {
        "slug": "trace", "seq": st.session_state.get(seq_key(), 0), "step": t, "n": n,
        "whatif": None if st.session_state.what_if == MODEL_CHOICE else st.session_state.what_if,
        "choice": MODEL_CHOICE,
        "steps": [{"read": r.tgt_tokens[i], "token": s.token, "prob": s.prob, "entropy": s.entropy,
                   "runner": list(s.runner_up), "top": [[tok, p] for tok, p in s.top],
                   "top_labels": table_labels([tok for tok, _p in s.top]),
                   "others": others(i)} for i, s in enumerate(r.steps)],
        "bars": candidate_bars(ctx.checkpoint, r.source, language()),
        "self": {"figure": figure_json(viz.heads_at_step(r.decoder_attentions[:, :, t, :t + 1], r.tgt_tokens[:t + 1],
                                                         title=_("Decoder self-attention at this step"))),
                 "maps": packed(r.decoder_attentions, step=WEIGHT_STEP), "labels": positioned(r.tgt_tokens),
                 "axes": self_axes(r.tgt_tokens, n),
                 # {step}: the browser fills it in (views/trace.js), so it is given itself here
                 "table": {"cols": table_labels(r.tgt_tokens),
                           "caption": _("Decoder self-attention at step {step}; rows: layer and head, columns: the "
                                        "{target} tokens so far").format(step="{step}", target=ctx.names[1])}},
        "cross": {"figure": figure_json(viz.heads_at_step(r.cross_attentions[:, :, t, :], r.src_tokens,
                                                          key_unknown=r.src_unknown,
                                                          title=_("Cross-attention at this step: where each head "
                                                                  "read the source"))),
                  "maps": packed(r.cross_attentions, step=WEIGHT_STEP),
                  "table": {"cols": table_labels(r.src_tokens, r.src_unknown),
                            "caption": _("Cross-attention at step {step}; rows: layer and head, columns: the {source} "
                                         "tokens").format(step="{step}", source=ctx.names[0])}},
        "heads": heads, "heads_short": [f"L{i + 1} H{h + 1}" for i in range(L) for h in range(H)],
        "lens": {"chosen": ll.chosen_prob.round(4).tolist(), "top": ll.top_tokens.tolist(),
                 "probs": ll.top_probs.round(3).tolist()},
    }


def only_start(start: str) -> str:
    """Step 1's key axis title: the decoder's start token (<sos>, or a Marian model's <pad>) is its only key."""
    return _("key: {start}, the only token so far,<br>so every head must give it weight 1").format(
        start=html.escape(start, quote=False))  # as viz.labels.plain escapes it (the line is never blank)


def self_axes(tgt_tokens: list, n: int) -> list[dict]:
    """The key axis of the decoder self-attention at each of n steps (views/trace.js sets each step's own). At step
    1 its title says why the map is one solid column: the start token is the only key, and a softmax over one key
    gives it weight 1 whatever the scores."""
    axes = [viz.step_keys_axis(tgt_tokens[:i + 1]) for i in range(n)]
    axes[0] = {**axes[0], "title": {"text": only_start(tgt_tokens[0])}}
    return axes


def heads_table(rows, key_tokens: list, key_unknown, caption: str, key: str, label: str | None = None):
    """The table under a viz.heads_at_step chart: a row per layer and head (L*H), a column per key token; its switch
    named `label` (by default "Show as a table")."""
    L, H, K = rows.shape
    map_table(rows.reshape(L * H, K), [_("layer {layer}, head {head}").format(layer=i + 1, head=h + 1)
                                       for i in range(L) for h in range(H)],
              table_labels(key_tokens, key_unknown), caption, key=key, corner=_("head \\ key"),
              label=label or _("Show as a table"))


@st.cache_data(max_entries=32, show_spinner=False)
def candidate_bars(checkpoint: str | None, sentence: str, lang: str = SOURCE) -> list[str]:
    """Each step's top candidates as a figure (JSON), built once per sentence and language (`lang`, the page's,
    keys the cache: the figures' words are in it): ~5 ms a step, and the trace view reruns for a what-if word with
    the same steps."""
    return [figure_json(viz.candidates_bar(list(s.top), s.token, title=_("Top candidates for this step")))
            for s in translate(checkpoint, sentence).steps]


@st.cache_data(max_entries=32, show_spinner=False)
def lens(checkpoint: str | None, sentence: str, output_tokens: tuple):
    return load_translator(checkpoint).logit_lens(sentence, list(output_tokens))


@st.cache_data(max_entries=4, show_spinner=False)
def english_words(checkpoint: str | None) -> list[str]:
    """The words a what-if can force: the model's English vocabulary (most frequent first) but the two tokens it
    never writes."""
    vocab = load_translator(checkpoint).tgt_vocab
    return [w for w in vocab.itos if w not in vocab.never_written]


def any_word_picked(step: int):
    if st.session_state.whatif_word:
        server_step(step, st.session_state.whatif_word)


def any_word_box(ctx: Context, t: int):
    """Under the browser's box, once it asked for another word (ANY_WORD) or one is forced that is not a candidate:
    every word of the vocabulary, the step's candidates first, the word it chose left out."""
    chose, candidates = ctx.result.steps[t].token, alternatives(ctx.result, t)
    words = [*candidates, *(w for w in english_words(ctx.checkpoint) if w not in candidates and w != chose)]
    forced = st.session_state.what_if
    st.session_state.whatif_word = None if forced == ANY_WORD else forced
    st.selectbox(_("Step {step}, any word of the model's {target} vocabulary ({n:,} words: type to find one)").format(
                     step=t + 1, target=ctx.names[1], n=len(words)),
                 words, index=None, key="whatif_word", on_change=any_word_picked, args=(t + 1,),
                 placeholder=_("type a word"),
                 help=_("The step's candidates come first, then the rest of the vocabulary, most frequent first: as "
                        "`python -m model.translate --force` takes"))


def forced_chips(before: list, after: list, t: int) -> str:
    """The what-if output word by word against the original (viz.token_diff: struck out, added), the forced word,
    `after[t]`, outlined and named: what the page forced, apart from what greedy decoding wrote after it."""
    chips, j = [], -1
    title, named = html.escape(_("forced at step {step}").format(step=t + 1)), html.escape(_("forced"))
    for op, token in viz.token_diff(before, after):
        j += op != "removed"  # the position in `after` of each word it keeps or adds
        if op != "removed" and j == t:
            chips.append(f'<span class="chip{" add" if op == "added" else ""}" title="{title}" '
                         f'style="outline:2px solid currentColor; outline-offset:1px">{literal(token)}</span>'
                         f"<small>&nbsp;◂&nbsp;{named}</small>")
        else:
            chips.append(diff_chips([(op, token)]))
    return " ".join(chips)


def what_if(ctx: Context, t: int):
    """The word picked for step t in the browser's "What if" box, or in the vocabulary's box under it: greedy
    decoding goes on from it."""
    result = ctx.result
    choice = st.session_state.what_if
    if choice == MODEL_CHOICE:
        return None
    if choice not in alternatives(result, t):  # ANY_WORD, or a word of the vocabulary's box or of a link
        any_word_box(ctx, t)
    if choice == ANY_WORD:
        return None
    alt = translate(ctx.checkpoint, result.source, "", t, choice)
    st.markdown(_("**What-if translation** (step {step} forced to “{word}”, greedy after):").format(
                    step=t + 1, word=literal(choice)) + " " +
                forced_chips([s.token for s in result.steps], [s.token for s in alt.steps], t),
                unsafe_allow_html=True)
    cli_hint(result.source, "--force", f"{t}:{choice}")
    if t + 1 < min(len(alt.steps), len(result.steps)):
        c1, c2 = st.columns(2)
        sides = ((result, "whatif_orig", _("Original: cross-attention at step {step}"),
                  _("Original: cross-attention at step {step}; rows: layer and head, columns: the {source} tokens"),
                  _("Show the original map as a table")),
                 (alt, "whatif_alt", _("What-if: cross-attention at step {step}"),
                  _("What-if: cross-attention at step {step}; rows: layer and head, columns: the {source} tokens"),
                  _("Show the what-if map as a table")))
        for col, (run, key, title, caption, label) in zip((c1, c2), sides):
            with col:
                chart(viz.heads_at_step(run.cross_attentions[:, :, t + 1], run.src_tokens,
                                        title=title.format(step=t + 2)), key=key)
                heads_table(run.cross_attentions[:, :, t + 1], run.src_tokens, run.src_unknown,
                            caption.format(step=t + 2, source=ctx.names[0]), key=f"{key}_table", label=label)
    return alt
