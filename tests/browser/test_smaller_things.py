"""The smaller things seen on a phone, at a projector and in the dark theme, each fixed at its root: the training
replay's map title is never cut, its curves' axis says what it is and whose run they are; the decoder
self-attention of step 1 says why it is one solid block; the decoding trace forces any word of the model's
vocabulary, as the command line does, and marks it in the result; the Contributions maps have room; labelled bars
draw no gridline through their numbers; a map's CSV names its rows as the page does."""

import pytest

from appserver import wait_idle


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 390])
def test_the_training_maps_title_is_never_cut(browser, server, width):
    """At step 0 the map is narrow (50 rows of an untrained model's output): its title and its sentence stay
    inside the chart, on a projector and on a phone."""
    ctx = browser.new_context(viewport={"width": width, "height": 1200})
    pg = ctx.new_page()
    pg.goto(server + "/?s=Ein+Typ+arbeitet+an+einem+Geb%C3%A4ude.&view=training&at=0")
    pg.locator(".js-plotly-plot .gtitle", has_text="Cross-attention, layer").wait_for(timeout=120_000)
    wait_idle(pg, 120_000)
    out = pg.evaluate("""() => {
        const t = [...document.querySelectorAll('.js-plotly-plot .gtitle')]
            .find(e => e.textContent.startsWith('Cross'));
        const plot = t.closest('.js-plotly-plot').getBoundingClientRect();
        const box = t.closest('.explorer-figure').getBoundingClientRect();
        const sub = t.closest('svg').querySelector('.gtitle-subtitle');
        return {title: t.getBoundingClientRect().right, sub: sub ? sub.getBoundingClientRect().right : 0,
                right: Math.min(plot.right, box.right, window.innerWidth)}; }""")
    ctx.close()
    assert out["title"] <= out["right"] + 1 and out["sub"] <= out["right"] + 1, out


LONG = ("Eine Gruppe von Menschen steht vor einem Iglu, während im Hintergrund ein Mann auf Skiern fährt und Kinder "
        "spielen.")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("sentence", ["Zwei Männer spielen Fußball auf einer Wiese.", LONG])
def test_the_contributions_maps_have_room_at_1400_px(browser, server, sentence):
    """Three maps in a 1400 px row left each about 160 px of cells; two a row (a row each for a long sentence), each
    at its own size, leave each well over 250."""
    from urllib.parse import quote_plus

    ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
    pg = ctx.new_page()
    pg.goto(server + f"/?s={quote_plus(sentence)}&view=contributions")
    pg.locator(".js-plotly-plot .gtitle", has_text="ALTI+: prefix tokens").wait_for(timeout=120_000)
    wait_idle(pg, 120_000)
    sizes = pg.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')]
        .filter(g => g.querySelector('.heatmaplayer .hm'))
        .map(g => [g.querySelector('.gtitle').textContent,
                   Math.round(g.querySelector('.nsewdrag').getBoundingClientRect().width)]))""")
    ctx.close()
    assert len(sizes) == 3 and all(w >= 250 for w in sizes.values()), sizes


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("view, chart", [("contributions", "Source share"), ("trace", "Top candidates")])
def test_no_gridline_runs_through_a_bars_number_in_the_dark(browser, server, view, chart):
    """In the dark theme, no gridline crosses a bar's printed number (a chart of views/figure.js, and the trace's)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1400}, color_scheme="dark")
    pg = ctx.new_page()
    pg.goto(server + f"/?s=Zwei+M%C3%A4nner+spielen+Fu%C3%9Fball+auf+einer+Wiese.&view={view}")
    pg.locator(".js-plotly-plot .gtitle", has_text=chart).wait_for(timeout=120_000)
    wait_idle(pg, 120_000)
    crossed = pg.evaluate("""title => {
        const g = [...document.querySelectorAll('.js-plotly-plot')]
            .find(p => p.querySelector('.gtitle')?.textContent.startsWith(title));
        const texts = [...g.querySelectorAll('.bartext')].map(t => [t.textContent, t.getBoundingClientRect()]);
        const lines = [...g.querySelectorAll('.gridlayer path')].map(p => p.getBoundingClientRect());
        const meet = (l, t) => l.left <= t.right && t.left <= l.right && l.top <= t.bottom && t.top <= l.bottom;
        return texts.filter(([, t]) => lines.some(l => meet(l, t)))
                    .map(([s]) => s).concat(texts.length ? [] : ['no numbers found']); }""", chart)
    ctx.close()
    assert crossed == [], crossed
