"""The exercises as registered question functions (lesson/exercises.py): each one small, the set covering the walk's
topics in order, and together they ask exactly what the one long function they replaced asked, for the lesson's
sentence and two other sentences, field for field (tests/data/exercises.json, written by that function before the
split: `learned/I`, the shipped model on example I of assets/examples.json; `sinusoidal/0`, the second model).

A retrained checkpoint or a changed question changes the answers: rewrite the file then, from `exercises(translator,
folder, sentence)` of each key, as dataclasses.asdict of every exercise (json.dump, sort_keys, ensure_ascii=False)."""

import dataclasses
import inspect
import json

import pytest

from conftest import CHECKPOINT, ROOT
from lesson.exercises import EXAMPLES, QUESTIONS, SENTENCE_INDEX, TOPICS, exercises, lesson_sentence

BEFORE = json.loads((ROOT / "tests/data/exercises.json").read_text(encoding="utf-8"))
FOLDERS = {"learned": CHECKPOINT, "sinusoidal": CHECKPOINT / "sinusoidal"}


def example(index: int) -> str:
    return json.loads(EXAMPLES.read_text(encoding="utf-8"))["examples"][index]["de"]


def test_each_question_is_one_small_registered_function_in_the_walks_order():
    topics = [topic for topic, _ in QUESTIONS]
    assert [TOPICS.index(t) for t in topics] == sorted(TOPICS.index(t) for t in topics)
    assert set(topics) == set(TOPICS)
    names = [fn.__name__ for _, fn in QUESTIONS]
    assert len(set(names)) == len(names), names
    for _, fn in QUESTIONS:
        assert len(inspect.getsource(fn).splitlines()) <= 25, f"{fn.__name__} is no small function"


@pytest.mark.parametrize("key", sorted(BEFORE))
def test_the_registry_asks_what_the_long_function_asked(shipped_models, key):
    slug, index = key.split("/")
    translator = shipped_models(FOLDERS[slug])
    sentence = example(int(index))
    found = [dataclasses.asdict(ex) for ex in exercises(translator, FOLDERS[slug], sentence)]
    assert json.loads(json.dumps(found, ensure_ascii=False)) == BEFORE[key]
    if int(index) == SENTENCE_INDEX:
        assert sentence == lesson_sentence()
        assert exercises(translator, FOLDERS[slug]) == exercises(translator, FOLDERS[slug], sentence)
