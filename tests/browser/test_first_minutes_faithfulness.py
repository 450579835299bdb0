"""The Faithfulness view's tables in Chromium draw "—" for what was not measured, as their captions say, never
"None" (Streamlit's grid draws a missing value as "None" unless told otherwise)."""

import pytest

from appserver import wait_idle

# Streamlit's tables are drawn on a canvas: record every text the page draws there.
RECORD_CANVAS_TEXT = """(() => { window.drawn = []; const fill = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
        window.drawn.push(String(text)); return fill.call(this, text, ...rest); }; })()"""


@pytest.mark.slow
@pytest.mark.browser
def test_the_tables_draw_a_dash_where_nothing_was_measured(browser, server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 2200})
    ctx.add_init_script(RECORD_CANVAS_TEXT)
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        pg.goto(f"{server}/?s=Ein+Hund+läuft.&view=faithful&step=1")
        pg.wait_for_function("() => window.drawn.includes('alignment error (AER)')", timeout=120_000)
        wait_idle(pg, 120_000)
        for table in pg.locator("[data-testid='stDataFrame']").all()[:2]:  # the step's, the test set's: to the end
            table.scroll_into_view_if_needed()
            table.hover()
            pg.mouse.wheel(0, 2000)
        pg.wait_for_function("() => window.drawn.includes('random orders (20)')", timeout=30_000)
        drawn = pg.evaluate("window.drawn")
        assert "None" not in drawn and "—" in drawn, sorted(set(drawn))  # attention and rollout have no AER
    finally:
        ctx.close()
    assert not errors, errors
