"""A class, live, on the page (AppTest, the shipped model): the teacher starts a class from the exercises, students
join with a nickname and answer, the projector counts them and reveals the model's answer; the seat stays in the
link across a reload. The database: a fresh SQLite file per test ($TRANSFORMER_CLASSES_DIR)."""

import re

import pytest

from conftest import from_url, shown
from lesson import classroom
from model.translator import Translator

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."


@pytest.fixture
def classes(tmp_path, monkeypatch):
    monkeypatch.setenv(classroom.DIR_ENV, str(tmp_path))
    monkeypatch.delenv(classroom.URL_ENV, raising=False)
    monkeypatch.setattr(classroom, "_store", None)  # the page's store opens on this test's database
    monkeypatch.setattr(classroom, "VOTE_GAP", 0.0)
    return tmp_path


def started_class(monkeypatch) -> tuple[str, str, str]:
    """The teacher's page starts a class; (code, the student link, the teacher link) as the page shows them."""
    at = from_url(monkeypatch, s=SENTENCE, view="exercises")
    at.button(key="class_start").click().run()
    links = [c.value for c in at.code if "class=" in c.value]
    assert len(links) == 2 and "key=" not in links[0] and "key=" in links[1]  # the student's link holds no key
    code = re.search(r"class=([A-Z0-9]{6})", links[0]).group(1)
    return code, links[0], links[1]


def params(link: str) -> dict:
    from urllib.parse import parse_qsl, urlsplit

    return dict(parse_qsl(urlsplit(link).query))


def text_of(at) -> str:
    """The page's text as the browser shows it (character references decoded)."""
    return shown(" ".join(m.value for m in at.markdown) + " " + " ".join(c.value for c in at.caption))


def test_a_class_votes_and_the_projector_reveals(classes, monkeypatch):
    code, student_link, teacher_link = started_class(monkeypatch)
    store = classroom.store()
    state = store.state(code)
    assert state.questions and all(q.options for q in state.questions)
    tokens = state.questions[0]  # the walk's first stop: how many tokens the model reads, counted a second way
    assert tokens.title == "Walk, stop 1"
    assert tokens.options[tokens.answer] == str(len(Translator.load().source_ids(SENTENCE)[0]))

    ana = from_url(monkeypatch, **params(student_link))
    assert f"Class {code}" in text_of(ana) and "join with a nickname" in text_of(ana)
    ana.text_input(key="class_nickname").input("**Ana**")
    next(b for b in ana.button if b.key.startswith("FormSubmitter:class_join")).click().run()
    assert "waiting for the teacher's first question" in text_of(ana)
    seat = ana.query_params["seat"]
    assert store.nickname(code, seat) == "**Ana**"

    teacher = from_url(monkeypatch, **params(teacher_link))
    assert "0 joined" not in text_of(teacher) and "1 joined" in text_of(teacher)
    first = state.questions[0]
    teacher.selectbox(key="class_pick").set_value(first.number)
    teacher.button(key="class_ask").click().run()
    assert store.state(code).question == first.number

    ana.run()
    wrong = next(i for i in range(len(first.options)) if i != first.answer)
    ana.button(key=f"class_vote_{first.number}_1_{wrong}").click().run()
    assert store.my_vote(code, seat) == wrong
    assert f"Your answer is in: “{first.options[wrong]}”" in text_of(ana)
    assert "The model's answer" not in text_of(ana) and not ana.success  # nothing before the reveal

    teacher.run()
    assert "1 of 1** answered: **Ana**." in text_of(teacher)  # the nickname as typed: its stars are text, not bold
    assert not teacher.success  # the answer waits for the reveal
    assert "Right at first try" not in text_of(teacher)  # a share right would give it away too
    teacher.button(key="class_reveal").click().run()
    assert f"{first.title}: 0 of 1 (0%)" in text_of(teacher)
    assert any(first.options[first.answer] in shown(s.value) for s in teacher.success)

    reloaded = from_url(monkeypatch, **params(student_link), seat=seat)  # a reload: the link keeps the seat
    assert any(f"The model's answer: “{first.options[first.answer]}”" in shown(i.value) for i in reloaded.info)
    assert store.results(code, params(teacher_link)["key"])[0]["first answer"] == first.options[wrong]


def test_a_wrong_code_or_key_says_so(classes, monkeypatch):
    for link in ({"s": SENTENCE, "class": "ZZZZZZ"}, {"class": "ZZZZZZ"}):  # with the sentence, and the short link
        at = from_url(monkeypatch, **link)
        assert any("there is no class 'ZZZZZZ'" in shown(w.value) for w in at.warning) and not at.exception
    code, student_link, _ = started_class(monkeypatch)
    at = from_url(monkeypatch, **params(student_link), key="not-the-teachers-key")
    assert any("teacher key is not this class's" in shown(w.value) for w in at.warning)
    assert all(b.key != "class_ask" for b in at.button)  # a student's panel: no teacher's buttons
    at = from_url(monkeypatch, s=SENTENCE, **{"class": "x<b>"})
    assert not at.exception


def test_the_short_link_opens_the_classs_sentence(classes, monkeypatch):
    code, _, _ = started_class(monkeypatch)
    at = from_url(monkeypatch, **{"class": code})
    assert at.text_input(key="sentence").value == SENTENCE and f"Class {code}" in text_of(at)


def test_a_class_started_in_korean_is_asked_in_korean_and_its_links_keep_the_language(classes, monkeypatch):
    """The teacher's page in Korean: the class's questions are kept as that page says them (the walk's first stop,
    its question and title from the catalogue), the links carry lang=ko, and a student who opens the link reads the
    question in Korean; the answer is the same choice as in English (an index, never a word)."""
    from model.i18n import catalogue

    ko = catalogue("ko")
    at = from_url(monkeypatch, s=SENTENCE, view="exercises", lang="ko")
    at.button(key="class_start").click().run()
    links = [c.value for c in at.code if "class=" in c.value]
    assert len(links) == 2 and all(params(link)["lang"] == "ko" for link in links)
    code = params(links[0])["class"]
    first = classroom.store().state(code).questions[0]
    title, question = ko.gettext("Walk, stop {n}").format(n=1), ko.gettext("How many tokens does the model read for "
                                                                            "this sentence?")
    assert title != "Walk, stop 1" and (first.title, first.text) == (title, question)
    assert first.options[first.answer] == str(len(Translator.load().source_ids(SENTENCE)[0]))
    ana = from_url(monkeypatch, **params(links[0]))
    assert ko.gettext("**Class {code}**: join with a nickname (any name you like; no account, no e-mail).").format(
        code=code).replace("**", "") in text_of(ana).replace("**", "")
