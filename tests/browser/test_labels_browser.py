"""Every token labelled (viz/attention.py): the cross-attention map of a long sentence in headless Chromium names
each German token on its key axis and each decoder row on its query axis, on a desktop and on a phone (where the
map, wider than the screen, scrolls sideways instead of dropping labels: views/explorer.js `fitted`)."""

import pytest

from appserver import INPUT_LABEL, draw_every_chart, translate_in_page
from browser.test_browser import overlapping, tick_boxes
from conftest import CHECKPOINT
from integration.test_long_sentences import LONG
from viz.labels import predicting


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("width, height", [(1400, 1000), (390, 844)])
def test_every_token_of_a_long_sentence_is_labelled_on_the_cross_attention_map(browser, server, shipped_models, width,
                                                                               height):
    r = shipped_models(CHECKPOINT).translate(LONG)
    keys = [t + (" [unk]" if u else "") for t, u in zip(r.src_tokens, r.src_unknown)]
    rows = predicting(r.tgt_tokens, [s.token for s in r.steps])
    assert len(keys) == 37 and len(rows) > 20 and max(map(len, keys + rows)) <= 2 * 16 + 3  # none shortened
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    try:
        pg.goto(server + "/?view=cross")
        pg.get_by_label(INPUT_LABEL).wait_for(timeout=30_000)
        translate_in_page(pg, LONG, 120_000)
        draw_every_chart(pg)
        pg.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        for axis, names in (("xtick", keys), ("ytick", rows)):
            boxes = tick_boxes(pg, axis)
            assert sorted(b[0] for b in boxes) == sorted(names), (axis, width, [b[0] for b in boxes])
            assert not overlapping(boxes), (axis, width, overlapping(boxes)[:5])
        assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1  # the map scrolls, not the page
    finally:
        ctx.close()
