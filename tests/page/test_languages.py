"""The page in Korean and German (AppTest on the shipped model, slow tier): lang= in the link sets the language of the
frame, the walk, its questions, the exercises and the link's notes; the link keeps it with the rest of the state; a
language the page does not have is said and English shown. Every expected string is the catalogue's own translation
of the English one, and must differ from it."""

import pytest

from conftest import from_url, markdown, shown
from model.i18n import catalogue, speaking
from views.walk import STOPS

pytestmark = pytest.mark.slow

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."


def said(lang: str, english: str) -> str:
    """The catalogue's translation of an English string, which must be one (not the English left as it is)."""
    text = catalogue(lang).gettext(english)
    assert text != english, f"{english!r} is not translated into {lang}"
    return text


def page_text(at) -> str:
    parts = [markdown(at)] + [c.value for c in at.caption] + [t.value for t in at.title]
    return shown("\n".join(parts))


@pytest.mark.parametrize("lang", ["ko", "de"])
def test_the_link_opens_the_walk_in_its_language_and_keeps_it(monkeypatch, lang):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop="3", lang=lang)
    assert not at.exception and not at.error and not at.warning, (at.exception, at.error, at.warning)
    text = page_text(at)
    assert said(lang, "Inside a Transformer translator") in text
    assert said(lang, STOPS[2].title) in text
    assert said(lang, "Stop {n} of {total}").format(n=3, total=len(STOPS)) in text
    assert "Inside a Transformer translator" not in text and STOPS[2].title not in text
    assert dict(at.query_params) == {"s": SENTENCE, "view": "walk", "stop": "3", "lang": lang}
    assert at.segmented_control(key="lang").value == lang


def test_a_question_and_its_verdict_are_in_the_pages_language(monkeypatch, translator):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop="1", guess="1", lang="de")
    question = said("de", "How many tokens does the model read for this sentence?")
    assert question in page_text(at)
    n = len(translator.translate(SENTENCE).src_tokens)
    at.button(key=next(b.key for b in at.button if b.key and b.key.startswith("guess_") and b.label == str(n))).click()
    at.run()
    verdict = shown(at.success[0].value)
    assert said("de", "Right.") in verdict
    assert said("de", "Your guess: “{choice}”.").format(choice=n) in verdict


def test_the_exercises_are_asked_in_the_pages_language(monkeypatch):
    at = from_url(monkeypatch, s=SENTENCE, view="exercises", lang="ko")
    assert not at.exception, at.exception
    text = page_text(at)
    assert said("ko", "**Exercise {n}**").format(n=1) in markdown(at)
    with speaking("ko"):
        from lesson.exercises import lesson_of
        from model.checkpoint import DEFAULT_CHECKPOINT
        from views.calls import load_translator

        first = lesson_of(load_translator(None), DEFAULT_CHECKPOINT, SENTENCE).exercises[0]
    assert shown(first.question) in text and said("ko", "Stop 1 shows the sentence as tokens; count the chips, the "
                                                        "two specials too.") == first.hint


def test_a_language_the_page_does_not_have_is_said_and_english_shown(monkeypatch):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", lang="fr")
    assert "lang='fr' is not one of en, ko, de" in shown(at.warning[0].value)
    assert STOPS[0].title in markdown(at) and "lang" not in at.query_params


def test_the_switch_changes_the_language_and_keeps_the_pages_state(monkeypatch):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop="5")
    assert STOPS[4].title in markdown(at) and "lang" not in at.query_params
    at.segmented_control(key="lang").set_value("ko").run()
    assert not at.exception, at.exception
    assert said("ko", STOPS[4].title) in markdown(at)
    assert dict(at.query_params) == {"s": SENTENCE, "view": "walk", "stop": "5", "lang": "ko"}
    at.segmented_control(key="lang").set_value("en").run()
    assert STOPS[4].title in markdown(at) and "lang" not in at.query_params
