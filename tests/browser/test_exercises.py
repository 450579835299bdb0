"""The exercises (lesson/exercises.py) and the worksheet (lesson/worksheet.py): every answer is the model's own, found
again here by a second, literal route; every link opens a page state the page reads without a note; the worksheet
holds no script and links only to the server given (docs/contract.md, "Exercises and the worksheet")."""

import pytest

from conftest import CHECKPOINT
from integration.test_exercises import sheets
from lesson.exercises import exercises
from lesson.worksheet import TITLE, answer_key_html, worksheet_html


@pytest.mark.slow
@pytest.mark.browser
def test_the_pages_worksheet_buttons_download_the_sheet_and_its_key(browser, server, sheets, tmp_path):
    """The exercises view's two buttons (their files made when clicked) give the worksheet and the answer key of this
    model's exercises for the typed sentence, as lesson.worksheet writes them."""
    from urllib.parse import quote

    from appserver import wait_idle

    ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
    pg = ctx.new_page()
    typed = "Zwei Männer spielen Fußball auf einer Wiese."
    pg.goto(f"{server}/?view=exercises&s={quote(typed)}")
    pg.get_by_text("For teachers: the lesson link").click()
    wait_idle(pg, 60_000)
    translator = sheets["learned"][0]  # the page's default model, asked of the typed sentence
    exs = exercises(translator, CHECKPOINT, typed)
    for label, name, make in (("Worksheet (HTML)", "worksheet.html", worksheet_html),
                              ("Answer key (HTML)", "worksheet-answers.html", answer_key_html)):
        with pg.expect_download(timeout=30_000) as info:
            pg.get_by_role("button", name=label).click()
        assert info.value.suggested_filename == name
        info.value.save_as(tmp_path / name)
        text = (tmp_path / name).read_text(encoding="utf-8")
        want = make(exs, server, TITLE)
        assert text == want, label  # its links name the page's own address
    ctx.close()
