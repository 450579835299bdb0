"""Inside a Transformer translator: every head of every layer, and decoding step by step.

    streamlit run app.py

This file is the frame: page setup, the model, the sentence box, the translation and the
view switch. The views live in views/, one module per view or family of views; each is
given a `Context` and runs the model only through cached calls, so switching view, layer,
head or step never translates again.
"""

import json
import logging
from contextlib import nullcontext
from pathlib import Path

import plotly.io as pio
import streamlit as st
import torch

from model.errors import CheckpointError, InputError
from model.i18n import LANGUAGES, SOURCE, _, kept
from model.languages import OURS, language_names
from model.translator import MAX_OUTPUT
from views import Context, classroom, guess
from views.calls import load_translator, model_name, models, origin, translate
from views.familiarity import familiarity_note
from views.registry import DEFAULT_VIEW, FAMILIES, FAMILY_OF, VIEWS
from views.state import (CODE as CLASS, LANG, MODEL_CHOICE, judge_url, read_flags, read_language, read_model, read_url,
                         relabel, rerun_on_reconnect, speak, write_url)
from views.widgets import CSS, PRESENT_CSS, focus, literal, text_box, token_chips

ROOT = Path(__file__).resolve().parent
# Streamlit serialises each figure with plotly.io.to_json. Its orjson engine first walks every list in
# Python; the standard json engine encodes the same JSON in C, 4x faster for the model view, and a page
# run is mostly figures (bench/load_test.py).
pio.json.config.default_engine = "json"
# One CPU thread per model call. Sessions run in threads of this one process; with torch's default (a
# thread per core) 20 sessions at once wait on each other's thread pools: the median Enter -> translation
# went from 3.7 s to 12.7 s on 2 cores (bench/load_test.py). Sessions that translate at the same moment
# share one batch instead (model/batching.py).
torch.set_num_threads(1)
log = logging.getLogger("explorer")


@st.cache_data(show_spinner=False)
def examples() -> list[dict]:
    return json.loads((ROOT / "assets/examples.json").read_text(encoding="utf-8"))["examples"]


def example_picked():
    """An example brings its sentence and its Multi30k reference."""
    choice = st.session_state.example
    if choice:
        st.session_state.sentence = choice
        st.session_state.reference = next(e["en"] for e in examples() if e["de"] == choice)
        st.session_state.what_if = MODEL_CHOICE


def sentence_typed():
    """A new sentence drops what belonged to the old one: its reference, its what-if choice, its example."""
    st.session_state.reference = ""
    st.session_state.what_if = MODEL_CHOICE
    if st.session_state.get("example") != st.session_state.sentence:
        st.session_state.example = ""  # so that picking the same example again works


def view_picked():
    st.session_state.view_picked = True  # the run this pick starts moves the keyboard focus into the view


def family_picked():
    """A family picked opens its first view."""
    st.session_state.view = next(f for f in FAMILIES if f.name == st.session_state.family).views[0]
    view_picked()


# The view switch is a radio group: its arrow keys move the focus to the next view, and Enter picks that one. Right
# after a pick, a view whose ← → keys step (the walk, the decoding trace) was left instead of stepped. So a pick
# moves the focus into the view just picked (views/widgets.py focus); Tab back to the switch and its keys are the
# radio group's again.


def language_switch(where):
    """The page's language, each named in itself; the model's output, tokens and formulas stay as they are."""
    where.segmented_control(
        "🌐", list(LANGUAGES), key=LANG, required=True, format_func=LANGUAGES.get, label_visibility="collapsed",
        on_change=relabel, help=_("The page's language (lang= in the link). Model output, tokens and formulas stay "
                                  "as the model writes them."))


def safely(read, *args) -> list[str]:
    """A reading of the link, its notes; a link that still breaks it (a case no reader foresaw) is one note and one
    log line, and the page goes on with its defaults."""
    try:
        return read(*args)
    except Exception as e:
        log.warning("link not read (%s: %.200s): %.300s", type(e).__name__, e, dict(st.query_params))
        return [_("the link could not be read")]


def say_unused(box, notes: list[str]):
    """The link's parameters the page could not use, named in one warning (in `box`: the list can grow)."""
    if notes:  # the link's own words shown as typed: a note never renders a link, an image or math from the link
        box.warning(literal(_("Parts of this link were not used (the page shows its defaults instead): {notes}.")
                            .format(notes="; ".join(notes))))


available = models()  # slug -> checkpoint; $TRANSFORMER_CHECKPOINT leaves only that one
# The link's state is read in a browser session's first run, and again in its second where the first was cut short
# before read_url (the visitor typed while a reconnected page was being drawn: a new run stops the old one); never in a
# third, so a link that breaks the page breaks at most two runs, never every run after. Each reader is `safely`.
tries = st.session_state.get("link_tries", 0)
first_run = "url_notes" not in st.session_state and tries < 2
if first_run:
    st.session_state.link_tries = tries + 1
notes = safely(read_language) if first_run else []  # first: every string from here on is in the page's language
# kept when a run stops before the switch (a widget's key is not); English where the link's reading failed
st.session_state[LANG] = st.session_state.get(LANG) or SOURCE
speak()
st.set_page_config(page_title=_("Inside a Transformer translator"), page_icon="🔎", layout="wide",
                   initial_sidebar_state="collapsed")
st.markdown(CSS, unsafe_allow_html=True)
rerun_on_reconnect()  # before anything can stop the run: every page has its timer
notes += safely(read_model, available) + safely(read_flags) if first_run else []
# The presenter layout (?present=1, for a projector at 1366 x 768): no title, the model, the sentence and the view
# in one row, the translation's details folded, larger type; the walk's stop and its picture start on the screen.
present = bool(st.session_state.get("present"))
if present:
    st.markdown(PRESENT_CSS, unsafe_allow_html=True)
    frame = st.columns([2, 5, 3], vertical_alignment="bottom")
else:
    header = st.container(horizontal=True, vertical_alignment="center")
    header.title(_("Inside a Transformer translator"), width="content")
    frame = []  # the usual layout: the frame's parts one under another
if not present:  # on a projector it waits with the other switches, folded (a class has picked its language)
    language_switch(header)
if st.session_state.get("model") not in available:
    st.session_state.model = next(iter(available))
if len(available) > 1:
    model_help = (_("The same architecture and recipe, trained twice: with learned position vectors (the default) "
                    "or with the paper's fixed sinusoids. See “Positional encodings”, and compare the two in any "
                    "attention view.") if "learned" in available else
                  _("The checkpoints in the folder $TRANSFORMER_CHECKPOINT names, each by its folder and the "
                    "tutorial it comes from (`python -m model.convert` makes them)."))
    if present or len(available) > 3:
        (frame[0] if present else st).selectbox(_("Model"), list(available), key="model", format_func=kept(model_name),
                                                help=model_help)
    else:
        st.segmented_control(_("Model"), list(available), key="model", required=True, format_func=kept(model_name),
                             help=model_help)
checkpoint = available[st.session_state.model]  # None: the shipped checkpoints/
try:
    translator = load_translator(checkpoint)
except CheckpointError as e:
    log.error("checkpoint: %s", e)
    st.error(_("**The model could not be loaded.**") + " " + literal(str(e)))
    st.stop()
except InputError as e:  # $TRANSFORMER_DEVICE names no device we can run on
    log.error("device: %s", e)
    st.error(_("**The model could not be started.**") + " " + literal(f"{e}."))
    st.stop()
cfg = translator.cfg
codes = translator.origin["languages"]
source, target = language_names(codes)
multi30k = translator.origin["family"] != "marian"  # a Marian model was trained by its makers on their own corpus
details = st.expander(_("The translation's details, the model and the colours")) if present else st
size = dict(enc=cfg.n_enc_layers, dec=cfg.n_dec_layers, heads=cfg.n_heads)
details.caption((_("{source} → {target} with a small “Attention Is All You Need” Transformer ({enc}+{dec} layers, "
                   "{heads} heads) trained on Multi30k: {origin}.") if multi30k else
                 _("{source} → {target} with a Marian Transformer ({enc}+{dec} layers, {heads} heads) trained by its "
                   "makers on a corpus not shipped here: {origin}.")).format(source=source, target=target,
                                                                              origin=origin(checkpoint), **size)
                + " " + _("Type a sentence and press Enter; the walk through the model opens first (**Start here**), "
                          "and every other view is one row below it."))

with details.expander(_("About this model and the colours")):  # on the page, not in a sidebar: narrow screens keep room
    positions = {"halves": _("sinusoidal (Marian's: sines, then cosines)"), "learned": _("learned"),
                 "sinusoidal": _("sinusoidal")}.get(cfg.positions, cfg.positions)
    st.markdown(_("**Model**: {enc} encoder + {dec} decoder layers, {heads} heads, d_model {d}, {params:,} "
                  "parameters, {positions} positions ({max}). **Device**: {device}.").format(
        d=cfg.d_model, params=translator.model.n_params(), positions=positions, max=cfg.max_positions,
        device=translator.device_name, **size))
    st.markdown(_("**Colours**: attention weights 0 (dark) to 1 (yellow) on one fixed scale unless stretched; grey = "
                  "masked future position; dashed orange = a word the model does not know (`<unk>`)."))

if first_run:
    st.session_state.url_notes = notes + safely(read_url, cfg, VIEWS)
link_note = st.empty()  # the link's notes; the translation below may add one (a forced word it does not offer)
unused, st.session_state.url_notes = st.session_state.get("url_notes", []), []  # said once; the next run clears it
say_unused(link_note, unused)
classroom.panel()  # a class's question, or the teacher's projector panel (only with ?class= in the link)

ex = examples()
c1, c2 = (frame[1], details) if present else st.columns([3, 2])
german = codes[0] == OURS[0]  # the examples are German sentences: offered to a model that reads German only
if german:
    c2.selectbox(_("…or pick an example from the Multi30k test set"), [""] + [e["de"] for e in ex], key="example",
                 on_change=example_picked, format_func=kept(lambda s: s or _("choose an example")))
text_box(c1, _("{source} sentence (press Enter to translate)").format(source=source), "sentence", _("The sentence"),
         on_change=sentence_typed, placeholder="Ein Hund rennt durch den Schnee." if german else None)
sentence = st.session_state.get("sentence", "")

if not sentence.strip():
    write_url(cfg, VIEWS.get(st.session_state.get("view")))
    st.info(_("Type a German sentence above and press Enter, or pick an example. Try: {example}").format(
        example="*Zwei Männer spielen Fußball auf einer Wiese.*") if german else
        _("Type a {source} sentence above and press Enter.").format(source=source))
    st.stop()

try:
    result = translate(checkpoint, sentence)  # greedy, no intervention
except InputError as e:
    st.warning(literal(f"{e}."))
    st.stop()
except Exception as e:  # the page never shows a traceback; the server log keeps it
    log.exception("translating %r failed", sentence)
    st.error(_("Translating this sentence failed ({error}). Try another sentence.").format(error=type(e).__name__))
    st.stop()

if first_run:
    say_unused(link_note, unused + safely(judge_url, result, VIEWS))
if result.truncated:
    st.warning(_("The sentence is too long for the model's {max} positions: the last {cut} tokens were cut, and the "
                 "rest was translated.").format(max=cfg.max_positions, cut=result.truncated))
translation = st.container(key="translation_box").empty()  # filled after the view: guess first may hide it
if len(result.steps) == len(result.output_tokens) and result.steps:  # the last step wrote a word, not <eos>
    st.warning(_("The translation was stopped at the model's limit of {max} output tokens before the model ended "
                 "it: what is shown is cut.").format(max=MAX_OUTPUT))
familiarity_note(checkpoint, sentence)  # never folded: a sentence the model cannot handle is said so on a projector too
with details if present else nullcontext():  # folded in the presenter layout
    reference = next((e["en"] for e in ex if e["de"] == sentence), None) if tuple(codes) == OURS else None
    if reference:
        st.caption(_("Multi30k reference: {reference}").format(reference=literal(reference)))
    st.markdown(_("Source tokens:") + " " + token_chips(result.src_tokens, result.src_unknown), unsafe_allow_html=True)
    output_tokens = st.empty()  # as the translation
    if any(result.src_unknown):
        st.caption(_("{n} source word(s) are unknown to the model (dashed): it reads each as `<unk>` and still "
                     "translates the sentence.").format(n=sum(result.src_unknown)))
    if multi30k and sum(any(c.isalnum() for c in t) for t in result.src_tokens[cfg.source_start:-1]) <= 2:
        st.caption(_("The model learned from Multi30k, which holds only whole image descriptions: given one or two "
                     "words it tends to invent a scene around them. Full sentences show it at its best."))

st.session_state.setdefault("view", DEFAULT_VIEW)
if present:  # a list, not a wall of buttons: the stop and its picture keep the screen
    view = frame[2].selectbox(_("View"), list(VIEWS), key="view", on_change=view_picked,
                              format_func=kept(lambda slug: f"{_(FAMILY_OF[slug].name)}: {_(VIEWS[slug].label)}"))
else:  # two rows: the families, then the views of the one picked (slugs, as the link names them)
    family = FAMILY_OF[st.session_state.view]
    st.session_state.family = family.name  # the view decides the family: a link or the walk may have moved it
    st.segmented_control(_("Sections"), [f.name for f in FAMILIES], key="family", required=True,
                         on_change=family_picked, format_func=kept(_),
                         help=_("New here? Start here: the walk takes you through the model one stop at a time."))
    st.caption(_(family.line))
    view = st.segmented_control(_("View"), family.views, key="view", required=True, on_change=view_picked,
                                format_func=kept(lambda slug: _(VIEWS[slug].label)), label_visibility="collapsed")
switches = details.container(horizontal=True) if present else st.container(horizontal=True)
switches.toggle(_("Guess first"), key="guess", help=_(
    "Before a picture is shown, one question about it, answered with a click; then the picture with your answer "
    "marked. On the walk, the three attention views, Inside a head and the decoding trace.")
    + ("" if VIEWS[view].asks else " " + _("(This view asks nothing.)")))
switches.toggle(_("Presenter layout"), key="present", help=_("For a projector: the frame in one row, larger type, the "
                                                             "translation's details folded."))
if present:
    language_switch(switches)
if not present:
    st.caption(_("Link: the address bar holds this page's state (sentence, view, layer, head, step, …): copy it to "
                 "share exactly what you see."))
st.session_state.pop(guess.OPEN, None)
with st.container(key="view_box"):
    VIEWS[view].draw(Context(checkpoint, translator, result, VIEWS[view]))  # a failing view says so (state.page_view)
    if st.session_state.pop("view_picked", False):
        focus(data={"key": "view_box", "for": view})  # last in the box, where its empty element moves nothing
if st.session_state.get("shown_sentence") != sentence and not st.session_state.get(CLASS):  # a new translation: on
    st.session_state.shown_sentence = sentence  # a phone, to the screen's top (in a class its panel keeps the top)
    with st.container(key="translation_focus"):
        focus(data={"key": "translation_box", "for": sentence, "phone": True})
if guess.open_now():  # what the question asks would be read off the translation: it waits for the answer too
    translation.markdown(_("**Translation**: hidden until you answer the question below (Guess first)."))
    output_tokens.markdown(_("Output tokens: hidden until you answer."))
else:
    shown = literal(result.text) or _("(empty)")
    translation.markdown(_("**Translation**") + f"<div class='translation'>{shown}</div>", unsafe_allow_html=True)
    output_tokens.markdown(_("Output tokens:") + " " + token_chips([s.token for s in result.steps]),
                           unsafe_allow_html=True)
