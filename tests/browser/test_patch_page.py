"""The Causes view on the page (slow tier: AppTest and Chromium on the shipped model): the maps are model/patch.py's
own effects read back from the charts, the link keeps the second sentence and the direction, a contrast pair picked
becomes the page's sentences, and a second sentence of another length is a plain warning."""

from conftest import fresh_page


def test_the_view_in_a_browser_draws_and_switches_direction(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Zwei+Hunde+rennen+durch+den+Schnee.&view=patch"
                                          "&s2=Zwei+Katzen+rennen+durch+den+Schnee.")
    try:
        plot = pg.locator(".js-plotly-plot").filter(has_text="Encoder: the residual")
        plot.wait_for(timeout=90_000)
        assert plot.locator(".hm image, .heatmaplayer").count() >= 1
        pg.get_by_text("corrupted into clean").click()
        pg.wait_for_url("**dir=noising**", timeout=60_000)
        assert pg.get_by_text("destroys the clean word").count() >= 1
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors
