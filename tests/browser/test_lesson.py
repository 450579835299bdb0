"""Learn by predicting: guess first (?guess=1) hides a picture until its question is answered and marks the answer on
it; the exercises page judges an answer right or wrong by the model's own numbers; the presenter layout (?present=1)
puts the walk's picture on a projector's screen."""

from urllib.parse import urlencode

import pytest

from appserver import wait_idle
from conftest import fresh_page
from model.checkpoint import DEFAULT_CHECKPOINT
from lesson.exercises import check, exercises
from page.test_lesson import SENTENCE, cross_answer


@pytest.mark.slow
@pytest.mark.browser
def test_a_guess_in_the_walk_shows_no_picture_then_marks_the_answer(browser, server, translator):
    tokens, best = cross_answer(translator)
    wrong = next(t for t in tokens if t != best)
    link = "/?" + urlencode({"s": SENTENCE, "view": "walk", "stop": "9", "guess": "1"})
    ctx, pg, errors = fresh_page(browser, server + link)
    pg.get_by_text("Guess first.").wait_for(timeout=60_000)
    assert pg.locator(".st-key-view_box .js-plotly-plot").count() == 0
    pg.locator(".st-key-view_box").get_by_role("button", name=wrong, exact=True).click()
    pg.get_by_text("Not quite").wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    pg.locator(".st-key-view_box .js-plotly-plot").first.wait_for(timeout=30_000)
    marks = pg.evaluate("""() => [...document.querySelectorAll('.st-key-view_box .js-plotly-plot')]
        .flatMap(p => (p._fullLayout.annotations || []).map(a => a.text))""")
    assert "your guess" in marks and "the answer" in marks, marks
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("view, stop", [("cross", None), ("walk", "10")])
def test_guess_first_hides_the_translation_until_the_answer(browser, server, view, stop):
    """While a question is open, the translation and the output tokens, which would answer it, are hidden (stop 10
    asks the next word; an attention view runs as a fragment, whose answer must redraw the whole page)."""
    link = "/?" + urlencode({"s": SENTENCE, "view": view, "guess": "1"} | ({"stop": stop} if stop else {}))
    ctx, pg, errors = fresh_page(browser, server + link)
    pg.get_by_text("Guess first.").wait_for(timeout=60_000)
    assert pg.locator(".translation").count() == 0 and pg.locator(".chip").count() > 0  # the source chips stay
    assert pg.get_by_text("hidden until you answer the question below").count() == 1
    pg.locator(".st-key-view_box").locator("[class*='st-key-guess_'] button").first.click()
    pg.locator(".translation").wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    assert pg.get_by_text("hidden until you answer").count() == 0
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_an_answer_by_keyboard_keeps_the_focus_and_survives_a_reload(browser, server):
    """Enter on an option: the focus moves to the verdict (not to the page's top), which carries an icon; a reload
    of the page (the link keeps answered=) shows the verdict again instead of the question."""
    link = "/?" + urlencode({"s": SENTENCE, "view": "walk", "stop": "1", "guess": "1"})
    ctx, pg, errors = fresh_page(browser, server + link)
    pg.get_by_text("Guess first.").wait_for(timeout=60_000)
    option = pg.locator(".st-key-view_box").locator("[class*='st-key-guess_'] button").first
    option.focus()
    pg.keyboard.press("Enter")
    pg.get_by_text("Your guess").wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    pg.wait_for_function("() => !!document.activeElement.closest('[class*=\"st-key-guess_verdict_\"]')",
                         timeout=30_000)
    verdict = pg.locator("[class*='st-key-guess_verdict_']")
    assert verdict.locator("[data-testid='stAlertDynamicIcon']").count() == 1  # the tick or the cross
    pg.wait_for_function("new URLSearchParams(location.search).has('answered')", timeout=30_000)
    pg.reload()
    pg.get_by_text("Your guess").wait_for(timeout=60_000)
    assert pg.get_by_text("Guess first.").count() == 0
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_exercises_page_judges_a_right_and_a_wrong_answer(browser, server, translator):
    exs = [ex for ex in exercises(translator, DEFAULT_CHECKPOINT, SENTENCE) if ex.options]  # the page's sentence
    first, second = exs[0], exs[1]
    wrong = next(o for o in second.options if not check(second, o))
    ctx, pg, errors = fresh_page(browser, server + "/?" + urlencode({"s": SENTENCE, "view": "exercises"}))
    pg.get_by_text(f"Exercise {first.number}", exact=True).wait_for(timeout=120_000)
    for ex, option, verdict in ((first, first.answer, "Right."), (second, wrong, "Not quite")):
        box = pg.locator(f".st-key-exercise_box_{ex.number}")
        box.get_by_role("radio", name=option, exact=True).check(force=True)
        box.get_by_text(verdict).wait_for(timeout=60_000)
        wait_idle(pg, 60_000)
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_presenter_layout_puts_the_walks_picture_on_a_projector(browser, server):
    link = "/?" + urlencode({"s": SENTENCE, "view": "walk", "stop": "9", "present": "1"})
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = ctx.new_page()
    pg.goto(server + link)
    chart = pg.locator(".st-key-view_box .js-plotly-plot").first
    chart.wait_for(timeout=120_000)
    wait_idle(pg, 60_000)
    top = chart.evaluate("e => e.getBoundingClientRect().top")
    assert top < 768 - 150, f"the picture starts at {top} px"  # and at least 150 px of it on the screen
    assert pg.locator("h1").count() == 0  # the title made room
    ctx.close()
