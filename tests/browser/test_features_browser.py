"""The Feed-forward features view in Chromium (slow tier, the shipped model and its transcoders): a feature is picked
from the list with the keyboard, another by a click on its cell in the table, its page opens (its contexts with the
token marked, its histogram), it is switched off from the keyboard, and the translation with the edit, its
probabilities, the maps and the link follow."""

import re

import pytest

from conftest import CHECKPOINT, fresh_page
from model import transcoders as T

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not (CHECKPOINT / T.WEIGHTS).is_file(),
                                 reason="the shipped checkpoint has no transcoders "
                                        "(python -m model.transcoders train, then index)")]

S = "Zwei Hunde spielen im Schnee."
# The table's columns before the features, in px (views/features.py features_table): #, source token, ‖FFN‖, error,
# error / ‖FFN‖; then the 1st feature's column. Streamlit's rows and header are 35 px high.
BEFORE_FIRST, ROW = 40 + 120 + 70 + 70 + 100, 35


def test_pick_a_feature_and_switch_it_off(browser, server, translator):
    dicts = T.load(CHECKPOINT)[0]
    top = {b.block: b for b in T.sentence_features(translator, dicts, translator.force(S))}["enc.2"].top
    ctx, pg, errors = fresh_page(browser, f"{server}/?s={S.replace(' ', '+')}&view=features&fblock=enc.2")
    try:
        box = pg.locator(".st-key-feat_pick")
        box.wait_for(timeout=90_000)
        box.locator("input").focus()  # the list, by keyboard: its first entry is the block's strongest feature here
        pg.keyboard.press("ArrowDown")
        pg.keyboard.press("Enter")
        strongest = max((f for row in top for f in row), key=lambda fv: fv[1])[0]
        pg.wait_for_url(f"**feat=enc.2.{strongest}", timeout=60_000)
        pg.get_by_text("Where it is strongest in the training sentences").wait_for(timeout=60_000)

        grid = pg.locator("[data-testid='stDataFrame']").first.bounding_box()
        row = 2  # "hunde": its 1st feature's cell, clicked
        pg.mouse.click(grid["x"] + BEFORE_FIRST + 60, grid["y"] + ROW * (row + 1) + ROW / 2)
        picked = f"enc.2.{top[row][0][0]}"
        pg.wait_for_url(f"**feat={picked}", timeout=60_000)
        pg.get_by_text(f"Feature {picked}", exact=False).first.wait_for(timeout=60_000)
        assert pg.locator("mark").count() >= 1  # the token where the feature fires, marked
        pg.locator(".js-plotly-plot").filter(has_text="its activations").wait_for(timeout=60_000)  # the histogram

        switch = pg.get_by_role("button", name=f"Switch {picked} off")  # the scale's default: 0, off
        switch.focus()
        pg.keyboard.press("Enter")
        pg.wait_for_url(re.compile(rf"fedit=enc\.2\.{top[row][0][0]}%3D0"), timeout=60_000)
        pg.get_by_text("With the edits:").wait_for(timeout=60_000)
        pg.get_by_text(f"{picked} off").first.wait_for(timeout=60_000)  # the edits in force
        for title in ("Each original token", "mean of every head"):
            pg.locator(".js-plotly-plot").filter(has_text=title).first.wait_for(timeout=60_000)
        assert pg.locator(".js-plotly-plot").filter(has_text="mean of every head").count() >= 2
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors
