"""The Attributions view on the page (slow tier: AppTest and Chromium on the shipped model): every method draws, the
maps are the Translator's own numbers read back from the charts, and the link keeps the method and the foil."""

import pytest

from conftest import fresh_page


@pytest.mark.browser
def test_the_view_in_a_browser_draws_both_maps(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Hund+läuft.&view=attribute&method=leave_one_out")
    try:
        for title in ("Leave-one-out: source tokens", "Leave-one-out: prefix tokens"):
            plot = pg.locator(".js-plotly-plot").filter(has_text=title)
            plot.wait_for(timeout=30_000)
            assert plot.locator(".hm image").count() >= 1, title  # the cells, drawn
        assert pg.locator(".js-plotly-plot").filter(has_text="Source share of every step").count() == 1
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors
