"""The worksheet and the exercises of a chosen sentence (lesson/exercises.py lesson_of, lesson/worksheet.py
--sentence, --exercises): every answer of a sentence's exercise is that sentence's, found again here from the
translator; a question the sentence cannot carry is left out with its reason; the exercises that read a shipped table
say so and stay the same (docs/contract.md, "Exercises and the worksheet")."""

import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import CHECKPOINT, assert_error_line
from lesson import worksheet
from lesson.exercises import exercises, lesson_sentence
from model import cli

SERVER = "http://class.example:8501"
OTHER = "Zwei Hunde spielen im Schnee."
SHORT = "Hund"  # translated as "dog <eos>": two steps, too few for the question about step 3


@pytest.fixture
def sheets(call, tmp_path, monkeypatch, translator):
    """sheets(*argv) -> (students' sheet, key, stdout) of `python -m lesson.worksheet` run in this process on the
    shipped model."""
    monkeypatch.setattr(cli, "load_translator", lambda args: translator)

    def write(*argv):
        out = tmp_path / "sheet.html"
        status, stdout, err = call(worksheet.main, "--out", out, "--server", SERVER, *argv)
        assert status == 0, err
        return (out.read_text(encoding="utf-8"), (tmp_path / "sheet-answers.html").read_text(encoding="utf-8"),
                stdout)

    return write


def answers(key: str) -> dict[int, str]:
    """Exercise number -> the answer the key gives."""
    found = re.findall(r"Exercise (\d+)</h2>.*?Answer: (.*?)</strong>", key, re.S)
    return {int(n): html.unescape(a) for n, a in found}


def sentences_linked(page: str) -> set[str]:
    return {parse_qs(urlsplit(html.unescape(u)).query)["s"][0] for u in re.findall(r'href="([^"]+)"', page)}


def test_the_key_holds_the_chosen_sentences_answers_of_the_chosen_exercises(sheets, translator):
    """Exercises 1 (tokens read) and 15 (the first token's probability) on two sentences: each answer is the one
    the translator gives that sentence, and they differ where the sentences' numbers differ."""
    for sentence, argv in ((lesson_sentence(), ()), (OTHER, ("--sentence", OTHER))):
        sheet, key, _ = sheets(*argv, "--exercises", "15,1")
        r = translator.translate(sentence)
        assert answers(key) == {1: str(len(r.src_tokens)), 15: f"{r.steps[0].prob:.2f}"}
        assert re.findall(r"Exercise (\d+)</h2>", sheet) == ["1", "15"]
        assert sentences_linked(sheet) == sentences_linked(key) == {sentence}
        assert html.escape(f"“{sentence}”") in sheet
    first, other = translator.translate(lesson_sentence()), translator.translate(OTHER)
    assert len(first.src_tokens) != len(other.src_tokens) and f"{first.steps[0].prob:.2f}" != f"{other.steps[0].prob:.2f}"


def test_a_question_the_sentence_cannot_carry_is_left_out_with_its_reason(sheets, translator, call, tmp_path):
    from lesson.exercises import lesson_of

    steps = len(translator.translate(SHORT).steps)
    assert steps < 3
    lesson = lesson_of(translator, CHECKPOINT, SHORT)
    assert [(s.number, s.title) for s in lesson.skipped] == [(8, "Inputs a decoder step sees")]
    assert f"the translation has {steps} steps" in lesson.skipped[0].reason
    assert [ex.number for ex in lesson.exercises] == [n for n in range(1, 22) if n != 8]
    sheet, key, stdout = sheets("--sentence", SHORT)
    assert "Exercise 8</h2>" not in sheet and "left out: exercise 8 (Inputs a decoder step sees)" in stdout
    assert "Left out for this sentence: exercise 8" in key
    status, out, err = call(worksheet.main, "--out", tmp_path / "x.html", "--sentence", SHORT, "--exercises", "3,8")
    assert_error_line(status, err, "exercise 8 (Inputs a decoder step sees) is left out for “Hund”",
                      f"the translation has {steps} steps")


def test_the_exercises_that_read_a_table_say_so_and_stay_the_same(translator, sheets):
    first, other = (exercises(translator, CHECKPOINT, s) for s in (lesson_sentence(), OTHER))
    fixed = [(a, b) for a, b in zip(first, other) if a.reads]
    assert {a.number for a, _ in fixed} == {3, 4, 5, 10, 11, 13, 17, 18, 20, 21}
    assert all(a.answer == b.answer and a.question == b.question for a, b in fixed)
    assert all(OTHER not in a.question for a, _ in fixed)
    sheet, _, _ = sheets("--sentence", OTHER, "--exercises", "1,10")
    assert sheet.count("The same for every sentence: it reads ") == 1
    assert "The same for every sentence: it reads the test set&#x27;s head statistics (head_stats.json)." in sheet


def test_the_sheet_in_korean_has_the_same_answers_and_links_that_open_the_page_in_korean(sheets):
    """--lang ko: the sheet and its key in Korean (the catalogue's words), every link with lang=ko, and the answers
    those of the English sheet (numbers and tokens are never translated)."""
    from model.i18n import catalogue

    ko = catalogue("ko")
    sheet, key, _out = sheets("--exercises", "1,15", "--lang", "ko")
    english_sheet, english_key, _out = sheets("--exercises", "1,15")
    assert '<html lang="ko">' in sheet and '<html lang="en">' in english_sheet
    heading = html.escape(ko.gettext("Exercise {n}").format(n=1))
    assert heading != "Exercise 1" and f"<h2>{heading}</h2>" in sheet
    said = re.findall(re.escape(html.escape(ko.gettext("Answer: {answer}")).split("{")[0]) + r"(.*?)</strong>", key)
    assert said == list(answers(english_key).values())
    links = [parse_qs(urlsplit(html.unescape(u)).query) for u in re.findall(r'href="([^"]+)"', sheet)]
    assert links and all(q["lang"] == ["ko"] for q in links)
    assert all("lang" not in parse_qs(urlsplit(html.unescape(u)).query)
               for u in re.findall(r'href="([^"]+)"', english_sheet))
