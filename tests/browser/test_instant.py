"""Picks drawn in the browser (views/maps.js): a change of layer, head, mean, drawing, colour stretch, a grid tile or
a token's lines runs no script, draws the translator's own numbers, and the address bar follows it (slow tier:
the real app in headless Chromium)."""

import gzip
import re
import urllib.parse
import urllib.request

import numpy as np
import pytest

from appserver import draw_every_chart, pick_view, translate_in_page, wait_idle
from views.instant import plotly_source, serve_plotly


pytestmark = pytest.mark.slow

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."


@pytest.fixture(scope="module")
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 2400})
    pg = ctx.new_page()
    pg.goto(server + "/?view=cross")  # the attention views' instant picks start on Cross-attention
    translate_in_page(pg, SENTENCE)
    yield pg
    ctx.close()


def runs(page) -> int:
    """How many times a view ran in this session (the page shows it for tests: EXPLORER_COUNT_RUNS)."""
    return int(page.locator(".view-runs").last.text_content())


def radio(page, group: str, name: str):
    return page.locator(".explorer-maps").get_by_role("radiogroup", name=group).get_by_role("radio", name=name,
                                                                                            exact=True)


def drawn(page, n: int = 0) -> dict:
    """Title, values (None where masked), colour range and visible traces of the n-th chart of the maps."""
    return page.evaluate("""n => { const gd = document.querySelectorAll('.explorer-maps .chart')[n];
        return {title: gd.layout.title.text, z: gd.data[0].z, cmax: gd.layout.coloraxis && gd.layout.coloraxis.cmax,
                visible: gd.data.map(t => t.visible === undefined ? true : t.visible),
                names: gd.data.map(t => t.name)}; }""", n)


MARK = "box => document.querySelectorAll(box + ' .chart .main-svg').forEach(svg => { svg.explorerMark = 1; })"
KEPT = ("box => [...document.querySelectorAll(box + ' .chart')]"
        ".map(gd => gd.querySelector('.main-svg').explorerMark === 1)")


def link(page) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.url).query))


def test_layer_head_mean_and_stretch_are_drawn_here_with_the_models_numbers(page, translator):
    want = translator.translate(SENTENCE).cross_attentions  # (L, H, T, S)
    before = runs(page)
    for layer, head in [(3, 2), (3, 5), (1, 5), (2, None), (2, 8)]:
        radio(page, "Layer", str(layer)).click()
        radio(page, "Head", "mean" if head is None else str(head)).click()
        name = "mean of the 8 heads" if head is None else f"head {head}"
        page.wait_for_function("t => document.querySelector('.explorer-maps .chart').layout.title.text === t",
                               arg=f"Cross-attention, layer {layer}, {name}")
        got = drawn(page)
        expect = want[layer - 1].mean(axis=0) if head is None else want[layer - 1, head - 1]
        np.testing.assert_allclose(np.array(got["z"], float), expect, atol=5.01e-5)
        assert got["cmax"] == 1
        assert link(page) == {"s": SENTENCE, "view": "cross", "layer": str(layer),
                              "head": "mean" if head is None else str(head)}
    page.locator(".explorer-maps label.stretch input").check()
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.coloraxis.cmax < 1")
    assert drawn(page)["cmax"] == pytest.approx(want[1, 7].max(), abs=5.01e-5)
    page.locator(".explorer-maps label.stretch input").uncheck()
    assert runs(page) == before  # none of it ran the script


def test_lines_a_token_and_a_grid_tile_run_no_script(page):
    before = runs(page)
    radio(page, "Layer", "2").click()
    radio(page, "Head", "3").click()
    radio(page, "Draw as", "lines").click()
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').data[0].mode === 'lines'")
    got = drawn(page)
    heads = {n: v for n, v in zip(got["names"], got["visible"]) if n.startswith("head")}
    assert heads["head 3"] is True and heads["head 1"] == "legendonly"  # one head, the others a click away
    assert link(page)["draw"] == "lines"
    page.get_by_text("Show every token's lines").wait_for(state="hidden")
    page.evaluate("""() => { const gd = document.querySelector('.explorer-maps .chart');
        const q = gd.data.findIndex(t => t.name === 'query tokens');
        gd.emit('plotly_click', {points: [{customdata: gd.data[q].customdata[1]}]}); }""")  # query token 1
    page.get_by_text("Show every token's lines (now only query 1)").wait_for()
    ys = page.evaluate("""() => document.querySelector('.explorer-maps .chart').data
        .filter(t => t.mode === 'lines').flatMap(t => t.y.filter((_, i) => i % 3 === 0))""")
    assert ys and set(ys) == {1}  # only the lines of query 1
    page.get_by_text("Show every token's lines (now only query 1)").click()
    radio(page, "Draw as", "map").click()
    assert "draw" not in link(page)
    # A real click on a tile of the all-heads grid: layer 1, head 7, at its first cell.
    box = page.evaluate("""() => { const gd = document.querySelector('.explorer-maps .grid');
        const cells = gd._fullData[0].customdata;  // rows of [layer, head, query, key], null in the gaps
        const row = cells.findIndex(r => r.some(c => c && c[0] === '1' && c[1] === '7'));
        const col = cells[row].findIndex(c => c && c[0] === '1' && c[1] === '7');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
        return {x: r.left + xa._offset + xa.l2p(col), y: r.top + ya._offset + ya.l2p(row)}; }""")
    page.mouse.click(box["x"], box["y"])
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text === "
                           "'Cross-attention, layer 1, head 7'")
    assert link(page)["layer"] == "1" and link(page)["head"] == "7"
    assert runs(page) == before


def test_a_copied_link_opens_the_browsers_pick_and_a_rerun_keeps_it(page, browser):
    radio(page, "Layer", "2").click()
    radio(page, "Head", "6").click()
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text === "
                           "'Cross-attention, layer 2, head 6'")
    copied = page.url
    # A server choice reruns the view, and Streamlit writes its own idea of the link: the pick stays, in both.
    page.get_by_role("radiogroup", name="Values").get_by_role("radio", name="weighted norms ‖α·f(x)‖").click()
    wait_idle(page)
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text === "
                           "'Cross-attention, layer 2, head 6, norms ‖α·f(x)‖'")
    assert link(page)["values"] == "norms" and link(page)["head"] == "6" and link(page)["layer"] == "2"
    page.get_by_role("radiogroup", name="Values").get_by_role("radio", name="weights α").click()
    wait_idle(page)
    other = browser.new_page(viewport={"width": 1200, "height": 1600})
    other.goto(copied)
    other.wait_for_function("() => { const c = document.querySelector('.explorer-maps .chart');"
                            "return c && c.layout && c.layout.title.text === 'Cross-attention, layer 2, head 6'; }",
                            timeout=60_000)
    assert link(other) == link(page) | {"layer": "2", "head": "6"}
    other.close()


def test_a_pick_redraws_the_chart_in_place_and_the_camera_names_what_it_shows(page, tmp_path):
    """Plotly.react given other options than the last ones draws a chart anew from nothing (newPlot, then react): a
    pick keeps the chart's own SVG, and the toolbar's camera saves the picked map under its name, as a PNG."""
    radio(page, "Layer", "2").click()
    radio(page, "Head", "7").click()
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text"
                           ".includes('layer 2, head 7')")
    chart = page.locator(".explorer-maps .chart").first
    page.evaluate(MARK, ".explorer-maps")
    radio(page, "Layer", "1").click()
    radio(page, "Head", "4").click()
    page.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text"
                           ".includes('layer 1, head 4')")
    assert page.evaluate(KEPT, ".explorer-maps")[0]
    chart.hover()  # the toolbar as Streamlit's own charts have it: the camera, and nothing that uploads the chart
    titles = chart.locator(".modebar-btn").evaluate_all("bs => bs.map(b => b.getAttribute('data-title'))")
    assert "Download plot as a PNG" in titles and not any("Share" in t for t in titles), titles
    with page.expect_download() as info:
        chart.locator(".modebar-btn[data-title='Download plot as a PNG']").click()
    assert info.value.suggested_filename == "cross-layer1-head4.png"
    path = tmp_path / "map.png"
    info.value.save_as(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_chart_fills_its_column_follows_the_window_and_saves_under_its_name(browser, server, tmp_path):
    """The page's other charts (views/figure.js, views.widgets.chart): a "stretch" one is as wide as its column, and
    stays so when the window narrows; its camera saves it under its name."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
    pg = ctx.new_page()
    pg.goto(f"{server}/?view=positions&s={urllib.parse.quote(SENTENCE)}")
    pg.wait_for_function("document.querySelectorAll('.explorer-figure[data-ready]').length >= 3", timeout=60_000)
    box = pg.locator(".st-key-pos_map .explorer-figure")
    widths = "b => [b.clientWidth, b.querySelector('.js-plotly-plot')._fullLayout.width]"
    column, plotted = box.evaluate(widths)
    assert column > 400 and abs(plotted - column) <= 1, (column, plotted)
    pg.set_viewport_size({"width": 700, "height": 1600})
    pg.wait_for_function(f"() => {{ const b = document.querySelector('.st-key-pos_map .explorer-figure'); "
                         f"return b.clientWidth < {column} && Math.abs(b.clientWidth - "
                         "b.querySelector('.js-plotly-plot')._fullLayout.width) <= 1; }", timeout=10_000)
    chart = box.locator(".js-plotly-plot")
    chart.hover()
    with pg.expect_download() as info:
        chart.locator(".modebar-btn[data-title='Download plot as a PNG']").click()
    assert info.value.suggested_filename == "pos_map.png"
    info.value.save_as(tmp_path / "chart.png")
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ctx.close()


def test_a_view_visited_again_takes_its_drawn_charts_back_and_a_new_sentence_draws_anew(browser, server, translator):
    """A view left and visited again gets back the charts it had drawn (the same SVG, the same pick), with no
    plotly.js drawing; after a new sentence its charts are drawn anew, with the new sentence's numbers, and a pick
    after a return is drawn as ever (views/explorer.js takeBack)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
    pg = ctx.new_page()
    pg.goto(f"{server}/?view=cross&s={urllib.parse.quote(SENTENCE)}")
    pg.wait_for_selector(".explorer-maps[data-ready]", timeout=60_000)

    def visit(label: str, box: str):
        pick_view(pg, label)
        wait_idle(pg)
        pg.wait_for_selector(f"{box}[data-ready]", timeout=30_000)

    radio(pg, "Layer", "2").click()
    radio(pg, "Head", "3").click()
    pg.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text"
                         ".includes('layer 2, head 3')")
    pg.evaluate(MARK, ".explorer-maps")
    visit("Encoder self-attention", ".explorer-maps")
    visit("Cross-attention", ".explorer-maps")
    assert all(pg.evaluate(KEPT, ".explorer-maps")), "the charts were drawn anew"
    assert "layer 2, head 3" in drawn(pg)["title"]
    radio(pg, "Head", "5").click()  # a pick after the return is drawn
    pg.wait_for_function("() => document.querySelector('.explorer-maps .chart').layout.title.text"
                         ".includes('layer 2, head 5')")
    r = translator.translate(SENTENCE)
    np.testing.assert_allclose(np.array(drawn(pg)["z"], dtype=float), r.cross_attentions[1, 4], atol=5.01e-5)

    other = "Ein Hund rennt durch den Schnee."
    pg.evaluate(MARK, ".explorer-maps")
    visit("Encoder self-attention", ".explorer-maps")
    translate_in_page(pg, other)
    visit("Cross-attention", ".explorer-maps")
    assert not any(pg.evaluate(KEPT, ".explorer-maps")), "charts of the last sentence came back"
    got = drawn(pg)
    layer, head = re.search(r"layer (\d+), (?:head (\d+)|mean)", got["title"]).groups()
    maps = translator.translate(other).cross_attentions[int(layer) - 1]
    np.testing.assert_allclose(np.array(got["z"], dtype=float), maps.mean(axis=0) if head is None else
                               maps[int(head) - 1], atol=5.01e-5)
    ctx.close()


def test_the_maps_csv_is_the_picked_map(page, translator, tmp_path):
    import pandas as pd

    radio(page, "Layer", "1").click()
    radio(page, "Head", "4").click()
    with page.expect_download() as info:
        page.get_by_role("button", name="This map (CSV)").click()
    assert info.value.suggested_filename == "cross-layer1-head4.csv"
    path = tmp_path / "map.csv"
    info.value.save_as(path)
    csv = pd.read_csv(path, keep_default_na=False, dtype={"query_token": str, "key_token": str})
    r = translator.translate(SENTENCE)
    assert list(csv.columns) == ["query_pos", "query_token", "key_pos", "key_token", "weight"]
    assert list(csv.key_token[:len(r.src_tokens)]) == r.src_tokens
    grid = csv.pivot(index="query_pos", columns="key_pos", values="weight").to_numpy()
    np.testing.assert_allclose(grid, r.cross_attentions[0, 3], atol=5.01e-5)
    page.locator(".explorer-maps .tools input[type=checkbox]").first.check()  # and as a table: the same numbers
    cells = page.locator(".explorer-maps table tbody tr").first.locator("td").all_text_contents()
    np.testing.assert_allclose([float(c) for c in cells], r.cross_attentions[0, 3, 0], atol=5.01e-5)
    page.locator(".explorer-maps .tools input[type=checkbox]").first.uncheck()


def test_the_trace_steps_here_and_asks_the_server_only_for_a_what_if(page, translator):
    r = translator.translate(SENTENCE)
    L, H = r.cross_attentions.shape[:2]
    pick_view(page, "Decoding trace")
    page.get_by_text("Step 1 of").wait_for(timeout=20_000)
    wait_idle(page)
    before = runs(page)
    page.evaluate(MARK, ".explorer-trace")  # a step redraws each chart in place, not anew from nothing

    def at_step(t: int):  # 1-based; the charts of the trace: candidates, self-attention, cross-attention
        page.get_by_text(f"Step {t} of {len(r.steps)}.").wait_for()
        page.wait_for_function("t => location.search.includes('step=' + t)", arg=t)
        charts = page.locator(".explorer-trace .chart")
        cross = charts.nth(2).evaluate("g => g.data[0].z")
        np.testing.assert_allclose(np.array(cross), r.cross_attentions[:, :, t - 1].reshape(L * H, -1), atol=5.01e-5)
        own = charts.nth(1).evaluate("g => g.data[0].z")
        np.testing.assert_allclose(np.array(own), r.decoder_attentions[:, :, t - 1, :t].reshape(L * H, t),
                                   atol=5.01e-5)
        bar = charts.nth(0).evaluate("g => g.layout.yaxis.ticktext")
        assert any(r.steps[t - 1].token in label and "chosen" in label for label in bar)

    page.get_by_role("button", name="Next ▶").click()
    at_step(2)
    page.locator("body").press("ArrowRight")  # the arrow keys step anywhere but in a field
    at_step(3)
    page.locator(".explorer-trace input[type=range]").fill("5")
    at_step(5)
    page.get_by_role("button", name="◀ Previous").click()
    at_step(4)
    assert runs(page) == before  # stepping ran no script
    assert page.evaluate(KEPT, ".explorer-trace") == [True] * 3
    word = r.steps[3].top[1][0] if r.steps[3].top[0][0] == r.steps[3].token else r.steps[3].top[0][0]
    page.locator(".explorer-trace select").select_option(word)  # a what-if needs a decoding: the server's
    page.get_by_text("What-if translation").wait_for(timeout=30_000)
    wait_idle(page)
    assert runs(page) == before + 1 and link(page)["whatif"] == word and link(page)["step"] == "4"
    page.get_by_role("button", name="Next ▶").click()  # leaving its step drops it
    page.get_by_text("What-if translation").wait_for(state="detached", timeout=30_000)
    wait_idle(page)
    at_step(5)
    assert "whatif" not in link(page) and runs(page) == before + 2


def test_inside_a_head_follows_layer_head_and_query_here(page, translator):
    inside = translator.inside(SENTENCE)
    pick_view(page, "Inside a head")
    page.get_by_text("1. The query's input vector x").wait_for(timeout=30_000)
    wait_idle(page)
    before = runs(page)
    draw_every_chart(page, ".explorer-inside")  # the charts below the window are drawn when scrolled to
    page.evaluate(MARK, ".explorer-inside")
    # 1-based layer and head, 0-based query (as the page counts them)
    for layer, head, query in [(1, 5, 0), (1, 5, 2), (3, 2, 2), (2, 8, 4)]:
        for group, value in (("Layer", layer), ("Head", head)):
            page.locator(".explorer-inside").get_by_role("radiogroup", name=group).get_by_role(
                "radio", name=str(value), exact=True).click()
        page.locator(".explorer-inside input[type=range]").fill(str(query))
        page.get_by_text(f"Cross-attention, layer {layer}, head {head}, query {query}:").wait_for()
        tr = inside.head("cross", layer - 1, head - 1, query)
        draw_every_chart(page, ".explorer-inside")
        charts = page.locator(".explorer-inside .chart")
        x = charts.nth(0).evaluate("g => g.data[0].z")
        np.testing.assert_allclose(np.array(x)[0], tr.x, rtol=1e-6, atol=1e-6)
        chain = charts.nth(3).evaluate("g => g.data.map(t => t.x)")
        np.testing.assert_allclose(np.array(chain), np.stack([tr.scores, tr.scaled, tr.weights]), rtol=1e-5, atol=1e-6)
        out = charts.nth(5).evaluate("g => g.data[0].z")
        np.testing.assert_allclose(np.array(out)[0], tr.head_output, rtol=1e-5, atol=1e-6)
        after = charts.nth(8).evaluate("g => g.data[0].z")  # after W_O, the residual, LayerNorm, the layer's output
        np.testing.assert_allclose(np.array(after), np.stack([tr.attn_out, tr.residual, tr.normed, tr.layer_output]),
                                   rtol=1e-5, atol=1e-5)
        assert (link(page)["layer"], link(page)["head"], link(page)["query"]) == (str(layer), str(head), str(query))
    assert runs(page) == before
    assert page.evaluate(KEPT, ".explorer-inside") == [True] * 9  # each chart redrawn in place


def test_inside_a_head_draws_a_chart_below_the_window_when_scrolled_to(browser, server, translator):
    """Inside a head mounts with `later` (views/explorer.js): on a 900 px window a chart far below is not drawn with
    the view (it keeps its place, marked data-later) and is drawn when scrolled to, with the picks made meanwhile."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.goto(server + "/?" + urllib.parse.urlencode({"s": SENTENCE, "view": "inside", "layer": "2", "head": "1",
                                                     "query": "0"}))
    pg.locator(".explorer-inside[data-ready]").wait_for(timeout=60_000)
    out = pg.locator(".explorer-inside .chart").nth(5)  # the head's output, under the scores and the weighted values
    waiting = "c => c.dataset.later === '1' && !c.querySelector('.main-svg')"
    assert out.evaluate(waiting) and out.bounding_box()["height"] >= 150  # its place is held
    pg.locator(".explorer-inside").get_by_role("radiogroup", name="Head").get_by_role(
        "radio", name="4", exact=True).click()
    pg.locator(".explorer-inside input[type=range]").fill("2")
    pg.get_by_text("Cross-attention, layer 2, head 4, query 2:").wait_for()
    assert out.evaluate(waiting)  # still far below: nothing drawn for the picks either
    draw_every_chart(pg, ".explorer-inside")
    tr = translator.inside(SENTENCE).head("cross", 1, 3, 2)
    np.testing.assert_allclose(np.array(out.evaluate("g => g.data[0].z"))[0], tr.head_output, rtol=1e-5, atol=1e-6)
    x = pg.locator(".explorer-inside .chart").nth(0).evaluate("g => g.data[0].z")  # drawn at once, redrawn on the pick
    np.testing.assert_allclose(np.array(x)[0], tr.x, rtol=1e-6, atol=1e-6)
    ctx.close()


def test_the_views_draw_with_no_network_but_the_app(browser, server):
    """plotly.js comes from the app (views/instant.serve_plotly), not a CDN: with every other address refused, each
    browser-drawn view is drawn, and the page asked nothing of any other host. A browser without DecompressionStream
    draws them from the plain copy."""
    outside = []

    def refuse_the_rest(route):
        if route.request.url.startswith(server):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    for unzips in (True, False):
        ctx = browser.new_context(viewport={"width": 1200, "height": 1600})
        ctx.route("**/*", refuse_the_rest)
        if not unzips:
            ctx.add_init_script("delete window.DecompressionStream")
        page = ctx.new_page()
        try:
            for view in ("cross", "trace", "inside") if unzips else ("cross",):
                page.goto(f"{server}/?view={view}&s={urllib.parse.quote(SENTENCE)}")
                page.wait_for_selector(".explorer[data-ready]", timeout=60_000)
                assert page.locator(".explorer .js-plotly-plot").count() >= 2, view
            fetched = page.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
            address = f"{server}/{serve_plotly()}"
            assert [u for u in fetched if "plotly-" in u] == [address if unzips else address.removesuffix(".gz")]
            assert outside == []
        finally:
            ctx.close()


def test_plotly_js_goes_out_as_stored(server):
    """The server sends plotly.js's gzipped twin as it is (application/gzip, no Content-Encoding: Streamlit does not
    compress it again for every page), and it unzips to the shipped plotly.js (views/instant.plotly_source)."""
    source = plotly_source().read_bytes()
    answer = urllib.request.urlopen(urllib.request.Request(f"{server}/{serve_plotly()}",
                                                           headers={"Accept-Encoding": "gzip"}))
    body = answer.read()
    assert answer.headers["Content-Type"] == "application/gzip"
    assert answer.headers["Content-Encoding"] is None
    assert gzip.decompress(body) == source and len(body) < len(source) / 3
    plain = urllib.request.urlopen(f"{server}/{serve_plotly().removesuffix('.gz')}").read()
    assert plain == source
