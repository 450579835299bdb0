"""A first visit in the browser: the bare address opens the walk under "Start here"; a family's button opens its
first view, the link follows and the keyboard focus moves into the view; on a phone, after Enter, the translation
and the walk's first stop are on the screen (they were two screens down, below 21 buttons)."""

from appserver import pick_view, translate_in_page, wait_idle
from conftest import fresh_page

SENTENCE = "Ein Hund rennt durch den Schnee."


def checked(pg, group: str, name: str) -> bool:
    radio = pg.get_by_role("radiogroup", name=group).get_by_role("radio", name=name, exact=True)
    return radio.get_attribute("aria-checked") == "true"


def test_the_bare_address_opens_the_walk_and_a_family_opens_its_first_view(browser, server):
    ctx, pg, errors = fresh_page(browser, server)
    try:
        translate_in_page(pg, SENTENCE)
        assert checked(pg, "Sections", "Start here") and checked(pg, "View", "Walk through the model")
        pg.get_by_text("Stop 1 of 11").wait_for(timeout=30_000)
        assert "view=walk" in pg.url
        pg.get_by_role("radiogroup", name="Sections").get_by_role("radio", name="Attention", exact=True).click()
        pg.wait_for_function("new URLSearchParams(location.search).get('view') === 'cross'", timeout=30_000)
        wait_idle(pg)
        assert checked(pg, "View", "Cross-attention")
        pg.locator(".explorer-maps .chart").first.wait_for(timeout=30_000)  # the map is drawn
        pg.wait_for_function("() => !!document.activeElement.closest('.st-key-view_box')", timeout=30_000)
        pick_view(pg, "Beam search")  # a view of another family, as a visitor reaches it
        pg.wait_for_function("new URLSearchParams(location.search).get('view') === 'beam'", timeout=60_000)
        assert checked(pg, "Sections", "More")
        assert not errors, errors
    finally:
        ctx.close()


def test_on_a_phone_the_translation_and_the_walk_are_on_the_first_screen_after_enter(browser, server):
    """At 390 x 844 the frame above the view fills more than a screen: after Enter the translation comes to the top
    and the walk's first stop starts on the same screen; at 1400 px the page does not move."""
    ctx, pg, errors = fresh_page(browser, server, viewport={"width": 390, "height": 844}, is_mobile=True,
                                 has_touch=True)
    try:
        translate_in_page(pg, SENTENCE)
        stop = pg.get_by_text("Stop 1 of 11")
        stop.wait_for(timeout=30_000)
        pg.wait_for_timeout(500)
        top = lambda sel: pg.locator(sel).first.evaluate("e => e.getBoundingClientRect().top")  # noqa: E731
        assert 0 <= top(".translation") < 200 and 0 < stop.evaluate("e => e.getBoundingClientRect().bottom") < 844
        assert not errors, errors
    finally:
        ctx.close()
    ctx, pg, errors = fresh_page(browser, server)
    try:
        before = pg.locator("h1").first.evaluate("e => e.getBoundingClientRect().top")
        translate_in_page(pg, SENTENCE)
        assert pg.locator("h1").first.evaluate("e => e.getBoundingClientRect().top") == before
    finally:
        ctx.close()


def test_on_a_phone_formulas_stay_on_screen_no_toolbar_covers_a_chart_and_no_keyboard_hint(browser, server):
    """At 390 px on a touch screen: the walk's formula (stop 9's is the widest) ends within the screen (it scrolls
    inside its own box), no chart toolbar is shown over a title or past the screen's edge, and the walk's and the
    trace's keyboard hints are hidden; at 1400 px with a mouse the hint is there."""
    link = "/?s=Ein+Mann+in+einem+pinken+Hemd+sitzt+auf+dem+Gras.&view=walk&stop=9"
    ctx, pg, errors = fresh_page(browser, server + link, viewport={"width": 390, "height": 844}, is_mobile=True,
                                 has_touch=True)
    try:
        pg.locator(".katex-display").first.wait_for(timeout=30_000)
        pg.locator(".st-key-view_box .js-plotly-plot").first.wait_for(timeout=30_000)
        wait_idle(pg)
        boxes = pg.evaluate("""() => [...document.querySelectorAll('.katex-display')].map(e => ({
            right: e.getBoundingClientRect().right, fits: e.scrollWidth <= e.clientWidth + 1,
            scrolls: ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)}))""")
        assert boxes and all(b["right"] <= 390 and (b["fits"] or b["scrolls"]) for b in boxes), boxes
        shown = pg.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .modebar-container')]"
                            ".filter(e => e.getBoundingClientRect().width > 0).length")
        assert shown == 0
        assert not pg.locator(".keys-hint").first.is_visible()
        assert not errors, errors
    finally:
        ctx.close()
    ctx, pg, errors = fresh_page(browser, server + link)
    try:
        pg.locator(".keys-hint").first.wait_for(state="visible", timeout=30_000)
        assert "← and → keys step too" in pg.locator(".keys-hint").first.inner_text()
    finally:
        ctx.close()


def test_on_a_phone_the_multi_head_tiles_stay_readable_and_labelled(browser, server):
    """At 390 px the walk's eight head tiles keep cells of at least 4 px (viz TILE_LEGIBLE_PX; the figure scrolls
    sideways past the screen) instead of shrinking to the screen, each tile named by its head, the row by its layer,
    the title on screen."""
    link = "/?s=Ein+Mann+in+einem+pinken+Hemd+sitzt+auf+dem+Gras.&view=walk&stop=4"
    ctx, pg, errors = fresh_page(browser, server + link, viewport={"width": 390, "height": 844}, is_mobile=True,
                                 has_touch=True)
    try:
        plot = pg.locator(".st-key-view_box .js-plotly-plot").first
        plot.wait_for(timeout=30_000)
        wait_idle(pg)
        cells, heads, title_left = plot.evaluate("""g => [g._fullLayout.xaxis._length / g._fullLayout.xaxis.range
            .reduce((a, b) => b - a), [...g.querySelectorAll('.xtick text')].map(t => t.textContent),
            g.querySelector('.gtitle').getBoundingClientRect().left]""")
        assert cells >= 4 - 0.01, cells
        assert heads == [f"head {h}" for h in range(1, 9)] and 0 <= title_left < 390
        assert not errors, errors
    finally:
        ctx.close()
