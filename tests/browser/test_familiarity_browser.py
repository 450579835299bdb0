"""The familiarity note (views/familiarity.py) and the training evidence (views/evidence.py) in headless Chromium:
the note and its neighbour buttons in both themes on a phone and a desktop, the decoding trace's "Where it learned
this step" button (a click inside the trace component, which AppTest cannot make), and the evidence view by link.

Screenshots go to /tmp/shots/ to be looked at.
"""

import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from appserver import INPUT_LABEL, pick_view, translate_in_page, wait_idle
from conftest import fresh_page
from browser.test_browser import CONTRAST

SHOTS = Path("/tmp/shots")
EVERYDAY = "Ich habe heute keine Zeit."  # no photo description: the note, with three neighbours
MULTI30K = "Ein Typ arbeitet an einem Gebäude."  # from the Multi30k test set: no note
UNFAMILIAR = "unlike anything the model learned from"


def sized(browser, url: str, width: int, height: int, scheme: str = "light"):
    """fresh_page in `scheme`, narrowed or widened to width x height (Streamlit lays the page out again)."""
    ctx, pg, errors = fresh_page(browser, url, color_scheme=scheme)
    pg.set_viewport_size({"width": width, "height": height})
    pg.wait_for_timeout(500)
    wait_idle(pg, 60_000)
    return ctx, pg, errors


def note_of(pg):
    return pg.get_by_role("alert").filter(has_text=UNFAMILIAR)  # Streamlit's stAlertContainer


def neighbours(pg) -> list:
    return [pg.locator(f".st-key-neighbour_{i}").get_by_role("button") for i in range(3)]


def params(pg) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(pg.url).query).items()}


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width, height", [(390, 844), (1400, 1000)])
def test_the_note_fits_reads_and_its_first_neighbour_becomes_the_sentence(browser, server, scheme, width, height):
    ctx, pg, errors = sized(browser, f"{server}/?" + urlencode({"s": EVERYDAY}), width, height, scheme)
    try:
        page_bg = pg.locator("[data-testid=stApp]").evaluate("e => getComputedStyle(e).backgroundColor")
        assert (page_bg == "rgb(255, 255, 255)") == (scheme == "light"), page_bg  # the page follows the browser
        note = note_of(pg)
        assert note.count() == 1 and note.is_visible()
        buttons = neighbours(pg)
        assert all(b.count() == 1 for b in buttons)
        note.scroll_into_view_if_needed()
        for element in (note, *buttons):
            box = element.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (element, box)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1
        # A label cut with an ellipsis hides half a training sentence (a phone has no tooltip to show the rest).
        for b in buttons:
            label = b.locator("[data-testid=stMarkdownContainer]")
            assert label.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), b.inner_text()
            assert b.evaluate(CONTRAST) >= 4.5, b.inner_text()
        assert note.locator("p").first.evaluate(CONTRAST) >= 4.5
        SHOTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(SHOTS / f"note-{scheme}-{width}.png"))

        # Once in a full run the page was still laying itself out (a run in progress after the resize) and the click
        # met the view switch where the button had been: the page settles first, and the click may wait for it.
        wait_idle(pg, 120_000)
        before, first = pg.locator(".translation").inner_text(), buttons[0].inner_text()
        buttons[0].click(timeout=90_000)
        pg.wait_for_function("t => document.querySelector('.translation')?.innerText !== t", arg=before,
                             timeout=60_000)
        wait_idle(pg, 60_000)
        assert pg.get_by_label(INPUT_LABEL).input_value() == first and params(pg)["s"] == first

        translate_in_page(pg, MULTI30K)
        notes = pg.get_by_role("alert").filter(has_text=re.compile("model learned from|unusual for the model"))
        assert notes.count() == 0
        assert pg.locator("[class*='st-key-neighbour_']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_neighbour_buttons_are_reached_with_tab_and_pressed_with_enter(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?" + urlencode({"s": EVERYDAY}))
    try:
        pg.get_by_label(INPUT_LABEL).focus()
        reached = []
        for _ in range(6):  # the examples box, then the note's buttons
            pg.keyboard.press("Tab")
            reached.append(pg.evaluate("document.activeElement.closest('[class*=st-key-neighbour_]')?.className"
                                       ".match(/st-key-(neighbour_\\d)/)[1] ?? null"))
            if reached[-1] == "neighbour_1":
                break
        assert [r for r in reached if r] == ["neighbour_0", "neighbour_1"], reached
        second = neighbours(pg)[1].inner_text()
        pg.keyboard.press("Enter")
        pg.wait_for_function("s => new URLSearchParams(location.search).get('s') === s", arg=second, timeout=60_000)
        wait_idle(pg, 60_000)
        assert pg.get_by_label(INPUT_LABEL).input_value() == second
    finally:
        ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_where_it_learned_this_step_opens_the_training_evidence_at_that_step(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Hund+rennt+durch+den+Schnee.&view=trace")
    try:
        pg.get_by_text("Step 1 of").wait_for(timeout=60_000)
        wait_idle(pg, 60_000)
        for step in (2, 3):
            pg.get_by_role("button", name="Next ▶").click()
            pg.get_by_text(f"Step {step} of").wait_for(timeout=30_000)
        for step in (3, 2):  # and again, from the trace the view switch leads back to, a step earlier
            pg.get_by_role("button", name="Where it learned this step").click()
            pg.wait_for_function("new URLSearchParams(location.search).get('view') === 'evidence'", timeout=60_000)
            wait_idle(pg, 60_000)
            assert params(pg)["step"] == str(step), pg.url
            assert pg.get_by_role("radio", name="Training evidence").get_attribute("aria-checked") == "true"
            assert pg.locator("[data-testid=stSliderThumbValue]").inner_text().startswith(f"{step}: ")
            pg.get_by_text(re.compile(rf"^Step {step}: <sos>")).wait_for(timeout=30_000)  # the chips of that step
            table = pg.locator("[data-testid=stDataFrame]").last  # its cells are drawn once in view
            table.scroll_into_view_if_needed()
            table.locator("th", has_text="training sentence").wait_for(state="attached", timeout=30_000)  # for readers
            assert table.locator("td").count() >= 5  # the five nearest training steps
            if step == 3:
                pick_view(pg, "Decoding trace")
                pg.get_by_text("Step 3 of").wait_for(timeout=60_000)
                wait_idle(pg, 60_000)
                pg.get_by_role("button", name="◀ Previous").click()
                pg.get_by_text("Step 2 of").wait_for(timeout=30_000)
        SHOTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(SHOTS / "trace-to-evidence.png"))
    finally:
        ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_evidence_link_marks_the_word_and_another_word_changes_it(browser, server):
    link = f"{server}/?" + urlencode({"s": "Der Zug nach Berlin hat Verspätung.", "view": "evidence", "word": 2,
                                      "step": 2})
    ctx, pg, errors = sized(browser, link, 390, 844)
    try:
        said = pg.get_by_text(re.compile("^“zug” occurs in"))
        assert said.count() == 1 and said.is_visible()
        marks = pg.locator("p mark")
        assert marks.count() >= 1 and set(marks.all_inner_texts()) == {"Zug"}
        assert marks.first.locator("xpath=../i").count() == 1  # in a training pair: its English under it
        pg.get_by_role("radiogroup", name="Word").get_by_role("radio", name="nach", exact=True).click()
        pg.get_by_text(re.compile("^“nach” occurs in")).wait_for(timeout=30_000)
        wait_idle(pg, 60_000)
        assert said.count() == 0 and params(pg)["word"] == "3"
        assert set(pg.locator("p mark").all_inner_texts()) <= {"nach", "Nach"}
        assert pg.evaluate("document.documentElement.scrollWidth") <= 391
        assert pg.locator("[data-testid=stException]").count() == 0
        SHOTS.mkdir(exist_ok=True)
        pg.set_viewport_size({"width": 390, "height": 4000})  # the whole view in one picture (the page scrolls inside)
        wait_idle(pg)
        pg.screenshot(path=str(SHOTS / "evidence-390.png"))
    finally:
        ctx.close()
    assert not errors, errors
