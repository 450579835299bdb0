"""Guess first (?guess=1): before a picture is shown, one question about it, answered with a click; then the picture
with the learner's answer marked on it, the right answer and one sentence why; a tally for the session.

Students who predict a demonstration's outcome before seeing it understand it better than those who only watch
(Crouch, Fagen, Callan and Mazur, Am. J. Phys. 2004; Kim, Reinecke and Hullman, CHI 2017). Guidance stays light: a
question, never a recipe, and without the switch nothing is hidden.

Every answer is computed from the very result the picture draws (the maps, the candidates, the head's weights),
never written in: another sentence or model asks again, with its own answer.
"""

import hashlib
from dataclasses import dataclass

import numpy as np
import streamlit as st

import viz
from model.heads import KIND_NAMES
from model.i18n import N_, _
from viz.labels import ACTIVATIONS, token_labels

from .calls import inside
from .state import ANSWERS, opening_layer
from .widgets import chart, focus, literal

GUESS = "guess"  # the switch's key; the link's guess=1
SURE = (N_("under 0.5"), N_("0.5 to 0.9"), N_("over 0.9"))  # how sure the model is: the trace's second question
OPEN = "guess_open"  # set by a run of a view that leaves a question open (app.py clears it before the view runs)
JUST = "guess_just_answered"  # the key of the question answered by the click that started this run


@dataclass(frozen=True)
class Question:
    id: str  # what it asks about, with the sentence and model: each result asks its own
    text: str
    options: tuple  # what the learner clicks (plain text)
    answer: str  # one of options
    why: str  # one sentence, with the numbers that decide it


def on() -> bool:
    return bool(st.session_state.get(GUESS))


def open_now() -> bool:
    """Did this run's view leave a question open? The frame then hides the translation and the output tokens,
    which would give its answer away (app.py draws them after the view)."""
    return bool(st.session_state.get(OPEN))


def key_of(q: Question) -> str:
    """A question's short name in the link (answered=KEY.INDEX,...): 8 hex digits of its id's SHA-256."""
    return hashlib.sha256(q.id.encode()).hexdigest()[:8]


def given(q: Question | None) -> str | None:
    """The learner's answer to q, or None (not asked, or guessing is off). Answers are kept by the question's key and
    the option's index, as the link keeps them, so a reload (or the link sent on) finds them again."""
    if not (q and on()):
        return None
    index = st.session_state.get(ANSWERS, {}).get(key_of(q))
    return q.options[index] if index is not None and index < len(q.options) else None


def answer(key: str, index: int):
    st.session_state.setdefault(ANSWERS, {})[key] = index
    st.session_state[JUST] = key  # the next run moves the keyboard focus to this question's verdict


def tally() -> tuple[int, int]:
    """This session's guesses: (right, answered). A question's verdict is kept with it, so the tally is a count."""
    verdicts = st.session_state.get("guess_verdicts", {})
    return sum(verdicts.values()), len(verdicts)


def hidden(q: Question | None) -> bool:
    """With guessing on, the question (True: the picture waits) or, once answered, the verdict (False). Without it,
    or with no question here, nothing (False)."""
    if q is None or not on():
        return False
    choice = given(q)
    key = key_of(q)
    if choice is None:
        st.session_state[OPEN] = True  # this run leaves a question open: the frame hides what would answer it
        box = st.container(border=True, key=f"guess_box_{key}")
        box.markdown(_("**Guess first.**") + " " + literal(q.text))
        row = box.container(horizontal=True)
        for i, option in enumerate(q.options):
            row.button(literal(option), key=f"guess_{key}_{i}", on_click=answer, args=(key, i))
        box.caption(_("The picture shows once you have answered."))
        return True
    if st.session_state.pop(OPEN, False):  # answered in a fragment's run: the whole page redraws, translation shown
        st.rerun()
    verdicts = st.session_state.setdefault("guess_verdicts", {})
    verdicts.setdefault(key, choice == q.answer)
    right, asked = tally()
    def said(verdict: str) -> str:
        return literal(" ".join((_("Your guess: “{choice}”.").format(choice=choice), verdict, q.why,
                                 _("(This session: {right} of {asked} right.)").format(right=right, asked=asked))))

    box = st.container(key=f"guess_verdict_{key}")
    if choice == q.answer:  # right and wrong differ in word and icon, not in colour alone
        box.success(said(_("Right.")), icon=":material/check_circle:")
    else:
        box.warning(said(_("Not quite: the answer is “{answer}”.").format(answer=q.answer)), icon=":material/cancel:")
    if st.session_state.get(JUST) == key:  # the click's question is gone: the focus goes to its verdict, not the top
        del st.session_state[JUST]
        with box:
            focus(data={"key": f"guess_verdict_{key}", "for": key})
    return False


# --- the questions: each computed from the result the picture draws ---------------------------------------------


def qid(result, *what) -> str:
    return "|".join(map(str, (result.source, " ".join(s.token for s in result.steps), *what)))


def options_of(tokens) -> list[str]:
    """Tokens as options a learner can tell apart: a repeated token gets its position ("a (3)")."""
    return [t if tokens.count(t) == 1 else f"{t} ({i})" for i, t in enumerate(tokens)]


def first_word_step(result, at_least: int = 0) -> int | None:
    """The first step, from `at_least` on, that writes a word (letters), or None."""
    return next((t for t, s in enumerate(result.steps) if t >= at_least and any(c.isalpha() for c in s.token)), None)


def map_question(result, kind: str, layer: int, first: int = 1, source: str = "German") -> tuple | None:
    """Which key the layer's heads, averaged, weigh most for one query: the question, the query's row and its weights
    over the keys it may see. The query: the first real source token (enc: position `first`, after <sos> where the
    source starts with it), the first step that writes a word (cross), or the first from step 3 on (dec, where step 1
    sees only the start token). `source`: what the page calls the source language."""
    maps = result.maps(kind)[layer].mean(0)  # (Q, K)
    if kind == "enc":
        row = first if len(result.src_tokens) > first + 1 else None
    else:
        row = first_word_step(result, 2 if kind == "dec" else 0)
    if row is None:
        return None
    keys = result.src_tokens if kind in ("enc", "cross") else result.tgt_tokens[:row + 1]
    w = maps[row, :len(keys)]
    options = options_of(keys)
    best = int(np.argmax(w))
    if kind == "enc":
        text = _("In encoder self-attention layer {layer}, its heads averaged: which {source} token does “{token}” "
                 "weigh most?").format(layer=layer + 1, source=source, token=result.src_tokens[row])
    elif kind == "cross":
        text = _("In cross-attention layer {layer}, its heads averaged: when the model writes “{token}”, which "
                 "{source} token does it weigh most?").format(layer=layer + 1, source=source,
                                                             token=result.steps[row].token)
    else:
        text = _("In decoder self-attention layer {layer}, its heads averaged: when the model writes “{token}”, which "
                 "of the tokens already there does it weigh most?").format(layer=layer + 1,
                                                                          token=result.steps[row].token)
    q = Question(qid(result, kind, layer, row), text, tuple(options), options[best],
                 _("“{token}” gets weight {w:.2f} of 1; the next most weighed gets {next:.2f}.").format(
                     token=keys[best], w=w[best], next=np.sort(w)[-2] if len(w) > 1 else 0))
    return q, row, w


def marked_row(q: Question, row: int, w, result, kind: str, key: str):
    """The query's row of weights as a one-row map, the guess and the answer outlined on it."""
    if kind == "enc":
        label = [result.src_tokens[row]]
    else:
        label = [token_labels(result, "tgt")[0][row]]
    keys = result.src_tokens if kind in ("enc", "cross") else result.tgt_tokens[:len(w)]
    options = list(q.options)
    fig = viz.attention_heatmap(np.asarray(w)[None], label, keys, title=_("Your guess on this query's row"))
    choice = given(q)
    viz.mark_guess(fig, None if choice is None else (options.index(choice), 0), (options.index(q.answer), 0))
    chart(fig, key=key, name="guess-row")


def mask_question(result) -> Question | None:
    """How many tokens the causal mask lets step 3 see, counted from the model's own map (weights above 0)."""
    if len(result.steps) < 3:
        return None
    seen = int((result.decoder_attentions[0, 0, 2] > 0).sum())
    T = len(result.steps)
    options = [str(n) for n in sorted({1, 2, 3, 4, T})]
    return Question(qid(result, "mask"), _("Decoder self-attention at step 3, reading “{token}”: how many of the "
                                           "{T} input tokens may it look at?").format(token=result.tgt_tokens[2], T=T),
                    tuple(options), str(seen),
                    _("The mask lets row t see tokens 0 to t: step 3 sees {seen} ({tokens}); the future gets weight "
                      "exactly 0.").format(seen=seen, tokens=", ".join(result.tgt_tokens[:seen])))


def next_word_question(result, t: int) -> Question:
    s = result.steps[t]
    so_far = " ".join(x.token for x in result.steps[:t]) or _("nothing yet")
    options = sorted(tok for tok, _p in s.top)  # not by probability: the first would always be the answer
    return Question(qid(result, "next", t), _("Step {step} (written so far: “{so_far}”): which word does the model "
                                              "write next?").format(step=t + 1, so_far=so_far), tuple(options), s.token,
                    _("“{token}” has probability {p:.3f}, the runner-up “{runner}” {q:.3f}.").format(
                        token=s.token, p=s.prob, runner=s.runner_up[0], q=s.runner_up[1]))


def sure_question(result, t: int) -> Question:
    s = result.steps[t]
    options = tuple(map(_, SURE))
    bucket = options[0] if s.prob < 0.5 else options[1] if s.prob <= 0.9 else options[2]
    return Question(qid(result, "sure", t), _("How sure is the model of “{token}” at step {step}: its probability "
                                              "is …").format(token=s.token, step=t + 1), options, bucket,
                    _("It is {p:.3f}.").format(p=s.prob))


def marked_candidates(result, t: int, q: Question, key: str):
    s = result.steps[t]
    tokens = [tok for tok, _p in s.top]
    fig = viz.candidates_bar(list(s.top), s.token, title=_("Step {step}: the most likely next tokens").format(
        step=t + 1))
    choice = given(q)
    viz.mark_guess(fig, None if choice is None else (None, tokens.index(choice)), (None, tokens.index(q.answer)))
    chart(fig, key=key, name="guess-candidates")


def head_question(result, tr, kind: str, layer: int, head: int, query: int) -> Question:
    """Which key one head weighs most for one query (Inside a head, the walk's stop 3)."""
    visible = [k for k, m in zip(tr.key_tokens, tr.mask) if m]  # the keys the query may see: a prefix (dec), or all
    w = np.asarray(tr.weights)[:len(visible)]
    options = options_of(visible)
    best = int(np.argmax(w))
    return Question(qid(result, "head", kind, layer, head, query),
                    _("{kind}, layer {layer}, head {head}: which key does the query “{token}” weigh most?").format(
                        kind=_(KIND_NAMES[kind]), layer=layer + 1, head=head + 1, token=tr.query_token),
                    tuple(options), options[best],
                    _("Its scaled score q·k/√d_k is the highest, {score:.2f}, so the softmax gives it {w:.2f} of the "
                      "weight.").format(score=tr.scaled[best], w=w[best]))


# --- the walk's other stops: one question each, from the numbers its picture draws -------------------------------


def share_bucket(share: float) -> str:
    return _(QUARTERS[min(int(share * 4), 3)])


QUARTERS = (N_("under a quarter"), N_("a quarter to a half"), N_("a half to three quarters"),
            N_("three quarters or more"))


def token_count_question(result, start: bool = True) -> Question:
    """Stop 1: how many tokens the model reads (spaCy's tokens, then <sos> and <eos> around them; a Marian model's
    SentencePiece pieces, then its end token: `start` False, the source has no start token)."""
    n = len(result.src_tokens)
    options = tuple(str(k) for k in sorted({max(n - 2, 1), n - 1, n, n + 1}))
    why = (_("spaCy cuts it into {k} tokens (punctuation is a token of its own), and <sos> and <eos> frame them: "
             "{n}.").format(k=n - 2, n=n) if start else
           _("SentencePiece cuts it into {k} pieces (a rare word into several), and {end} ends them: {n}.").format(
               k=n - 1, end=result.src_tokens[-1], n=n))
    return Question(qid(result, "tokens"), _("How many tokens does the model read for this sentence?"), options,
                    str(n), why)


def longer_question(result, token_vector, position_vector, token: str, position: int) -> Question:
    """Stop 2: which of the two vectors that are added is the longer (Euclidean norm)."""
    a, b = float(np.linalg.norm(token_vector)), float(np.linalg.norm(position_vector))
    options = (_("the embedding × √d"), _("the vector of position {position}").format(position=position))
    return Question(qid(result, "longer", position), _("“{token}”: which of the two vectors added together is "
                                                       "longer?").format(token=token),
                    options, options[0] if a >= b else options[1],
                    _("‖embedding × √d‖ = {a:.1f}, ‖position {position}‖ = {b:.1f}.").format(a=a, b=b,
                                                                                            position=position))


def diagonal_head_question(result, maps, layer: int) -> Question:
    """Stop 4: which head of the layer puts the most weight on each token itself (the mean of its diagonal)."""
    diagonal = np.asarray([np.diagonal(m).mean() for m in maps])  # (H,)
    order = np.argsort(-diagonal)
    options = tuple(_("head {head}").format(head=h + 1) for h in range(len(diagonal)))
    return Question(qid(result, "diagonal", layer), _("Encoder layer {layer}: which head puts the most weight on "
                                                      "each token itself (the diagonal of its tile)?").format(
                        layer=layer + 1), options, options[order[0]],
                    _("Head {head}: {w:.2f} of each row on average; next, head {next}: {next_w:.2f}.").format(
                        head=order[0] + 1, w=diagonal[order[0]], next=order[1] + 1, next_w=diagonal[order[1]]))


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def residual_question(result, x, attn_out, total, token: str) -> Question:
    """Stop 5: is x + attention closer in direction to x or to the attention output (cosine)?"""
    to_x, to_attn = cosine(total, x), cosine(total, attn_out)
    options = (_("to x, what came in"), _("to the attention output"))
    return Question(qid(result, "residual", token), _("“{token}”: after the residual connection, is x + attention "
                                                      "closer in direction to x or to the attention output?").format(
                        token=token), options, options[0] if to_x >= to_attn else options[1],
                    _("cos(x + attention, x) = {to_x:.2f}, cos(x + attention, attention output) = {to_attn:.2f}.")
                    .format(to_x=to_x, to_attn=to_attn))


def relu_question(result, hidden, token: str, activation: str = "ReLU") -> Question:
    """Stop 6: what share of the feed-forward network's hidden units its activation (ReLU, or a converted model's
    swish or GELU) leaves above 0."""
    k, n = int((np.asarray(hidden) > 0).sum()), int(np.asarray(hidden).size)
    return Question(qid(result, "relu", token), _("“{token}”: what share of the {n} hidden units does the "
                                                  "{activation} leave above 0?").format(token=token, n=n,
                                                                                       activation=activation),
                    tuple(map(_, QUARTERS)), share_bucket(k / n), _("{k} of {n}: {share:.0%}.").format(k=k, n=n,
                                                                                                    share=k / n))


def stack_question(result, rows, token: str) -> Question:
    """Stop 7: which encoder layer changes the token's vector the most (Euclidean distance before and after)."""
    moved = np.linalg.norm(np.diff(np.asarray(rows, np.float64), axis=0), axis=-1)  # (layers,)
    options = tuple(_("layer {layer}").format(layer=i + 1) for i in range(len(moved)))
    return Question(qid(result, "stack", token), _("“{token}”: which encoder layer changes its vector the most?")
                    .format(token=token), options, options[int(np.argmax(moved))],
                    _("How far each layer moves it: {moves}.").format(moves=", ".join(
                        _("layer {layer} {d:.1f}").format(layer=i + 1, d=d) for i, d in enumerate(moved))))


def steps_question(result) -> Question:
    """Stop 11: how many steps the greedy loop takes (each writes one token; <eos> is the last)."""
    n = len(result.steps)
    options = tuple(str(k) for k in sorted({max(n - 2, 1), n - 1, n, n + 1} - {0}))
    return Question(qid(result, "steps"), _("How many steps does the loop take for this sentence (each step writes "
                                            "one token, <eos> included)?"), options, str(n),
                    _("{n} steps: the last wrote “{token}”.").format(n=n, token=result.steps[-1].token))


# --- the walk's questions, one per stop ---------------------------------------------------------------------------


def stop_question(ctx, ins, word: int, n: int) -> Question | None:
    """The walk's stop n's guess-first question (views/walk.py), computed from what its picture draws: `ins` the
    translation's Inside (views/calls.py inside), `word` the source token its pictures follow. Every stop asks one;
    the mask's (stop 8) needs 3 steps, so a translation of one or two tokens skips it."""
    r = ctx.result
    tok = ins.src_tokens[word]
    a = ins.sublayers["enc"]
    if n == 0:
        return token_count_question(r, ctx.cfg.source_start)
    if n == 1:
        e = ins.embedding["src"]
        return longer_question(r, e["tokens"][word], e["positions"][word], tok, word)
    if n == 3:
        layer = opening_layer(r, "enc")
        return diagonal_head_question(r, r.encoder_attentions[layer], layer)
    if n == 4:
        stream = a["x"] if ctx.cfg.norm_position == "post" else a["residual"] - a["attn_out"]
        return residual_question(r, stream[0, word], a["attn_out"][0, word], a["residual"][0, word], tok)
    if n == 5:
        return relu_question(r, ins.ffn["encoder"]["hidden"][0, word], tok, ACTIVATIONS[ctx.cfg.activation][0])
    if n == 6:
        return stack_question(r, np.stack([a["x"][0, word], *a["layer_output"][:, word]]), tok)
    if n == 10:
        return steps_question(r)
    if n == 2:
        return head_question(r, ins.head("enc", 0, 0, word), "enc", 0, 0, word)
    if n == 7:
        return mask_question(r)
    if n == 8:
        found = map_question(r, "cross", r.cross_attentions.shape[0] - 1, source=ctx.names[0])
        return found and found[0]
    if n == 9:
        return next_word_question(r, 0)
    return None


WALK_STOPS = 11  # the walk's stops (views/walk.py STOPS; tests/unit/test_structure.py holds them equal)


def followed_word(ctx) -> int:
    """The source token the walk's pictures follow: the first word after <sos> (where the source starts with it: not a
    Marian model's), or the first token of a source that has no other."""
    first = int(ctx.cfg.source_start)
    return first if len(ctx.result.src_tokens) > first + 1 else 0


def stop_questions(ctx) -> list[tuple[int, Question]]:
    """Every stop's question on this sentence, (stop index, question), as the walk asks them (a class votes on them:
    views/classroom.py); a stop this translation cannot ask is left out."""
    r = ctx.result
    ins = inside(ctx.checkpoint, r.source, tuple(s.token for s in r.steps))
    found = [(n, stop_question(ctx, ins, followed_word(ctx), n)) for n in range(WALK_STOPS)]
    return [(n, q) for n, q in found if q is not None]
