"""The worksheet's command line (lesson/worksheet.py): --exercises and --sentence are checked before the model loads,
a bad one is one `error:` line and exit status 2; the hints are on the answer key only (docs/contract.md, "Exercises
and the worksheet")."""

import html

import pytest

from conftest import assert_error_line
from lesson import worksheet
from lesson.exercises import QUESTIONS, Exercise
from model import cli

SERVER = "http://class.example:8501"


@pytest.fixture
def no_model(monkeypatch):
    """The command must refuse before it loads a model: loading one fails the test."""
    def load(args):
        raise AssertionError("the model was loaded before the command line was checked")

    monkeypatch.setattr(cli, "load_translator", load)


@pytest.mark.parametrize("numbers, says", [
    ("3,x", "'x' is not an exercise number"),
    ("3,,7", "an item is empty"),
    ("", "an item is empty"),
    ("0", "there is no exercise 0"),
    (str(len(QUESTIONS) + 1), f"there is no exercise {len(QUESTIONS) + 1}"),
    ("3,7,3", "exercise 3 is listed twice"),
    ("٣", "'٣' is not an exercise number"),
    ("-1", "'-1' is not an exercise number"),
])
def test_a_bad_exercise_list_is_one_error_line(numbers, says, call, tmp_path, no_model):
    status, out, err = call(worksheet.main, "--out", tmp_path / "x.html", "--exercises", numbers)
    assert_error_line(status, err, f"--exercises {numbers!r}: {says}", "e.g. 3,7,12")
    assert out == "" and not (tmp_path / "x.html").exists()


def test_an_empty_sentence_is_one_error_line(call, tmp_path, no_model):
    status, out, err = call(worksheet.main, "--out", tmp_path / "x.html", "--sentence", "  ")
    assert_error_line(status, err, "--sentence is empty")


def test_a_good_list_is_read_in_the_walks_order():
    assert worksheet.exercise_numbers("12, 3,7") == [3, 7, 12]
    assert worksheet.exercise_numbers(str(len(QUESTIONS))) == [len(QUESTIONS)]


def made_up(number: int, hint: str) -> Exercise:
    return Exercise(number, "masks", f"Question {number}?", {"s": "Ein Hund läuft.", "view": "dec"}, ("a", "b"), "a",
                    0.0, hint, f"Why {number}.")


def test_the_hints_are_on_the_key_only():
    exs = [made_up(1, "Look at row <3> of the map"), made_up(4, "Count the zeros & the rest")]
    sheet = worksheet.worksheet_html(exs, SERVER, "T")
    key = worksheet.answer_key_html(exs, SERVER, "T")
    for ex in exs:
        assert html.escape(ex.hint) not in sheet and html.escape(ex.hint) in key
        assert html.escape(ex.why) not in sheet and html.escape(ex.why) in key
    assert "Hint" not in sheet and key.count("Hint: ") == len(exs)
