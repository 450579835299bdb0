"""The first minutes with "Compare with: heads switched off": typing a layer's name and pressing Enter switches off
that layer's heads and no other (Streamlit's default fuzzy filter had matched cross L1 H3 and L2 H3 too, and Enter
took its "Select 10 matches")."""

from urllib.parse import parse_qs, urlparse

import pytest

from appserver import wait_idle
from conftest import fresh_page


@pytest.mark.slow
@pytest.mark.browser
def test_typing_a_layer_and_enter_switches_off_exactly_its_heads(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Hund+läuft.&view=cross&vs=off")
    try:
        box = pg.locator(".stMultiSelect").filter(has_text="Heads to switch off").locator("input")
        box.click()
        box.press_sequentially("cross L3")
        box.press("Enter")
        pg.wait_for_function("new URLSearchParams(location.search).has('off')", timeout=30_000)
        wait_idle(pg)
        off = parse_qs(urlparse(pg.url).query)["off"]
        caption = pg.get_by_text("greedy decoding says").inner_text()
        assert off == ["cross.3"], off  # the link names the whole layer, and nothing else
        assert "Without those 8 heads" in caption, caption
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        ctx.close()
    assert not errors, errors
