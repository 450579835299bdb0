"""A class, live (lesson/classroom.py): the panel at the top of the page for a link with ?class=CODE.

A student's link (?class=CODE&s=...): a nickname to join, then the question the teacher has opened, answered with a
click; once the teacher reveals, the class's counts and the model's answer. The seat (?seat=TOKEN) goes into the link,
so a reload or a reconnect keeps the student's place and answers. The teacher's link (?class=CODE&key=KEY, best in
the presenter layout on the projector): the questions to open, the class's answers as a live bar chart with how many
have answered and who, "Reveal" (the model's answer marked, with the numbers that decide it), "Vote again" (a second
round beside the first), the share right at first try, the results as CSV, and "End class". Both panels redraw on their
own (a fragment: the projector every PROJECTOR_S seconds, a student's every STUDENT_S), never the whole page.
"""

import csv
import io
from urllib.parse import urlencode

import streamlit as st

import viz
from lesson.classroom import ClassError, asked_of, store
from lesson.exercises import in_language, lesson_params
from model.i18n import _

from . import guess
from .state import CODE, KEY, SEAT, speak
from .widgets import chart, literal, server

# The panels' redraws: the projector's often, so that a vote shows there within 2 s of its click; a student's less
# often (a new question within 2 s is soon enough), as 40 of them share the server's 2 cores
PROJECTOR_S, STUDENT_S = 1.0, 2.0


def start(ctx, sentence: str, model: str | None, exercises, here: str):
    """The teacher's button (views/exercises.py): a class for this sentence, the walk's questions (if picked) and
    these exercises, and its two links."""
    walk = st.checkbox(_("The walk's questions too (one per stop, asked before its picture)"), value=True,
                       key="class_walk")
    asked = asked_of(exercises, guess.stop_questions(ctx) if walk else ())
    if not asked:
        st.info(_("A class votes on questions with choices: pick the walk's or an exercise with choices (typed "
                  "numbers are left out)."))
        return
    if st.button(_("Start a class with these {n} questions").format(n=len(asked)), key="class_start"):
        try:
            code, key = store().start(sentence, model or "", asked)
        except ClassError as e:
            st.warning(literal(str(e)))
            return
        st.session_state.class_started = (code, key, sentence, model)
    started = st.session_state.get("class_started")
    if started and started[2] == sentence:
        code, key, _sentence, model = started
        lesson = lesson_params(sentence, model)
        student = f"{here}/?" + urlencode({**lesson, "class": code})
        teacher = f"{here}/?" + urlencode(in_language({"s": sentence, **({"model": model} if model else {}),
                                                       "view": "exercises", "present": "1", "class": code,
                                                       "key": key}))
        st.markdown(_("**Class {code}** started. Students open this link and pick a nickname:").format(code=code))
        st.code(student, language=None)
        st.markdown(_("**Your link** (keep it to yourself: it runs the class; open it on the projector):"))
        st.code(teacher, language=None)
        st.markdown(_("[Open the teacher's panel]({link})").format(link=teacher))


def panel():
    """The class panel of this browser's link: the teacher's or a student's (nothing without ?class=)."""
    code = st.session_state.get(CODE)
    if not code:
        return
    db = store()
    try:
        sentence = db.state(code).sentence  # a wrong or old code says so here, in one line
    except ClassError as e:
        st.warning(literal(str(e)))
        return
    teacher = db.teacher(code, st.session_state.get(KEY, ""))
    with st.container(border=True, key="class_panel"):
        if not st.session_state.get("sentence"):  # the short link (?class=CODE): the class's sentence
            st.session_state.sentence = sentence
        if teacher:
            projector(code, st.session_state[KEY], server())
        elif st.session_state.get(KEY):
            st.warning(_("This link's teacher key is not this class's: you take part as a student."))
            student(code)
        else:
            student(code)


def joined(code: str):
    speak()  # a callback runs before the page's run has set its language
    name = st.session_state.get("class_nickname", "")
    try:
        st.session_state[SEAT] = store().join(code, name)
        # into the link now: the join runs in the panel's fragment, whose runs do not rewrite the link (state.write_url
        # runs with the page), and a reload before the next whole run would lose the seat
        st.query_params["seat"] = st.session_state[SEAT]
        st.session_state.class_note = None
    except ClassError as e:
        st.session_state.class_note = str(e)


@st.fragment(run_every=STUDENT_S)
def student(code: str):
    speak()  # the fragment's own runs start here
    db = store()
    seat = st.session_state.get(SEAT)
    try:
        state = db.state(code)
        name = db.nickname(code, seat) if seat else None
    except ClassError as e:
        st.warning(literal(str(e)))
        return
    if name is None:  # not joined yet (or a seat of another class)
        st.session_state.pop(SEAT, None)
        st.markdown(_("**Class {code}**: join with a nickname (any name you like; no account, no e-mail).").format(
            code=code))
        with st.form("class_join", border=False):
            st.text_input(_("Nickname"), key="class_nickname", max_chars=40)
            st.form_submit_button(_("Join"), on_click=joined, args=(code,))
        if st.session_state.get("class_note"):
            st.warning(literal(st.session_state.class_note))
        return
    q = state.asked()
    if q is None:
        st.markdown(_("**Class {code}** · you are {name} · waiting for the teacher's first question.").format(
            code=code, name=literal(name)))
        return
    if st.session_state.get("class_seen") != (q.number, state.round):  # a new question: an old note is not its
        st.session_state.class_seen, st.session_state.class_note = (q.number, state.round), None
    st.markdown(_("**Class {code}**").format(code=code) + f" · {literal(name)} · " + asked_line(state, q))
    mine = db.my_vote(code, seat)
    if state.revealed:
        counts(state, q)
        said = (_("Your answer: “{answer}”.").format(answer=q.options[mine]) if mine is not None else
                _("You did not answer this round."))
        told = literal(said + " " + _("The model's answer: “{answer}”.").format(answer=q.options[q.answer]) + " "
                       + q.why)
        if mine == q.answer:
            st.success(told)
        else:
            st.info(told)
        return
    row = st.container(horizontal=True)
    for i, option in enumerate(q.options):
        row.button(literal(option), key=f"class_vote_{q.number}_{state.round}_{i}", on_click=vote,
                   args=(code, seat, q.number, i), type="primary" if mine == i else "secondary")
    if st.session_state.get("class_note"):
        st.warning(literal(st.session_state.class_note))
    elif mine is not None:
        st.caption(literal(_("Your answer is in: “{answer}”. You can change it until the teacher shows the answer.")
                           .format(answer=q.options[mine])))
    else:
        st.caption(_("Pick one. The class's answers show once the teacher reveals them."))


def asked_line(state, q) -> str:
    """The open question as a panel shows it: its title (and the round), then its text."""
    title = (_("{title}, second round") if state.round == 2 else "{title}").format(title=f"**{literal(q.title)}**")
    return f"{title}: {literal(q.text)}"


def vote(code: str, seat: str, number: int, choice: int):
    speak()  # a callback runs before the page's run has set its language
    try:
        store().vote(code, seat, number, choice)  # returns once committed
        st.session_state.class_note = None
    except ClassError as e:
        st.session_state.class_note = str(e)


def counts(state, q, answer: bool = True):
    fig = viz.class_votes(list(q.options), state.counts, q.answer if answer else None)
    chart(fig, key=f"class_chart_{q.number}", name=f"class-{state.code}-question-{q.number}")


@st.fragment(run_every=PROJECTOR_S)
def projector(code: str, key: str, here: str):
    speak()  # the fragment's own runs start here
    db = store()
    try:
        state = db.state(code)
    except ClassError as e:
        st.warning(literal(str(e)))
        return
    st.markdown(_("**Class {code}** · {seats} joined · students open **{link}** (or the link you gave them) and pick "
                  "a nickname.").format(code=code, seats=state.seats, link=f"{literal(here)}/?class={code}"))
    numbers = [q.number for q in state.questions]
    titles = {q.number: f"{q.title}: {q.text[:70]}" for q in state.questions}
    row = st.container(horizontal=True, vertical_alignment="bottom")
    pick = row.selectbox(_("Question"), numbers, format_func=titles.get, key="class_pick",
                         index=numbers.index(state.question) if state.question in numbers else 0)
    if pick != state.question:  # the open one is not asked again by a stray click: that would clear its answers
        row.button(_("Ask"), key="class_ask", on_click=act, args=(db.ask, code, key, pick),
                   help=_("Opens it for every seat. A question asked before starts over."))
    q = state.asked()
    if q is None:
        st.caption(_("Pick a question and press Ask: every seat sees it and answers with a click."))
        return
    row.button(_("Reveal"), key="class_reveal", on_click=act, args=(db.reveal, code, key), disabled=state.revealed)
    row.button(_("Vote again"), key="class_again", on_click=act, args=(db.again, code, key),
               disabled=state.round == 2 or not state.revealed)
    st.markdown(asked_line(state, q))
    answered = _("**{answered} of {seats}** answered").format(answered=state.answered, seats=state.seats)
    st.markdown(answered + (f": {literal(', '.join(db.voters(code, key)))}" if state.answered else "") + ".")
    counts(state, q, answer=state.revealed)
    if state.revealed:
        st.success(literal(_("The model's answer: “{answer}”.").format(answer=q.options[q.answer]) + " " + q.why))
    first = {n: v for n, v in db.first_try(code).items() if n != state.question or state.revealed}  # no hint early
    if first:
        titles = {q.number: q.title for q in state.questions}
        st.caption(_("Right at first try: {shares}").format(shares=", ".join(
            _("{title}: {right} of {asked} ({share:.0%})").format(title=titles[n], right=r, asked=k, share=r / k)
            for n, (r, k) in sorted(first.items()))))
    cols = st.columns(2)
    cols[0].download_button(_("Results (CSV)"), lambda: results_csv(code, key), f"class-{code}.csv",
                            mime="text/csv", on_click="ignore", key="class_csv")
    cols[1].button(_("End class"), key="class_end", on_click=act, args=(db.end, code, key),
                   help=_("Deletes the class and every answer in it."))
    if st.session_state.get("class_note"):
        st.warning(literal(st.session_state.class_note))


def act(step, *args):
    """A teacher's button: one of the store's steps (ask, reveal, again, end); a refusal becomes the panel's note."""
    speak()  # a callback runs before the page's run has set its language
    try:
        step(*args)
        st.session_state.class_note = None
    except ClassError as e:
        st.session_state.class_note = str(e)


def results_csv(code: str, key: str) -> str:
    rows = store().results(code, key)
    out = io.StringIO()
    writer = csv.DictWriter(out, ["nickname", "question", "first answer", "second answer", "right", "time"])
    writer.writeheader()
    for row in rows:  # a cell that starts with = + - @ is read as a formula by spreadsheets: quoted as text
        writer.writerow({k: f"'{v}" if isinstance(v, str) and v[:1] in "=+-@" else v for k, v in row.items()})
    return out.getvalue()
