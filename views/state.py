"""The page's state: in its address, where a copied link opens the same picture, and in the widgets' keys.

    ?s=Zwei+Männer+...&view=cross&layer=3&head=3         an attention view, one head (or head=mean)
    ?s=...&view=trace&step=4&whatif=boys                   the decoding trace at step 4, step 4 forced
    ?s=...&view=ablate&off=cross.3,enc.1.4                 heads switched off (a whole layer, or one head)
    ?s=...&view=reference&ref=Two+men+...                  a reference to score
    ?s=...&view=beam&beam=5                                beam search of width 5
    ?s=...&view=cross&layer=2&draw=lines                  the line view of layer 2 (all heads)
    ?s=...&model=sinusoidal                                the sinusoidal-position model
    ?s=...&view=cross&vs=model                             compare with the other model (or vs=sentence&s2=...,
                                                           vs=off with off=..., vs=force with step and whatif)
    ?s=...&view=inside&kind=cross&layer=2&head=8&query=3   one query through one head (query counts from 0,
                                                           as the token positions on the page do)
    ?s=...&view=cross&values=norms                         norm-based attention instead of the weights
    ?s=...&view=contributions                              how much each word drew on the source (ALTI+)
    ?s=...&view=walk&stop=5                                the walk through the model, at its 5th stop
    ?s=...&view=walk&stop=1&guess=1&present=1             a lesson: guess first, in the presenter layout
    ?s=...&view=walk&stop=3&guess=1&answered=1f0c2a9b.2    guess first with the answers given so far (a
                                                           question's key, the option's number from 0)
    ?s=...&view=walk&lang=ko                               the page in Korean (ko, de or en; without it, the
                                                           browser's language where the page has it)

Layers, heads and steps count from 1, as on the page (the CLIs count from 0). Only the
parameters that decide the current view are written, so links stay short. This module reads
and writes what every page has (the sentence, the model, the view); each view reads and writes
its own parameters (its entry in views.registry.VIEWS) with the one reader of each kind of
parameter here (`int_param`, `head_param`, ...). A parameter that does not fit (an unknown view,
layer 9, a head spec that names no head, a sentence longer than the box takes, a forced word
the step cannot say) is dropped with a message, and the page shows its default.

The widgets' state has one spelling of each key here, for the views and for the link that sets
them; `page_view` wraps every view, so that each of its runs leaves its state in the link.
"""

import functools
import logging
import os
import re
from collections.abc import Mapping

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.common import user_key_from_element_id

from lesson.classroom import CODE_LENGTH, CODE_LETTERS
from model.errors import InputError
from model.head_stats import head_divergence
from model.heads import Head, HeadSet
from model.i18n import LANGUAGES, SOURCE, _, best_match, use
from model.result import Translation

from . import View
from .calls import models

log = logging.getLogger("explorer")
MAX_SENTENCE = 2000  # characters the sentence boxes take (widgets.text_box) and a link's sentence may have


# --- the widgets' state: one spelling of each key, for the views and for the link that sets them -----------------

MODEL_CHOICE = "(the model's choice)"  # the what-if box of the decoding trace when no word is forced
ANY_WORD = "(another word…)"  # the what-if box's way to any word of the vocabulary (tokens hold no spaces)


def layer_key(kind: str) -> str:
    """The layer picked in the attention view of this kind."""
    return f"{kind}_layer"


def head_key(kind: str) -> str:
    """The head picked in the attention view of this kind: a number from 0, or "mean"."""
    return f"{kind}_head"


def pick_seq_key(kind: str) -> str:
    """How many times the server has picked the layer and head of this kind's attention view (a head opened from
    another view): the browser, which keeps its own picks (views/maps.js), takes the server's when it changes."""
    return f"{kind}_pick_seq"


def opening_layer(result: Translation, kind: str) -> int:
    """The layer (from 0) an attention view of this kind opens on where no pick says otherwise, and the one the
    walk's multi-head stop shows: for self-attention the layer whose heads differ most on this sentence
    (model/head_stats.py head_divergence: the first layer's heads are near-uniform and alike), for cross-attention
    the last layer, where the walk's cross-attention stop looks."""
    maps = result.maps(kind)  # (L, H, Q, K)
    if kind == "cross":
        return len(maps) - 1
    return int(np.argmax(head_divergence(maps, first_row=1 if kind == "dec" else 0)))


def set_pick(kind: str, layer: int, head):
    """Set the attention view of this kind to a layer and a head (a number from 0, or MEAN): the browser takes it
    over its own picks (views/maps.js)."""
    st.session_state[layer_key(kind)], st.session_state[head_key(kind)] = layer, head
    st.session_state[pick_seq_key(kind)] = st.session_state.get(pick_seq_key(kind), 0) + 1


def open_head(head: Head):
    """Show one head in its attention view (each attention view's slug is its kind)."""
    set_pick(head.kind, head.layer, head.head)
    st.session_state.view = head.kind


def alternatives(result: Translation, t: int) -> list[str]:
    """The words step t could have said instead: its other top candidates (the comparison forces one; the trace offers
    them first, then any word: `forceable`)."""
    return [tok for tok, _p in result.steps[t].top if tok != result.steps[t].token]


def offers(result: Translation, t: int, word: str | None, notes: list) -> bool:
    """Whether step t could have said a forced word from the link (no word at all passes); a note when not."""
    if word in (None, MODEL_CHOICE) or word in alternatives(result, t):
        return True
    notes.append(_("whatif={word} is not one of the words step {step} could have said ({words})").format(
        word=repr(word[:40]), step=t + 1, words=", ".join(alternatives(result, t))))
    return False


def forceable(result: Translation, t: int, word: str | None, vocabulary, notes: list, target: str = "English") -> bool:
    """Whether the decoding trace can force step t to a word from the link: any word of the model's target
    vocabulary (its Vocab; `target`: what the page calls that language), as `model.translate --force` takes, but
    the two it never writes and the word step t chose anyway (no word at all passes); a note when not."""
    if word in (None, MODEL_CHOICE):
        return True
    if word == result.steps[t].token:
        notes.append(_("whatif={word} is the word step {step} says anyway").format(word=repr(word[:40]), step=t + 1))
    elif word in vocabulary.never_written:
        notes.append(_("whatif={word} is a token the model never writes").format(word=repr(word[:40])))
    elif word not in vocabulary.stoi:
        notes.append(_("whatif={word} is not a word of the model's {target} vocabulary").format(
            word=repr(word[:40]), target=target))
    else:
        return True
    return False


def text_param(params: Mapping, key: str, what: str, notes: list) -> str | None:
    """A sentence from the link (s, s2, ref), or None (with a note) when it is longer than the box takes."""
    raw = params.get(key)
    if raw is not None and len(raw) > MAX_SENTENCE:
        notes.append(_("{what} has {n:,} characters, more than the {max:,} the box takes").format(
            what=what, n=len(raw), max=MAX_SENTENCE))
        return None
    return raw


NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits, few of them: str.isdigit takes "²", int() takes "١" and refuses
                                    # more than 4,300 digits


def whole_number(raw: str, low: int, high: int) -> int | None:
    """The one reader of a number from a link: ASCII digits (at most 9) in [low, high], or None."""
    raw = raw.strip()
    return int(raw) if NUMBER.fullmatch(raw) and low <= int(raw) <= high else None


def int_param(params: Mapping, key: str, low: int, high: int, notes: list) -> int | None:
    """A whole number in [low, high] from the link, or None (with a note) when it is missing or does not fit."""
    raw = params.get(key)
    if raw is None:
        return None
    number = whole_number(raw, low, high)
    if number is None:
        notes.append(_("{key}={value} is not a number from {low} to {high}").format(key=key, value=repr(raw[:40]),
                                                                                  low=low, high=high))
    return number


def choice_param(params: Mapping, key: str, options, notes: list) -> str | None:
    """A value from the link that must be one of `options`, or None (with a note) when it is not; None when missing."""
    raw = params.get(key)
    if raw is None or raw in options:
        return raw
    notes.append(_("{key}={value} is not one of {options}").format(key=key, value=repr(raw[:40]),
                                                                   options=", ".join(options)))
    return None


MEAN = "mean"  # the head pickers' choice of the mean of a layer's heads, on the page and in the link


def head_param(params: Mapping, cfg, notes: list) -> int | str | None:
    """head= from the link: MEAN, or a head counted from 1 given back from 0; None (with a note) when it does not
    fit this model, or is missing."""
    if params.get("head") == MEAN:
        return MEAN
    head = int_param(params, "head", 1, cfg.n_heads, notes)
    return None if head is None else head - 1


def head_link(head) -> str:
    """A picked head as the link writes it: "mean", or counted from 1."""
    return MEAN if head in (None, MEAN) else str(head + 1)


def heads_param(params: Mapping, cfg, notes: list) -> HeadSet | None:
    """off=: heads from the link, counted from 1 (cross.3 is the whole layer); None (with a note) when it names
    no head of this model, or is missing."""
    if not params.get("off"):
        return None
    try:
        return HeadSet.parse(params["off"], cfg, base=1)
    except InputError:
        notes.append(_("off={value} names no head of this model (e.g. cross.3 or enc.1.4)").format(
            value=repr(params["off"][:60])))
        return None


# --- the link: read once per browser session, judged once the translation is there, written every run ------------

COUNT_RUNS = "EXPLORER_COUNT_RUNS"  # set (tests, benches): each view run shows the number of view runs so far


def read_model(available: dict) -> list[str]:
    """The `model` parameter, read before the model is loaded (it decides which one); a note if it names none."""
    slug = st.query_params.get("model")
    if slug is None or slug in available:
        if slug:
            st.session_state.model = slug
        return []
    return [_("{key}={value} is not one of {options}").format(key="model", value=repr(slug[:40]),
                                                              options=", ".join(available))]


LANG = "lang"  # the page's language (model/i18n.py): the link's lang=, else the browser's, else English


def read_language() -> list[str]:
    """The page's language, read first (every string after it is in that language): the link's lang= where it names
    one of the page's languages, else the browser's preferred one (st.context.locale) where the page has it."""
    raw = st.query_params.get(LANG)
    notes = [] if raw is None or raw in LANGUAGES else [f"lang={raw[:40]!r} is not one of {', '.join(LANGUAGES)}"]
    st.session_state[LANG] = raw if raw in LANGUAGES else best_match(st.context.locale)
    return notes


def speak():
    """Speak this session's language for the rest of this run (app.py's run, and each fragment's own run)."""
    use(st.session_state.get(LANG) or SOURCE)  # None: a first run whose link could not be read


def relabel():
    """After a change of language: every widget that shows its options by a label (a select box, a segmented
    control, a radio group) is given its value again, so that the page sends the value's label in the new language.
    Otherwise the browser keeps the old language's label and sends it back with the next click, where it names no
    option (taken for a new value: the example picker failed, a view could be lost)."""
    state = get_script_run_ctx().session_state._state  # the widgets' registry: which key holds labelled options
    for key in list(st.session_state.keys()):
        widget = state.get_widget_id_from_key(key)
        meta = widget and state.get_widget_metadata(widget)
        if meta and meta.formatted_options is not None:
            st.session_state[key] = st.session_state[key]


FLAGS = {"guess": "guess first: a question before each picture (views/guess.py)",
         "present": "the presenter layout: one compact row for the frame, larger type (app.py)"}


def read_flags() -> list[str]:
    """The page-wide switches (guess=1, present=1), read with the model, before the frame is drawn: present decides
    its layout. A note for a value other than 0 or 1."""
    notes = []
    for flag in FLAGS:
        raw = st.query_params.get(flag)
        if raw in ("0", "1"):
            st.session_state[flag] = raw == "1"
        elif raw is not None:
            notes.append(_("{key}={value} is not 0 or 1").format(key=flag, value=repr(raw[:40])))
    read_answers(st.query_params.get("answered"), notes)  # guess first's answers, kept across a reload
    read_class(st.query_params, notes)  # a class's code, and this browser's seat or the teacher's key
    return notes


ANSWERS = "guess_answers"  # guess first's answers (views/guess.py): question key -> the option's index
MAX_ANSWERS = 64  # answers the link keeps (11 walk stops, a few per attention view and the trace)
ANSWER_ITEM = re.compile(r"[0-9a-f]{8}\.[0-9]{1,2}")


def read_answers(raw: str | None, notes: list):
    """answered= from the link: KEY.INDEX items, comma-separated (at most MAX_ANSWERS); a note for a bad item."""
    if raw is None:
        return
    found = {}
    for item in raw[:MAX_ANSWERS * 12].split(",")[:MAX_ANSWERS]:  # 12: an item and its comma, so a long link is cut
        if ANSWER_ITEM.fullmatch(item):
            key, index = item.split(".")
            found[key] = int(index)
        elif item:
            notes.append(_("answered item {item} is not a question's key and an option's number").format(
                item=repr(item[:40])))
    st.session_state[ANSWERS] = found


def answers_param() -> dict:
    """The answers given, for the link (only while guessing is on and something was answered)."""
    answers = st.session_state.get(ANSWERS, {})
    if not (st.session_state.get("guess") and answers):
        return {}
    return {"answered": ",".join(f"{k}.{i}" for k, i in sorted(answers.items())[:MAX_ANSWERS])}


CODE, SEAT, KEY = "class_code", "class_seat", "class_key"  # a class's (views/classroom.py): the link's class, seat, key
TOKEN = re.compile(r"[A-Za-z0-9_-]{8,40}")  # a seat's token or a teacher's key (lesson/classroom.py makes them)


def read_class(params, notes: list):
    """class=, seat= and key= from the link, once per browser session; a note for a malformed one."""
    raw = params.get("class")
    if raw is None:
        return
    code = raw.strip().upper()
    if len(code) != CODE_LENGTH or not set(code) <= set(CODE_LETTERS):
        notes.append(_("class={value} is not a class code ({n} letters and digits)").format(value=repr(raw[:20]),
                                                                                            n=CODE_LENGTH))
        return
    st.session_state[CODE] = code
    for name, key in (("seat", SEAT), ("key", KEY)):
        value = params.get(name)
        if value is not None and TOKEN.fullmatch(value):
            st.session_state[key] = value
        elif value is not None:
            notes.append((_("seat= is not a seat of a class") if name == "seat" else
                          _("key= is not a key of a class")))


def class_params() -> dict:
    """The class's part of the link: the code, and the seat or the teacher's key this browser holds."""
    s = st.session_state
    if not s.get(CODE):
        return {}
    return {"class": s[CODE], **({"seat": s[SEAT]} if s.get(SEAT) else {}), **({"key": s[KEY]} if s.get(KEY) else {})}


def read_url(cfg, views: dict[str, View]) -> list[str]:
    """Set the widgets' state from the URL, once per browser session; returns a note per dropped parameter.

    views: the view switch's registry (slug -> View); the view the link names reads its own parameters.

    A page that lost its server (a replica killed behind the proxy) reconnects to a new session and asks for a run at
    once (rerun_on_reconnect): the new session's first run, sent with every widget's value as the page holds it and
    with the link as it was before. The link holds the rest (every run writes it, views/explorer.js adds the picks
    made in the browser), but not what was just typed: the text boxes' values the browser sent win. They are not
    written again where nothing overrode them: a value written by the page replaces what the box shows, and a
    sentence typed but not yet sent (its Enter pressed while the socket was down) stays in the box for the next Enter.
    """
    params, notes = st.query_params, []
    ctx = get_script_run_ctx()
    sent = {key: w.string_value for w in (ctx.session_state.get_widget_states() if ctx else [])  # none: a page opened
            if (key := user_key_from_element_id(w.id)) in ("sentence", "s2", "reference")
            and w.HasField("string_value")}
    sentence = text_param(params, "s", _("the sentence"), notes)
    if sentence is not None and "sentence" not in sent:
        st.session_state.sentence = sentence
    slug = params.get("view")
    if slug is not None and slug not in views:
        notes.append(_("{key}={value} is not one of {options}").format(key="view", value=repr(slug[:40]),
                                                                       options=", ".join(views)))
    view = views.get(slug)
    if view:
        st.session_state.view = view.slug
        view.read(params, cfg, notes)
    for key, value in sent.items():  # the boxes' keys (widgets.text_box): what the browser sent stays, bounded
        if len(value) > MAX_SENTENCE or st.session_state.get(key) not in (None, value):  # None: the link set none
            st.session_state[key] = value[:MAX_SENTENCE]
    return notes


RECONNECT_S = 3600  # the reconnect fragment's own period: it has nothing to do but to be there


def rerun_on_reconnect():
    """Make the page ask for a whole run whenever its socket comes back.

    Streamlit's page asks for a run after a reconnect only while a run, or a fragment's timer, is pending. A sentence
    whose Enter went into a dying socket (a replica killed that moment) was lost with it, and the page, idle when its
    socket came back, kept the old translation and the old link under the new sentence in the box. A fragment with a
    timer of its own (empty, hidden, rerun once an hour at most) makes every reconnect ask for a run: the new
    session's first run then reads the link and the boxes' values as the page shows them (read_url)."""
    with st.container(key="reconnect"):  # hidden by views/widgets.py CSS
        _reconnect_timer()


@st.fragment(run_every=RECONNECT_S)
def _reconnect_timer():
    pass


def judge_url(result, views: dict[str, View]) -> list[str]:
    """What only the translation can judge in the link (a forced word must be a candidate of its step), checked
    once, right after read_url's first translation; returns a note per dropped parameter."""
    notes = []
    view = views.get(st.session_state.get("view"))  # on the first run, only the link has set it
    if view:
        view.judge(result, notes)
    return notes


def state_params(cfg, view: View | None) -> dict:
    """What decides the current picture, as URL parameters: the sentence, the model, the view and its own."""
    s = st.session_state
    sentence = s.get("sentence", "")
    params = {"s": sentence} if sentence else {}
    if s.get("model", "learned") != next(iter(models())):  # the default model is not written: links stay short
        params["model"] = s.model
    if s.get(LANG, SOURCE) != SOURCE:  # English, the page's own, is not written
        params[LANG] = s[LANG]
    params.update({flag: "1" for flag in FLAGS if s.get(flag)})  # off is not written either
    params.update(answers_param())
    params.update(class_params())
    if view:
        params["view"] = view.slug
        params.update(view.write(cfg))
    return params


def write_url(cfg, view: View | None):
    """Put the current state into the address bar (only when it changed: each write is a browser message)."""
    params = state_params(cfg, view)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def page_view(view):
    """Decorate a view: every run of it, a fragment's own reruns too, leaves its state in the URL, and an
    error inside it is logged with its traceback and shown as the page's own message, never a traceback."""
    @functools.wraps(view)
    def run(ctx, *args):
        speak()  # a fragment's own run starts here, not in app.py
        try:
            return view(ctx, *args)
        except InputError as e:  # the library's own plain words: what this model or sentence cannot give
            st.info(str(e))
        except Exception as e:  # st.stop and st.rerun are BaseExceptions: they pass
            log.exception("view %s failed for %r", view.__name__, ctx.result.source)
            st.error(_("This view could not be drawn ({error}). Try another sentence or view.").format(
                error=type(e).__name__))
        finally:
            write_url(ctx.cfg, ctx.view)
            if os.environ.get(COUNT_RUNS):  # tests: how often views ran (a pick drawn in the browser runs none)
                st.session_state.view_runs = st.session_state.get("view_runs", 0) + 1
                st.html(f"<span class='view-runs' hidden>{st.session_state.view_runs}</span>")
    return run
