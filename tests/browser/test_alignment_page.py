"""The Alignment and Training views on the page: by link under AppTest (numbers against model/align.py), and
clicked in a real browser (a head, a rule, a snapshot), the link following each click."""

import json

from conftest import CHECKPOINT, wait_for_title
from page.test_alignment_page import LINE0


def test_alignment_and_training_views_in_the_browser(page, server):
    from appserver import pick_view, wait_idle

    page.goto(f"{server}/?s={LINE0.de}&view=align")
    page.get_by_text("Annotated test sentence (line 0)").wait_for(timeout=60_000)
    page.get_by_role("radiogroup", name="Rule").get_by_role("radio", name="Shift-Att").click()
    page.wait_for_function("new URLSearchParams(location.search).get('rule') === 'shift'", timeout=30_000)
    page.get_by_role("radiogroup", name="Head").get_by_role("radio", name="4", exact=True).click()
    page.wait_for_function("new URLSearchParams(location.search).get('head') === '4'", timeout=30_000)
    wait_idle(page)
    wait_for_title(page, "Alignment from attention weights, layer 3, head 4, Shift-Att")
    assert page.locator("[data-testid='stException']").count() == 0
    if not (CHECKPOINT / "replay/replay.json").is_file():
        return
    m = json.loads((CHECKPOINT / "replay/replay.json").read_text())
    pick_view(page, "Training")
    page.wait_for_function("new URLSearchParams(location.search).get('view') === 'training'", timeout=60_000)
    wait_idle(page)
    slider = page.get_by_role("slider")
    slider.focus()
    slider.press("Home")  # the first snapshot: the untrained model
    first = m["snapshots"][0]["step"]
    page.wait_for_function(f"new URLSearchParams(location.search).get('at') === '{first}'", timeout=30_000)
    wait_idle(page)
    page.get_by_text(f"At step {first:,} (epoch").first.wait_for(timeout=30_000)
    assert page.locator("[data-testid='stException']").count() == 0
