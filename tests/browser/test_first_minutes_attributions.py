"""The first minutes in Attributions, in Chromium: the view opens on the method the shipped faithfulness table trusts
(not input × gradient, which the table's verdict calls neither faithful nor plausible) and says why, and its two maps
share one colour range unless the reader switches that off."""

import json

import pytest

from appserver import wait_idle
from conftest import CHECKPOINT, fresh_page, wait_for_title
from model.faithfulness import Table
from model.methods import METHODS as TABLE
from views.attributions import trusted

RANGES = """() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')]
    .filter(g => g.layout && g.layout.coloraxis && /(source|prefix) tokens/.test(String(g.layout.title.text)))
    .map(g => [String(g.layout.title.text).match(/(source|prefix) tokens/)[1], g.layout.coloraxis.cmax]))"""


@pytest.mark.slow
@pytest.mark.browser
def test_the_view_opens_on_the_trusted_method_with_one_colour_range(browser, server):
    key = trusted(Table.from_json(json.loads((CHECKPOINT / "faithfulness.json").read_text())))[0]
    best = TABLE[key].label
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Zwei+Männer+spielen+Fußball+auf+einer+Wiese.&view=attribute")
    try:
        wait_for_title(pg, f"{best.capitalize()}: prefix tokens", 60_000)
        wait_idle(pg)
        assert f"method={key}" in pg.url
        assert pg.get_by_text("the shipped faithfulness table finds it faithful and plausible").count() == 1
        shared = pg.evaluate(RANGES)
        assert len(shared) == 2 and shared["source"] == shared["prefix"], shared  # one range, by default
        pg.get_by_text("One colour range for both maps").click()
        wait_idle(pg)
        pg.wait_for_function(f"() => {{ const r = ({RANGES})(); return r.source !== r.prefix; }}", timeout=30_000)
        own = pg.evaluate(RANGES)  # switched off: each map to its own largest score
        assert max(own.values()) == pytest.approx(shared["source"]) and min(own.values()) < shared["source"], own
    finally:
        ctx.close()
    assert not errors, errors
