"""A checkpoint of one's own, without the tables that ship beside ours (python -m model.tables builds them): every
view opens without a traceback, and each view that reads a table says in one line that it is missing, with the
command that writes it."""

import shutil

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP, CHECKPOINT, show_view
from model.tables import command_line
from views.registry import VIEWS

# The views that read a table beside the checkpoint, and a phrase of their line saying it is missing.
MISSING = {"exercises": "tables beside this checkpoint", "contributions": "No `source_share.json`",
           "patch": "No contrast-set table", "align": "No alignment scores", "evidence": "no index of training steps",
           "stats": "No test-set statistics", "importance": "No head-importance table"}


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> str:
    """The shipped model's weights, config and vocabularies, and nothing else: what model.convert writes."""
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    folder = tmp_path_factory.mktemp("bare") / "mine"
    folder.mkdir()
    for name in ("config.json", "vocab.json", "model.safetensors"):
        shutil.copy(CHECKPOINT / name, folder / name)
    return str(folder)


def test_every_view_of_a_checkpoint_without_tables_opens_and_names_the_command(monkeypatch, bare):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", bare)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.text_input(key="sentence").input("Zwei Hunde spielen im Schnee.").run()
    assert not at.exception, at.exception
    command = command_line(bare)
    notes = [c.value for c in at.caption if "No training index" in c.value]
    assert len(notes) == 1 and command in notes[0]  # the familiarity note's place under the translation
    for slug in VIEWS:
        show_view(at, slug)
        assert not at.exception, (slug, at.exception)
        assert not at.error, (slug, [e.value for e in at.error])
        if slug in MISSING:
            lines = [i.value for i in at.info if MISSING[slug] in i.value]
            assert len(lines) == 1, (slug, [i.value for i in at.info])
            assert command in lines[0] and "\n" not in lines[0], (slug, lines[0])
