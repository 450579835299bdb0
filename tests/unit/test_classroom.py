"""The classes' database (lesson/classroom.py) on SQLite; tests/integration/test_classroom_postgres.py runs every test
here again on a PostgreSQL server of its own."""

import json
import threading
import time

import pytest
from sqlalchemy import select, update

from lesson import classroom
from lesson.classroom import Asked, ClassError, Store

QUESTIONS = [Asked(3, "Exercise 5", "Which head?", ("L1 H1", "L2 H3", "L3 H8"), 1, "L2 H3 weighs 0.91."),
             Asked(7, "Walk, stop 10", "How sure?", ("under 0.5", "0.5 to 0.9", "over 0.9"), 2, "0.97.")]


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setattr(classroom, "VOTE_GAP", 0.0)
    return Store(f"sqlite:///{tmp_path / 'classes.sqlite'}")


def test_a_class_from_start_to_end(db):
    code, key = db.start("Ein Hund rennt.", "", QUESTIONS)
    assert len(code) == 6 and set(code) <= set(classroom.CODE_LETTERS)
    a, b, c = (db.join(code, name) for name in ("Ana", "Ben", "Cem"))
    assert db.nickname(code, b) == "Ben" and len({a, b, c}) == 3
    with pytest.raises(ClassError, match="closed"):  # nothing asked yet
        db.vote(code, a, 3, 0)
    db.ask(code, key, 3)
    assert db.vote(code, a, 3, 0) == 1 and db.vote(code, b, 3, 1) == 1 and db.vote(code, c, 3, 1) == 1
    db.vote(code, a, 3, 2)  # changed before the reveal: the later answer counts, once
    s = db.state(code)
    assert (s.question, s.round, s.revealed, s.counts, s.answered, s.seats) == (3, 1, False, {1: [0, 2, 1]}, 3, 3)
    assert s.asked().answer == 1 and db.my_vote(code, a) == 2
    db.reveal(code, key)
    with pytest.raises(ClassError, match="answer is shown"):
        db.vote(code, a, 3, 1)
    db.again(code, key)  # round 2: the first round's counts stay, to show how the answers moved
    db.vote(code, a, 3, 1)
    s = db.state(code)
    assert (s.round, s.revealed, s.counts, s.answered) == (2, False, {1: [0, 2, 1], 2: [0, 1, 0]}, 1)
    assert db.first_try(code) == {3: (2, 3)}
    rows = db.results(code, key)
    assert [(r["nickname"], r["question"], r["first answer"], r["second answer"], r["right"]) for r in rows] == [
        ("Ana", "Exercise 5", "L3 H8", "L2 H3", "yes"), ("Ben", "Exercise 5", "L2 H3", "", "yes"),
        ("Cem", "Exercise 5", "L2 H3", "", "yes")]
    db.end(code, key)
    with pytest.raises(ClassError, match="there is no class"):
        db.state(code)
    with db.engine.connect() as c:  # every row of it is gone
        assert all(c.execute(select(t)).first() is None for t in classroom.TABLES)


def test_the_teachers_key_alone_runs_the_class(db):
    code, key = db.start("Ein Hund rennt.", "", QUESTIONS)
    other, other_key = db.start("Zwei Katzen.", "", QUESTIONS)
    assert db.teacher(code, key) and not db.teacher(code, other_key) and not db.teacher(code, "")
    for act in (db.reveal, db.again, db.end):
        with pytest.raises(ClassError, match="teacher key"):
            act(code, other_key)
    with pytest.raises(ClassError, match="teacher key"):
        db.results(code, "x" + key)
    with db.engine.connect() as c:  # only the key's SHA-256 is stored
        assert key not in json.dumps([list(r) for r in c.execute(select(classroom.classes)).all()])


def test_wrong_codes_seats_and_choices_say_so_in_one_line(db):
    code, key = db.start("Ein Hund rennt.", "", QUESTIONS)
    seat = db.join(code, "  Ana  ")
    db.ask(code, key, 3)
    cases = [(lambda: db.join("ZZZZZZ", "Ana"), "there is no class 'ZZZZZZ'"),
             (lambda: db.join(code, "   "), "type a nickname"),
             (lambda: db.vote(code, "not-a-seat", 3, 0), "join again"),
             (lambda: db.vote(code, seat, 7, 0), "closed"),
             (lambda: db.vote(code, seat, 3, 3), "not one of the question's choices"),
             (lambda: db.vote(code, seat, 3, True), "not one of the question's choices"),
             (lambda: db.ask(code, key, 99), "not one of this class's")]
    for call, message in cases:
        with pytest.raises(ClassError) as e:
            call()
        assert message in str(e.value) and "\n" not in str(e.value)


def test_texts_are_cut_and_stored_as_given(db):
    code, _ = db.start("Ein Hund rennt.", "", QUESTIONS)
    seat = db.join(code, "**<b>x</b>** $x$ :smile: " + "n" * 100 + "\x00")
    assert db.nickname(code, seat) == ("**<b>x</b>** $x$ :smile: " + "n" * 100)[:classroom.MAX_NICKNAME]


def test_a_class_expires_and_its_rows_go(db):
    code, key = db.start("Ein Hund rennt.", "", QUESTIONS, hours=1)
    seat = db.join(code, "Ana")
    db.ask(code, key, 3)
    db.vote(code, seat, 3, 0)
    with db.engine.begin() as c:
        c.execute(update(classroom.classes).values(expires=time.time() - 1))
    with pytest.raises(ClassError, match="there is no class"):
        db.vote(code, seat, 3, 1)
    db.start("Neu.", "", QUESTIONS)  # any start or join deletes what expired
    with db.engine.connect() as c:
        assert c.execute(select(classroom.votes)).first() is None
        assert c.execute(select(classroom.seats)).first() is None


def test_votes_come_too_fast_from_one_seat(db, monkeypatch):
    monkeypatch.setattr(classroom, "VOTE_GAP", 60.0)
    code, key = db.start("Ein Hund rennt.", "", QUESTIONS)
    seat = db.join(code, "Ana")
    db.ask(code, key, 3)
    db.vote(code, seat, 3, 0)
    with pytest.raises(ClassError, match="one answer at a time"):
        db.vote(code, seat, 3, 1)
    assert db.state(code).counts == {1: [1, 0, 0]}


def test_forty_seats_voting_at_once_are_all_counted(db):
    code, key = db.start("Ein Hund rennt.", "", QUESTIONS)
    db.ask(code, key, 7)
    tokens = [db.join(code, f"s{i}") for i in range(40)]
    errors = []

    def vote(i, token):
        try:
            db.vote(code, token, 7, i % 3)
        except Exception as e:  # noqa: BLE001  (any failure is the test's failure)
            errors.append(e)

    threads = [threading.Thread(target=vote, args=(i, t)) for i, t in enumerate(tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and db.state(code).counts == {1: [14, 13, 13]}


def test_the_schema_is_versioned(db):
    with db.engine.connect() as c:
        assert c.execute(select(classroom.meta.c.value)).scalar() == str(classroom.SCHEMA_VERSION)
    Store(db.url)  # opening again keeps it
    with db.engine.begin() as c:
        c.execute(update(classroom.meta).values(value=str(classroom.SCHEMA_VERSION + 1)))
    with pytest.raises(RuntimeError, match="newer than this app"):
        Store(db.url)


def test_a_classs_questions_are_the_walks_then_the_exercises_with_choices():
    from types import SimpleNamespace as Q

    walk = [(0, Q(text="How many tokens?", options=("7", "9", "11"), answer="9", why="9 tokens.")),
            (9, Q(text="Next word?", options=("a", "two"), answer="two", why="p 0.8."))]
    exercises = [Q(number=4, question="Which head?", options=("L1 H1", "L2 H3"), answer="L2 H3", why="0.9."),
                 Q(number=6, question="How many?", options=(), answer="3", why="3.")]  # a typed number: left out
    asked = classroom.asked_of(exercises, walk)
    assert [(a.number, a.title, a.options[a.answer]) for a in asked] == [
        (1, "Walk, stop 1", "9"), (2, "Walk, stop 10", "two"), (3, "Exercise 4", "L2 H3")]
