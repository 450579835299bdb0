"""The Exercises page's worksheet (views/exercises.py): its two downloads hold the page's typed sentence and the
exercises the teacher picked, as lesson.worksheet writes them for that sentence and that pick."""

import re
from urllib.parse import quote

import pytest

from appserver import wait_idle
from conftest import CHECKPOINT, fresh_page
from lesson.exercises import exercises
from lesson.worksheet import TITLE, answer_key_html, worksheet_html

SENTENCE = "Zwei Hunde spielen im Schnee."
PICK = [3, 7, 12]


def pick_only(pg, exs, numbers):
    """Clear the multiselect of the worksheet's exercises, then choose these numbers by typing their titles."""
    box = pg.locator(".st-key-worksheet_pick")
    box.get_by_role("button", name="Clear all").click()
    wait_idle(pg, 60_000)
    titles = {ex.number: f"{ex.number} · {ex.title}" for ex in exs}
    for n in numbers:
        box.locator("input").click()
        box.locator("input").fill(titles[n])
        pg.get_by_role("option", name=titles[n], exact=True).click()
        wait_idle(pg, 60_000)
    pg.keyboard.press("Escape")
    wait_idle(pg, 60_000)


@pytest.mark.slow
@pytest.mark.browser
def test_the_downloads_carry_the_typed_sentence_and_the_picked_exercises(browser, server, translator, tmp_path):
    every = exercises(translator, CHECKPOINT, SENTENCE)
    ctx, pg, errors = fresh_page(browser, f"{server}/?view=exercises&s={quote(SENTENCE)}")
    pg.get_by_text("For teachers: the lesson link").click()
    pg.locator(".st-key-worksheet_pick").wait_for(timeout=120_000)
    pick_only(pg, every, PICK)
    exs = [ex for ex in every if ex.number in PICK]
    for label, name, want in (("Worksheet (HTML)", "worksheet.html", worksheet_html(exs, server, TITLE)),
                              ("Answer key (HTML)", "worksheet-answers.html", answer_key_html(exs, server, TITLE))):
        with pg.expect_download(timeout=60_000) as info:
            pg.get_by_role("button", name=label).click()
        assert info.value.suggested_filename == name
        info.value.save_as(tmp_path / name)
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert text == want, label
        assert [int(n) for n in re.findall(r"Exercise (\d+)</h2>", text)] == PICK
        assert "Zwei+Hunde+spielen+im+Schnee." in text and "Ein+Typ" not in text
    ctx.close()
    assert not errors, errors

