"""The Feed-forward features view in Chromium (slow tier, the shipped model and its transcoders): a feature is picked
from the list with the keyboard, its page opens, it is switched off with a click, and the translation with the edit,
its probabilities and the link follow."""

import pytest

from conftest import CHECKPOINT, fresh_page
from model import transcoders as T

pytestmark = pytest.mark.skipif(not (CHECKPOINT / T.INDEX).is_file(),
                                reason="the shipped checkpoint has no transcoders index")


def test_pick_a_feature_and_switch_it_off(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Zwei+Hunde+spielen+im+Schnee.&view=features&fblock=enc.2")
    try:
        box = pg.locator(".st-key-feat_pick")
        box.wait_for(timeout=90_000)
        box.locator("input").focus()
        pg.keyboard.press("ArrowDown")
        pg.keyboard.press("Enter")
        pg.wait_for_url("**feat=enc.2.**", timeout=60_000)
        pg.get_by_text("Where it is strongest in the training sentences").wait_for(timeout=60_000)
        assert pg.locator("mark").count() >= 1  # the token where the feature fires, highlighted
        pg.locator(".js-plotly-plot").filter(has_text="its activations").wait_for(timeout=60_000)  # the histogram
        pg.get_by_role("button", name="Apply to the translation").click()  # the scale's default: 0, off
        pg.wait_for_url("**fedit=enc.2.**", timeout=60_000)
        pg.get_by_text("With the edits:").wait_for(timeout=60_000)
        plot = pg.locator(".js-plotly-plot").filter(has_text="Probability of each")
        plot.wait_for(timeout=60_000)
        assert pg.url.endswith("%3D0")  # the scale 0 (off), "=" escaped in the link
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors
