"""A class, live: the teacher starts one for a sentence and a set of exercises, every seat votes on the open question,
the projector shows the class's answers, then the model's (peer instruction: Mazur, Peer Instruction, 1997; Crouch and
Mazur, Am. J. Phys. 2001).

The answers live in a real database through SQLAlchemy 2 (Core, no ORM: five small tables), the one library that
speaks both engines the school may have: SQLite by default, a file classes.sqlite in $TRANSFORMER_CLASSES_DIR
(default: classes/ beside the app, created on first use; WAL, so the replicas of deploy/serve.sh on one machine
share it), or PostgreSQL when $TRANSFORMER_CLASSES_URL gives a database URL (postgresql+psycopg://...). Every write is
one transaction, and a vote is acknowledged only after its commit: a reload, a reconnect or another replica finds it.

Who may do what: the class code (6 characters, no look-alikes) lets a student join with a nickname; the seat token
(in the student's link) lets that seat vote; the teacher's key (in the teacher's link only, stored as its SHA-256)
opens a question, reveals it, opens a second round and ends the class. A class expires after CLASS_HOURS; its rows
are deleted then (on the next start or join) or when the teacher ends it.
"""

import hashlib
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import (Boolean, Column, Float, Integer, MetaData, String, Table, Text, create_engine, delete, event,
                        func, insert, select, update)
from sqlalchemy.exc import IntegrityError

from model.errors import InputError
from model.i18n import _

ROOT = Path(__file__).resolve().parents[1]
URL_ENV, DIR_ENV = "TRANSFORMER_CLASSES_URL", "TRANSFORMER_CLASSES_DIR"
SCHEMA_VERSION = 1  # the tables below; a database of a later version is refused, an earlier one migrated (none yet)
CLASS_HOURS = 24.0
CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read off a projector
CODE_LENGTH = 6
MAX_NICKNAME = 40  # characters kept of a nickname (the page shows it as text only)
MAX_TEXT = 10_000  # characters kept of any text a class stores
VOTE_GAP = 0.5  # seconds between two votes of one seat: a held key or a script cannot flood the database

metadata = MetaData()
meta = Table("class_meta", metadata, Column("name", String(40), primary_key=True), Column("value", String(200)))
classes = Table("classes", metadata,
                Column("code", String(CODE_LENGTH), primary_key=True),
                Column("key_hash", String(64), nullable=False),
                Column("sentence", Text, nullable=False),
                Column("model", String(200), nullable=False),  # the page's model slug ("" for the default)
                Column("created", Float, nullable=False),
                Column("expires", Float, nullable=False),
                Column("question", Integer),  # the open question's number, None before the first
                Column("round", Integer, nullable=False, default=1),
                Column("revealed", Boolean, nullable=False, default=False))
questions = Table("class_questions", metadata,
                  Column("code", String(CODE_LENGTH), primary_key=True),
                  Column("number", Integer, primary_key=True),  # its place in the class, from 1
                  Column("title", String(200), nullable=False),
                  Column("text", Text, nullable=False),
                  Column("options", Text, nullable=False),  # a JSON list of the choices
                  Column("answer", Integer, nullable=False),  # the right choice's index, computed from the model
                  Column("why", Text, nullable=False))
seats = Table("class_seats", metadata,
              Column("token", String(40), primary_key=True),
              Column("code", String(CODE_LENGTH), nullable=False, index=True),
              Column("nickname", String(MAX_NICKNAME), nullable=False),
              Column("joined", Float, nullable=False),
              Column("last_vote", Float, nullable=False, default=0.0))
votes = Table("class_votes", metadata,
              Column("seat", String(40), primary_key=True),
              Column("number", Integer, primary_key=True),
              Column("round", Integer, primary_key=True),
              Column("code", String(CODE_LENGTH), nullable=False, index=True),
              Column("choice", Integer, nullable=False),
              Column("at", Float, nullable=False))
TABLES = (votes, seats, questions, classes)  # children first: the order rows are deleted in


class ClassError(InputError):
    """What a student or teacher cannot do, in one line (a wrong code, a closed round, a wrong key)."""


@dataclass(frozen=True)
class Asked:
    """One question of a class: a walk stop's or an exercise with choices, its answer computed from the model."""

    number: int  # its place in the class, from 1
    title: str  # what the projector and the results call it: "Walk, stop 3" or "Exercise 7"
    text: str
    options: tuple
    answer: int  # index into options
    why: str


@dataclass(frozen=True)
class State:
    """What the page draws for a class at one moment."""

    code: str
    sentence: str
    model: str
    questions: tuple  # Asked, by number
    question: int | None  # the open question's number
    round: int  # 1, or 2 after "vote again"
    revealed: bool
    counts: dict  # round -> [count per option] for the open question
    answered: int  # seats that voted in the open round
    seats: int

    def asked(self) -> Asked | None:
        return next((q for q in self.questions if q.number == self.question), None)


def text(value, limit: int = MAX_TEXT) -> str:
    """A text to store: str, cut to `limit` characters, no NUL (PostgreSQL refuses it), outer whitespace stripped."""
    return str(value).replace("\x00", "")[:limit].strip()


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def default_url() -> str:
    url = os.environ.get(URL_ENV)
    if url:
        return url
    folder = Path(os.environ.get(DIR_ENV) or ROOT / "classes")
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'classes.sqlite'}"


class Store:
    """The classes' database. One per process (store()); every method is one transaction."""

    def __init__(self, url: str | None = None):
        self.url = url or default_url()
        self.engine = create_engine(self.url, pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._migrate()

    def _migrate(self):
        metadata.create_all(self.engine)  # creates what is missing, never changes a table
        with self.engine.begin() as c:
            found = c.execute(select(meta.c.value).where(meta.c.name == "schema")).scalar()
            if found is None:
                try:
                    c.execute(insert(meta).values(name="schema", value=str(SCHEMA_VERSION)))
                except IntegrityError:  # another replica wrote it first
                    pass
            elif int(found) > SCHEMA_VERSION:
                raise RuntimeError(f"the classes database has schema {found}, newer than this app's {SCHEMA_VERSION}")

    # --- the teacher ---------------------------------------------------------------------------------------------
    def start(self, sentence: str, model: str, asked: list[Asked], hours: float = CLASS_HOURS) -> tuple[str, str]:
        """A new class: (its code, the teacher's key). The key is returned once and stored only as its SHA-256."""
        if not asked:
            raise ClassError(_("a class needs at least one question with choices"))
        now = time.time()
        self.purge(now)
        key = secrets.token_urlsafe(18)
        for _draw in range(20):  # 32^6 codes: a clash is rare, and then another is drawn
            code = "".join(secrets.choice(CODE_LETTERS) for _letter in range(CODE_LENGTH))
            try:
                with self.engine.begin() as c:
                    c.execute(insert(classes).values(code=code, key_hash=digest(key), sentence=text(sentence),
                                                     model=text(model, 200), created=now, expires=now + hours * 3600,
                                                     question=None, round=1, revealed=False))
                    c.execute(insert(questions), [{"code": code, "number": q.number, "title": text(q.title, 200),
                                                   "text": text(q.text),
                                                   "options": json.dumps([text(o, 500) for o in q.options]),
                                                   "answer": q.answer, "why": text(q.why)} for q in asked])
                return code, key
            except IntegrityError:
                continue
        raise RuntimeError("no free class code after 20 draws")

    def teacher(self, code: str, key: str) -> bool:
        with self.engine.connect() as c:
            found = c.execute(select(classes.c.key_hash).where(classes.c.code == code)).scalar()
        return found is not None and secrets.compare_digest(found, digest(key or ""))

    def _as_teacher(self, code: str, key: str):
        self.state(code)  # a wrong or old code says so first
        if not self.teacher(code, key):
            raise ClassError(_("this link's teacher key is not this class's: only the teacher's link can do that"))

    def ask(self, code: str, key: str, number: int):
        """Open question `number` for voting, round 1."""
        self._as_teacher(code, key)
        with self.engine.begin() as c:
            if c.execute(select(questions.c.number).where(questions.c.code == code,
                                                          questions.c.number == number)).scalar() is None:
                raise ClassError(_("question {number} is not one of this class's").format(number=number))
            c.execute(delete(votes).where(votes.c.code == code, votes.c.number == number))  # asked again: anew
            c.execute(update(classes).where(classes.c.code == code).values(question=number, round=1,
                                                                             revealed=False))

    def reveal(self, code: str, key: str):
        self._as_teacher(code, key)
        with self.engine.begin() as c:
            c.execute(update(classes).where(classes.c.code == code).values(revealed=True))

    def again(self, code: str, key: str):
        """Vote again: round 2 of the open question, not revealed (the class argued in between)."""
        self._as_teacher(code, key)
        with self.engine.begin() as c:
            c.execute(update(classes).where(classes.c.code == code).values(round=2, revealed=False))

    def end(self, code: str, key: str):
        """The class and every row of it deleted."""
        self._as_teacher(code, key)
        with self.engine.begin() as c:
            _delete_classes(c, [code])

    def results(self, code: str, key: str) -> list[dict]:
        """Per seat and question: nickname, question, first answer, second answer, right (the last round's answer),
        time of the last answer (UTC, ISO 8601). The teacher's only."""
        self._as_teacher(code, key)
        with self.engine.connect() as c:
            qs = {r.number: r for r in c.execute(select(questions).where(questions.c.code == code))}
            names = {r.token: r.nickname for r in c.execute(select(seats).where(seats.c.code == code))}
            rows = c.execute(select(votes).where(votes.c.code == code)
                             .order_by(votes.c.seat, votes.c.number, votes.c.round)).all()
        table = {}
        for v in rows:
            q = qs[v.number]
            options = json.loads(q.options)
            row = table.setdefault((names.get(v.seat, "?"), v.seat, v.number), {
                "nickname": names.get(v.seat, "?"), "question": q.title, "first answer": "", "second answer": "",
                "right": "", "time": ""})
            row["first answer" if v.round == 1 else "second answer"] = options[v.choice]
            row["right"] = "yes" if v.choice == q.answer else "no"
            row["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(v.at))
        return [table[k] for k in sorted(table)]

    def voters(self, code: str, key: str) -> list[str]:
        """The nicknames of the seats that answered the open round, in the order they joined. The teacher's only."""
        self._as_teacher(code, key)
        with self.engine.connect() as c:
            row = c.execute(select(classes.c.question, classes.c.round).where(classes.c.code == code)).first()
            return list(c.execute(select(seats.c.nickname).join(votes, votes.c.seat == seats.c.token).where(
                votes.c.code == code, votes.c.number == row.question, votes.c.round == row.round)
                .order_by(seats.c.joined, seats.c.nickname)).scalars())

    def first_try(self, code: str) -> dict:
        """Per question asked: (right at first try, voted at first try)."""
        with self.engine.connect() as c:
            answers = dict(c.execute(select(questions.c.number, questions.c.answer)
                                     .where(questions.c.code == code)).all())
            rows = c.execute(select(votes.c.number, votes.c.choice)
                             .where(votes.c.code == code, votes.c.round == 1)).all()
        out = {}
        for number, choice in rows:
            right, n = out.get(number, (0, 0))
            out[number] = (right + (choice == answers[number]), n + 1)
        return out

    # --- the students --------------------------------------------------------------------------------------------
    def join(self, code: str, nickname: str) -> str:
        """A seat in the class: its token (the student's link keeps it)."""
        name = text(nickname, MAX_NICKNAME)
        if not name:
            raise ClassError(_("type a nickname to join (any name you like; no account, no e-mail)"))
        self.purge(time.time())
        self.state(code)
        token = secrets.token_urlsafe(12)
        with self.engine.begin() as c:
            c.execute(insert(seats).values(token=token, code=code, nickname=name, joined=time.time(), last_vote=0.0))
        return token

    def nickname(self, code: str, token: str) -> str | None:
        with self.engine.connect() as c:
            return c.execute(select(seats.c.nickname).where(seats.c.code == code, seats.c.token == token)).scalar()

    def vote(self, code: str, token: str, number: int, choice: int) -> int:
        """This seat's answer to the open question in the open round (a later one in the same round replaces it, until
        the reveal); returns the round. Returns only once committed."""
        now = time.time()
        with self.engine.begin() as c:
            row = c.execute(select(classes).where(classes.c.code == code)).first()
            if row is None or row.expires < now:
                raise ClassError(no_class(code))
            seat = c.execute(select(seats).where(seats.c.code == code, seats.c.token == token)).first()
            if seat is None:
                raise ClassError(_("this seat is not in the class: join again with a nickname"))
            if row.question != number:
                raise ClassError(_("that question is closed: the teacher has moved on"))
            if row.revealed:
                raise ClassError(_("the answer is shown: this round's votes are in"))
            n = len(json.loads(c.execute(select(questions.c.options).where(
                questions.c.code == code, questions.c.number == number)).scalar()))
            if type(choice) is not int or not 0 <= choice < n:
                raise ClassError(_("that is not one of the question's choices"))
            if now - seat.last_vote < VOTE_GAP:
                raise ClassError(_("one answer at a time: wait a moment and answer again"))
            c.execute(update(seats).where(seats.c.token == token).values(last_vote=now))
            c.execute(delete(votes).where(votes.c.seat == token, votes.c.number == number,
                                          votes.c.round == row.round))
            c.execute(insert(votes).values(seat=token, number=number, round=row.round, code=code, choice=choice,
                                           at=now))
            return row.round

    def my_vote(self, code: str, token: str) -> int | None:
        """This seat's choice in the open round of the open question, or None."""
        with self.engine.connect() as c:
            row = c.execute(select(classes.c.question, classes.c.round).where(classes.c.code == code)).first()
            if row is None or row.question is None:
                return None
            return c.execute(select(votes.c.choice).where(votes.c.seat == token, votes.c.number == row.question,
                                                          votes.c.round == row.round)).scalar()

    # --- everyone ------------------------------------------------------------------------------------------------
    def state(self, code: str) -> State:
        now = time.time()
        with self.engine.connect() as c:
            row = c.execute(select(classes).where(classes.c.code == code)).first()
            if row is None or row.expires < now:
                raise ClassError(no_class(code))
            asked = tuple(Asked(q.number, q.title, q.text, tuple(json.loads(q.options)), q.answer, q.why) for q in
                          c.execute(select(questions).where(questions.c.code == code).order_by(questions.c.number)))
            counts, answered = {}, 0
            if row.question is not None:
                n = len(next(q.options for q in asked if q.number == row.question))
                for rnd in range(1, row.round + 1):
                    got = dict(c.execute(select(votes.c.choice, func.count()).where(
                        votes.c.code == code, votes.c.number == row.question, votes.c.round == rnd)
                        .group_by(votes.c.choice)).all())
                    counts[rnd] = [got.get(i, 0) for i in range(n)]
                answered = sum(counts[row.round])
            n_seats = c.execute(select(func.count()).select_from(seats).where(seats.c.code == code)).scalar()
        return State(code, row.sentence, row.model, asked, row.question, row.round, row.revealed, counts, answered,
                     n_seats)

    def purge(self, now: float):
        """Delete the classes past their time, and all their rows."""
        with self.engine.begin() as c:
            old = [r.code for r in c.execute(select(classes.c.code).where(classes.c.expires < now))]
            if old:
                _delete_classes(c, old)


def _delete_classes(c, codes: list):
    for table in TABLES:
        c.execute(delete(table).where(table.c.code.in_(codes)))


def _sqlite_pragmas(dbapi_connection, _record):
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer; replicas share the file
    cursor.execute("PRAGMA busy_timeout=5000")  # a writer waits for another's commit instead of failing
    cursor.close()


def no_class(code: str) -> str:
    return _("there is no class {code}: check the code, or ask the teacher for the link (a class ends after "
             "{hours:g} hours, or when the teacher ends it)").format(code=repr(str(code)[:CODE_LENGTH + 4]),
                                                                     hours=CLASS_HOURS)


_store, _lock = None, threading.Lock()


def store() -> Store:
    """The process's Store, opened on first use."""
    global _store
    with _lock:
        if _store is None:
            _store = Store()
        return _store


def asked_of(exercises, walk=()) -> list[Asked]:
    """A class's questions: the walk's (stop index from 0, a question with options, answer and why: views/guess.py)
    in its order, then the exercises with choices (a typed number has no bars to draw), numbered from 1. They are
    kept as the page that starts the class says them: in its language (model/i18n.py), for every seat."""
    found = [(_("Walk, stop {n}").format(n=n + 1), q.text, tuple(q.options), q.options.index(q.answer), q.why)
             for n, q in walk]
    found += [(_("Exercise {n}").format(n=ex.number), ex.question, tuple(ex.options), ex.options.index(ex.answer),
               ex.why) for ex in exercises if ex.options]
    return [Asked(i, *rest) for i, rest in enumerate(found, start=1)]
