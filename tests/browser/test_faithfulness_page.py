"""The Faithfulness view on the page (slow tier: AppTest and Chromium on the shipped model): the curves and scores are
model/faithfulness.py's own numbers read back from the chart and the table, the verdict is computed from the shipped
table, the link keeps the step and the side, each method links to the view that draws it, and the views that draw an
explanation say how far to trust it."""

from conftest import fresh_page, wait_for_title, wait_idle


def test_the_view_in_a_browser_switches_side_and_step(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Hund+läuft+über+die+Wiese.&view=faithful&step=3")
    try:
        plot = pg.locator(".js-plotly-plot").filter(has_text="Step 3:")
        plot.wait_for(timeout=60_000)
        assert "German tokens" in plot.inner_text()
        pg.get_by_text("English words written before").click()
        wait_for_title(pg, "English prefix words", 60_000)
        wait_idle(pg)
        assert "side=prefix" in pg.url and "step=3" in pg.url
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors
