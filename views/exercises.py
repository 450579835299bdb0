"""Exercises (?view=exercises): questions in the walk's order about the page's sentence, each with a link that opens
the page where the answer can be found, an answer picked or typed and checked against the app's own numbers, a hint,
and the explanation once answered. For teachers: the lesson link (the walk from stop 1, guess first) and the
worksheet with its answer key, of this sentence and the exercises picked.

Every answer comes from lesson/exercises.py, which computes it from the model on this sentence and the measurements
shipped beside the checkpoint: another sentence, the other model, or a retrained one, gets its own answers.
"""

from urllib.parse import urlencode

import streamlit as st

from lesson.exercises import check, lesson_of, lesson_params, link
from lesson.qti import qti_package
from lesson.worksheet import TITLE, answer_key_html, worksheet_html
from model.checkpoint import checkpoint_folder
from model.i18n import _, kept, language, ngettext, speaking
from model.tables import command_line

from . import Context, classroom
from .calls import DEFAULT_CHECKPOINT, HEAVY, load_translator
from .state import page_view
from .widgets import literal, server

MAX_ANSWER = 40  # characters of a typed answer (a number needs far fewer): a longer one is said, not checked
# The tables lesson/exercises.py reads its answers from (model/tables.py builds them)
TABLES = ("head_stats.json", "alignment.json", "head_importance.json", "patching.json", "source_share.json",
          "faithfulness.json")


PICK = "worksheet_pick"  # the multiselect of the exercises that go on the worksheet and its key


@st.cache_data(max_entries=16, show_spinner=False)
def sheet(checkpoint: str | None, sentence: str, lang: str):
    """The exercises of one model on one sentence in one language (lesson.exercises.Lesson), computed once per
    server (a few model calls)."""
    with HEAVY.turn(), speaking(lang):
        return lesson_of(load_translator(checkpoint), checkpoint or DEFAULT_CHECKPOINT, sentence)




def given_key(number: int) -> str:
    return f"exercise_{number}"


def forget_other_answers(about: tuple, exs):
    """Answers given for another sentence or model are not this one's: cleared when either changes."""
    if st.session_state.get("exercises_about") != about:
        for ex in exs:
            st.session_state.pop(given_key(ex.number), None)
            st.session_state.pop(f"exercise_reveal_{ex.number}", None)
        st.session_state.exercises_about = about


@page_view
def exercises_view(ctx: Context):
    missing = [name for name in TABLES if not (checkpoint_folder(ctx.checkpoint) / name).is_file()]
    with st.spinner(_("Working out the exercises' answers from the model on this sentence (once per server)…")):
        lesson = sheet(ctx.checkpoint, ctx.result.source, language())
    exs = lesson.exercises
    forget_other_answers((ctx.checkpoint, lesson.sentence, language()), exs)  # a choice is a text in one language
    answered = [ex for ex in exs if st.session_state.get(given_key(ex.number)) not in (None, "")]
    right = sum(check(ex, str(st.session_state[given_key(ex.number)])) for ex in answered)
    st.caption(_("{n} exercises in the walk's order, about this sentence. Each link opens the page where the answer "
                 "can be found (in a new tab); every answer is checked against this model's own numbers. So far: "
                 "{right} of {answered} answered right.").format(n=len(exs), right=right, answered=len(answered)))
    if missing:  # the exercises that read them are left out, each named below with the table it reads
        st.info(ngettext("Some exercises read the test set's tables beside this checkpoint, and {tables} is missing: "
                         "those exercises are left out (listed below); `{command}` writes the tables.",
                         "Some exercises read the test set's tables beside this checkpoint, and {tables} are "
                         "missing: those exercises are left out (listed below); `{command}` writes the tables.",
                         len(missing)).format(tables=", ".join(missing), command=command_line(ctx.checkpoint)))
    for sk in lesson.skipped:
        st.caption(literal(_("Exercise {n} ({title}) is left out: {reason}.").format(n=sk.number, title=sk.title,
                                                                                    reason=sk.reason)))
    with st.expander(_("For teachers: the lesson link, the worksheet and its answer key")):
        teachers(ctx, lesson)
    for ex in exs:
        exercise(ex)


def teachers(ctx: Context, lesson):
    """The lesson link, the pick of exercises, and the worksheet and its key of those, all of this sentence."""
    model = st.session_state.get("model", "learned")
    lesson_link = "?" + urlencode(lesson_params(lesson.sentence, None if model == "learned" else model))
    st.markdown(_("**The lesson link** (the walk from stop 1 with this sentence, a question before each picture): "
                  "[open the lesson]({link})").format(link=lesson_link))
    st.code(server() + "/" + lesson_link, language=None)
    exs = picked(lesson.exercises)
    if not exs:
        st.info(_("Pick at least one exercise for the worksheet."))
        return
    cols = st.columns(3)
    # made when clicked (as views/export.py's files), not on every run of the view; the address read now, in the
    # page's run (the click's call has no page to ask)
    here = server()
    cols[0].download_button(_("Worksheet (HTML)"), kept(lambda: worksheet_html(exs, here, _(TITLE))),
                            "worksheet.html", mime="text/html", on_click="ignore", key="worksheet_download")
    cols[1].download_button(_("Answer key (HTML)"),
                            kept(lambda: answer_key_html(exs, here, _(TITLE), lesson.skipped)),
                            "worksheet-answers.html", mime="text/html", on_click="ignore", key="answers_download")
    cols[2].download_button(_("QTI 2.1 (Moodle, Canvas)"), kept(lambda: qti_package(exs)), "exercises-qti.zip",
                            mime="application/zip", on_click="ignore", key="qti_download",
                            help=_("The picked exercises with this model's answers, for a learning platform's quiz "
                                   "import (Moodle: IMS QTI 2.1; Canvas: QTI .zip file)."))
    numbers = ",".join(str(ex.number) for ex in exs)
    lang = "" if language() == "en" else f" --lang {language()}"
    st.caption(_("The worksheet's links point to {here}. For another server: {command}.").format(
        here=literal(here), command=f"`python -m lesson.worksheet --out sheet.html --server URL --sentence \"…\" "
                                    f"--exercises {numbers}{lang}`"))
    st.markdown(_("**A class, live**: every seat answers the question you open, the projector shows the class's "
                  "answers, then the model's."))
    classroom.start(ctx, lesson.sentence, None if model == "learned" else model, exs, here)


def picked(exs) -> list:
    """The exercises the teacher picks for the worksheet (all at first): a pick this sentence cannot carry (kept
    from another sentence) is dropped before the widget is drawn."""
    numbers = [ex.number for ex in exs]
    titles = {ex.number: f"{ex.number} · {ex.title}" for ex in exs}
    if PICK not in st.session_state:
        st.session_state[PICK] = numbers
    else:
        st.session_state[PICK] = [n for n in st.session_state[PICK] if n in titles]
    pick = st.multiselect(_("Exercises on the worksheet and its key"), numbers, key=PICK, format_func=titles.get)
    return [ex for ex in exs if ex.number in pick]


def exercise(ex):
    key = given_key(ex.number)
    box = st.container(border=True, key=f"exercise_box_{ex.number}")
    box.markdown(_("**Exercise {n}**").format(n=ex.number) + " · " + literal(_(ex.topic)))
    if ex.reads:
        box.caption(literal(_("The same for every sentence: it reads {what}.").format(what=ex.reads)))
    box.markdown(literal(ex.question))
    box.markdown(_("[Open it on the page]({link})").format(link=link(ex)))  # this server, the exercise's model
    if ex.options:
        box.radio(_("Your answer"), ex.options, index=None, key=key, horizontal=True, format_func=literal)
    else:
        # No `max_chars` (views/widgets.py text_box says why): it shows a "1/40" counter, and drops a longer paste
        # with no word; a longer answer is said below instead.
        box.text_input(_("Your answer (a number; press Enter)"), key=key)
    choice = st.session_state.get(key)
    if choice in (None, ""):
        box.expander(_("Hint")).markdown(literal(ex.hint))
        return
    if len(str(choice)) > MAX_ANSWER:
        box.warning(_("Your answer has {n:,} characters, more than the {max} an answer takes (a number): it was not "
                      "checked. Type a shorter one.").format(n=len(str(choice)), max=MAX_ANSWER))
        return
    if check(ex, str(choice)):
        box.success(literal(_("Right.") + " " + ex.why))
    else:
        box.error(literal(_("Not quite. Hint: {hint}").format(hint=ex.hint)))
        if box.toggle(_("Show the answer"), key=f"exercise_reveal_{ex.number}"):
            box.info(literal(_("The answer: {answer}. {why}").format(answer=ex.answer, why=ex.why)))
