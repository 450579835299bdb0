"""The real app in a real browser: `streamlit run app.py` driven by Playwright in Debian's headless Chromium."""

import json

import pytest

from appserver import CHROMIUM_ARGS, draw_every_chart, free_port, pick_view, start_app, stop_app, translate_in_page, wait_idle
from conftest import CHECKPOINT, ROOT, download, fresh_page, run_async

ARTIFACTS = ROOT / "tests/artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_translate_view_heads_and_step_through_decoding(page):
    ARTIFACTS.mkdir(exist_ok=True)
    translate_in_page(page, "Zwei Hunde spielen im Schnee.")
    assert "dogs" in page.locator(".translation").inner_text()
    assert page.locator(".explorer-maps .chart .hm").count() == 1  # the chosen head
    # The all-heads grid: a cell per layer, head, query (8 decoder rows) and key (8 source tokens), drawn as one
    # heatmap image.
    grid = page.locator(".explorer-maps .grid")
    assert grid.evaluate("g => g.data[0].z.flat().filter(v => v !== null).length") == 3 * 8 * 8 * 8
    assert grid.locator(".hm image").count() == 1
    page.screenshot(path=str(ARTIFACTS / "encoder.png"), full_page=True)

    pick_view(page, "Cross-attention")
    page.get_by_text("reads from the German tokens").wait_for(timeout=20_000)
    head(page, 3).click()
    page.get_by_text("Cross-attention, layer 3, head 3").first.wait_for(timeout=20_000)

    pick_view(page, "Decoding trace")
    page.get_by_text("Step 1 of").wait_for(timeout=20_000)
    page.get_by_role("button", name="Next ▶").click()
    page.get_by_text("Step 2 of").wait_for(timeout=20_000)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "trace.png"), full_page=True)


def head(page, n: int):
    """The head button n (1-based) of the attention view's head switch."""
    return page.get_by_role("radiogroup", name="Head").get_by_role("radio", name=str(n), exact=True)


def test_missing_checkpoint_page(browser, tmp_path):
    port = free_port()
    proc = start_app(port, env={"TRANSFORMER_CHECKPOINT": str(tmp_path / "nowhere")})
    try:
        ctx = browser.new_context()
        pg = ctx.new_page()
        pg.goto(f"http://127.0.0.1:{port}")
        pg.get_by_text("The model could not be loaded").wait_for(timeout=30_000)
        assert pg.get_by_text("Traceback").count() == 0
        ctx.close()
    finally:
        stop_app(proc)


def test_a_whole_layer_ablated_and_the_beam_view(page):
    """Every head of a layer switched off, then the beam view: pictures of both for tests/artifacts. (That every view
    renders with no exception and no "could not be drawn" is the sweep's: tests/browser/test_screens.py,
    test_every_view_fits_renders_and_reads.)"""
    translate_in_page(page, "Ein Mann fährt Fahrrad.")
    pick_view(page, "Ablate heads")
    wait_idle(page)
    pills = page.get_by_role("toolbar", name="Cross-attention, layer 3: heads to switch off")
    for h in range(1, 9):  # every head of the layer: the whole layer
        pill = pills.get_by_role("button", name=str(h), exact=True)
        pill.click()
        page.wait_for_function("p => p.getAttribute('aria-pressed') === 'true'", arg=pill.element_handle())
        wait_idle(page)
    page.get_by_text("Without those heads:").wait_for(timeout=30_000)
    assert page.get_by_text("Switched off: Cross-attention layer 3 (all heads)").count() == 1
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "ablation.png"), full_page=True)
    pick_view(page, "Beam search")
    page.get_by_text("n-best list").wait_for(timeout=30_000)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "beam.png"), full_page=True)


LONGEST_EXAMPLE = ("Ein hell gekleideter Mann fotografiert eine Gruppe von Männern in dunklen Anzügen und mit Hüten, "
                   "die um eine Frau in einem trägerlosen Kleid herum stehen.")


def tick_boxes(page, axis: str, plot: int = 0) -> list:
    """Bounding boxes of the rendered tick labels of one axis ('xtick' or 'ytick') of the n-th figure."""
    return page.locator(".js-plotly-plot").nth(plot).evaluate(
        f"g => [...g.querySelectorAll('.{axis} text')].map(t => {{const r = t.getBoundingClientRect(); "
        "return [t.textContent, r.left, r.top, r.right, r.bottom];})")


def overlapping(boxes) -> list:
    return [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5 and a[2] < b[4] - 0.5 and b[2] < a[4] - 0.5]


@pytest.mark.parametrize("sentence", [LONGEST_EXAMPLE, " ".join(["Ein Hund läuft schnell über die Wiese."] * 14)])
@pytest.mark.parametrize("width", [1400, 800])
def test_tick_labels_never_overlap(browser, server, sentence, width):
    ctx = browser.new_context(viewport={"width": width, "height": 2400})
    pg = ctx.new_page()
    pg.goto(server)
    translate_in_page(pg, sentence, 60_000)
    for view in ("Cross-attention", "Encoder self-attention"):
        pick_view(pg, view)
        wait_idle(pg)
        for axis in ("xtick", "ytick"):
            boxes = tick_boxes(pg, axis)
            assert len(boxes) >= 5, (view, axis, boxes)  # labels are there (the output may be short)
            assert not overlapping(boxes), (view, axis, width, overlapping(boxes)[:5])
    ctx.close()


def test_decoder_rows_name_the_token_they_predict(page):
    translate_in_page(page, "Zwei Männer spielen Fußball auf einer Wiese.")
    rows = [t[0] for t in tick_boxes(page, "ytick")]
    assert rows[:2] == ["<sos> → two", "two → men"], rows


def test_clicking_a_model_view_tile_opens_that_head(page):
    translate_in_page(page, "Zwei Hunde spielen im Schnee.")
    grid = page.locator(".js-plotly-plot").nth(1)
    # The centre of the tile of layer 2, head 6, in page pixels, from the figure's own axes.
    x, y = grid.evaluate("""g => {
        const L = g._fullLayout, xa = L.xaxis, ya = L.yaxis, r = g.getBoundingClientRect();
        const col = xa.tickvals[5], row = ya.tickvals[1];
        return [r.left + xa._offset + xa.l2p(col), r.top + ya._offset + ya.l2p(row)];
    }""")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.get_by_text("Cross-attention, layer 2, head 6").first.wait_for(timeout=20_000)
    assert head(page, 6).get_attribute("aria-checked") == "true"
    assert page.get_by_role("radiogroup", name="Layer").get_by_role("radio", name="2").get_attribute(
        "aria-checked") == "true"


def test_open_in_its_view_from_head_importance(page):
    translate_in_page(page, "Ein Hund rennt durch den Schnee.")
    pick_view(page, "Head importance")
    wait_idle(page)
    box = page.locator(".st-key-importance_pick")
    picked = box.locator("input").input_value() or box.inner_text()  # "Cross-attention, layer 2, head 8: ..."
    kind, where = picked.split("\n")[-1].split(", ", 1)
    layer_head = where.split(":")[0]  # "layer 2, head 8"
    page.get_by_role("button", name="Open in its view").click()
    page.get_by_text(f"{kind}, {layer_head}").first.wait_for(timeout=20_000)
    assert page.get_by_role("radio", name=kind, exact=True).get_attribute("aria-checked") == "true"


def test_a_heavy_computation_says_at_once_that_it_runs(page):
    """A heavy computation that is not in the cache says so as it starts ("computing now", views/calls.waiting_notice:
    Streamlit's own spinner waits 0.5 s), and the notice is gone once the view is drawn."""
    translate_in_page(page, "Ein Hund rennt durch den Schnee.")
    pick_view(page, "Encoder self-attention")  # a light view: the new sentence computes no more
    wait_idle(page)
    translate_in_page(page, "Drei Kinder, zwei Hunde und eine Katze spielen im Garten hinter dem alten Haus.")
    page.evaluate("""() => {  // seen by the page itself: the notice may stand for less than a poll's interval
        window.computingSeen = false;
        new MutationObserver(() => { window.computingSeen ||= [...document.querySelectorAll('[data-testid=stProgress]')]
            .some(p => p.innerText.includes('Head importance: computing now')); })
            .observe(document.body, {subtree: true, childList: true, characterData: true}); }""")
    pick_view(page, "Head importance")
    page.get_by_text("This sentence").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.evaluate("window.computingSeen")
    assert page.get_by_text("computing now").count() == 0


CONTRAST = """e => {
    const parse = c => { const p = c.match(/rgba?\\(([^)]+)\\)/)[1].split(',').map(Number);
                         return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
    let layers = [], n = e;
    while (n) { const c = parse(getComputedStyle(n).backgroundColor);
                if (c[3] > 0) layers.push(c); if (c[3] >= 1) break; n = n.parentElement; }
    let bg = [255, 255, 255];
    for (let i = layers.length - 1; i >= 0; i--) { const [r, g, b, a] = layers[i];
        bg = [r * a + bg[0] * (1 - a), g * a + bg[1] * (1 - a), b * a + bg[2] * (1 - a)]; }
    const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92
                                                   : Math.pow((v + 0.055) / 1.055, 2.4); };
                                 return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
    const fg = parse(getComputedStyle(e).color), l1 = lum(fg), l2 = lum(bg);
    return (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
}"""


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two opaque CSS colours 'rgb(r, g, b)'."""
    def lum(c):
        rgb = [int(v) / 255 for v in c[c.index("(") + 1:c.index(")")].split(",")[:3]]
        lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_chips_and_labels_are_legible_in_both_themes(browser, server, scheme):
    ctx = browser.new_context(viewport={"width": 1400, "height": 2000}, color_scheme=scheme)
    pg = ctx.new_page()
    pg.goto(server)
    translate_in_page(pg, "Qwxzy Hund rennt durch den Schnee.")  # an unknown word: the dashed chip too
    chips = pg.locator(".chip")
    assert chips.count() >= 10 and pg.locator(".chip.unk").count() == 1
    for i in range(chips.count()):
        ratio = chips.nth(i).evaluate(CONTRAST)
        assert ratio >= 4.5, (scheme, chips.nth(i).inner_text(), ratio)  # WCAG AA for text
    pick_view(pg, "Decoding trace")
    pg.get_by_text("Step 1 of").wait_for(timeout=20_000)
    wait_idle(pg)
    assert pg.locator(".chip.now").first.evaluate(CONTRAST) >= 4.5
    # The probabilities printed beside the candidate bars, against the page behind them. Figure text keeps
    # Streamlit's chart theme (a mid grey in light mode), so the bar is WCAG's 3:1 for graphics, not 4.5:1.
    page_bg = pg.locator("[data-testid=stApp]").evaluate("e => getComputedStyle(e).backgroundColor")
    bars = pg.locator(".js-plotly-plot").first
    fills = bars.evaluate("g => [...g.querySelectorAll('.bartext')].map(t => getComputedStyle(t).fill)")
    # The text sits on the plot area, which lets the page show through (views/explorer.js themed): no white box.
    assert bars.evaluate("g => [g._fullLayout.plot_bgcolor, g._fullLayout.paper_bgcolor]") == ["rgba(0,0,0,0)"] * 2
    assert len(fills) == 5 and all(contrast(f, page_bg) >= 3 for f in fills), (scheme, fills, page_bg)
    pg.screenshot(path=str(ARTIFACTS / f"theme-{scheme}.png"), full_page=True)
    ctx.close()


def test_800px_wide_every_control_is_usable(browser, server):
    ctx = browser.new_context(viewport={"width": 800, "height": 2400})
    pg = ctx.new_page()
    pg.goto(server + "/?view=cross")
    translate_in_page(pg, "Zwei Männer spielen Fußball auf einer Wiese.")
    group = pg.get_by_role("radiogroup", name="Head")
    assert group.evaluate("g => g.scrollWidth <= g.clientWidth + 1")  # no hidden scroller
    for n in range(1, 9):
        box = head(pg, n).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 800, (n, box)
    plot = pg.locator(".js-plotly-plot").first.evaluate("g => g._fullLayout.xaxis._length")
    assert plot >= 250  # the map keeps a sensible size
    pick_view(pg, "Decoding trace")
    pg.get_by_text("Step 1 of").wait_for(timeout=20_000)
    for name in ("◀ Previous", "Next ▶"):
        button = pg.get_by_role("button", name=name)
        assert button.evaluate("b => b.scrollWidth <= b.clientWidth + 1 && b.innerText.trim().length > 4"), name
    pick_view(pg, "Ablate heads")
    wait_idle(pg)
    for kind in ("Encoder self-attention", "Decoder self-attention", "Cross-attention"):  # 3 columns of 8 pills
        for layer in (1, 2, 3):
            bar = pg.get_by_role("toolbar", name=f"{kind}, layer {layer}: heads to switch off")
            assert bar.evaluate("t => t.scrollWidth <= t.clientWidth + 1"), (kind, layer)  # no hidden scroller
            column = bar.evaluate("t => { const r = t.closest('[data-testid=stColumn]').getBoundingClientRect();"
                                  " return [r.left, r.right]; }")
            for h in range(1, 9):
                box = bar.get_by_role("button", name=str(h), exact=True).bounding_box()
                assert box and column[0] <= box["x"] and box["x"] + box["width"] <= column[1] + 1, (kind, layer, h)
    bar.get_by_role("button", name="8", exact=True).click()  # the last head of the last layer, in view
    pg.get_by_text("Switched off: Cross-attention layer 3, head 8").wait_for(timeout=30_000)
    pg.screenshot(path=str(ARTIFACTS / "narrow.png"), full_page=True)
    ctx.close()


@pytest.mark.parametrize("width", [800, 1400])
def test_head_grids_stack_where_three_across_would_crowd_the_numbers(browser, server, width):
    """Importance grids: three across at 1400 px; stacked at 800 px (a third of it left 11 px a head)."""
    ctx = browser.new_context(viewport={"width": width, "height": 2400})
    pg = ctx.new_page()
    pg.goto(f"{server}/?s=Zwei%20M%C3%A4nner%20spielen%20Fu%C3%9Fball.&view=importance")
    pg.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 6", timeout=60_000)
    wait_idle(pg)
    grids = [pg.locator(f".st-key-importance_{kind} .js-plotly-plot") for kind in ("enc", "dec", "cross")]
    xs = [g.bounding_box()["x"] for g in grids]
    cells = [g.evaluate("p => p._fullLayout.xaxis._length / 8") for g in grids]  # px per head
    ctx.close()
    if width == 800:
        assert len({round(x) for x in xs}) == 1 and min(cells) >= 60, (xs, cells)  # one above the other
    else:
        assert xs[0] < xs[1] < xs[2] and min(cells) >= 28, (xs, cells)  # side by side


def test_a_copied_link_opens_the_same_picture(page, browser):
    translate_in_page(page, "Zwei Männer spielen Fußball auf einer Wiese.")
    pick_view(page, "Decoder self-attention")
    wait_idle(page)
    page.get_by_role("radiogroup", name="Layer").get_by_role("radio", name="2", exact=True).click()
    wait_idle(page)
    head(page, 4).click()  # a click inside the view's fragment: the URL must follow it too
    page.get_by_text("Decoder self-attention, layer 2, head 4").first.wait_for(timeout=20_000)
    page.wait_for_function("location.search.includes('head=4')", timeout=10_000)
    url = page.url
    assert "view=dec" in url and "layer=2" in url
    ctx, pg, errors = fresh_page(browser, url)
    pg.get_by_text("Decoder self-attention, layer 2, head 4").first.wait_for(timeout=30_000)
    assert pg.locator(".translation").inner_text() == page.locator(".translation").inner_text()
    assert head(pg, 4).get_attribute("aria-checked") == "true"
    ctx.close()
    assert not errors

    pick_view(page, "Decoding trace")
    page.get_by_text("Step 1 of").wait_for(timeout=20_000)
    page.get_by_role("button", name="Next ▶").click()
    page.get_by_text("Step 2 of").wait_for(timeout=20_000)
    page.wait_for_function("location.search.includes('step=2')", timeout=10_000)
    ctx, pg, errors = fresh_page(browser, page.url)
    pg.get_by_text("Step 2 of").wait_for(timeout=30_000)
    ctx.close()
    assert not errors

    pick_view(page, "Ablate heads")
    wait_idle(page)
    pill = page.get_by_role("toolbar", name="Encoder self-attention, layer 1: heads to switch off").get_by_role(
        "button", name="5", exact=True)
    pill.click()
    page.get_by_text("Without those heads:").wait_for(timeout=30_000)
    page.wait_for_function("location.search.includes('off=enc.1.5')", timeout=10_000)
    ctx, pg, errors = fresh_page(browser, page.url)
    pg.get_by_text("Switched off: Encoder self-attention layer 1, head 5").wait_for(timeout=30_000)
    ctx.close()
    assert not errors


@pytest.mark.parametrize("query", ["view=bogus", "view=cross&layer=9", "view=ablate&off=cross.9",
                                   "view=trace&step=999", "s=" + "Hund%20" * 3000])
def test_bad_link_parameters_never_raise(browser, server, query):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein%20Hund%20rennt.&{query}")
    assert pg.locator("[data-testid='stException']").count() == 0
    assert pg.get_by_text("Traceback").count() == 0
    ctx.close()
    assert not errors


def test_downloads_match_the_cli_and_round_trip(page, tmp_path):
    import subprocess
    import sys

    import numpy as np
    import pandas as pd

    from model.export import load_maps_npz

    sentence = "Zwei Männer spielen Fußball auf einer Wiese."
    translate_in_page(page, sentence)
    page.get_by_role("radiogroup", name="Head").get_by_role("radio", name="2", exact=True).click()
    page.get_by_text("Cross-attention, layer 3, head 2").first.wait_for(timeout=20_000)
    wait_idle(page)
    got = json.loads(download(page, "Result (JSON)", tmp_path).read_text(encoding="utf-8"))
    cli = subprocess.run([sys.executable, "-m", "model.translate", "--json", "--device", "cpu"], input=sentence,
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    want = json.loads(cli.stdout)
    assert set(got) == set(want)

    def close(a, b, path="$"):
        if isinstance(a, float) or isinstance(b, float):
            assert abs(a - b) <= 1e-6, path
        elif isinstance(a, dict):
            assert a.keys() == b.keys(), path
            for k in a:
                close(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list):
            assert len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b)):
                close(x, y, f"{path}[{i}]")
        else:
            assert a == b, path
    close({k: v for k, v in got.items() if k != "provenance"}, {k: v for k, v in want.items() if k != "provenance"})
    assert got["provenance"]["checkpoint"] == want["provenance"]["checkpoint"]
    assert got["provenance"]["heads_off"] == "" and got["provenance"]["decoding"]["beam"] == 1

    csv = pd.read_csv(download(page, "This map (CSV)", tmp_path), keep_default_na=False)
    S, T = len(want["src_tokens"]), len(want["tgt_tokens"])
    assert len(csv) == T * S and list(csv.columns) == ["query_pos", "query_token", "key_pos", "key_token", "weight"]
    grid = csv.pivot(index="query_pos", columns="key_pos", values="weight").to_numpy()
    np.testing.assert_allclose(grid, np.array(want["cross_attentions"])[2, 1], atol=5.01e-5)  # layer 3, head 2, 4 decimals

    maps = load_maps_npz(download(page, "All maps (.npz)", tmp_path))
    np.testing.assert_allclose(maps["cross_attentions"], np.array(want["cross_attentions"]), atol=1e-6)
    assert list(maps["src_tokens"]) == want["src_tokens"]

    steps = pd.read_csv(download(page, "Step trace (CSV)", tmp_path), keep_default_na=False)
    assert list(steps["token"]) == [s["token"] for s in want["steps"]]


def test_inside_a_head_follows_head_and_query_clicks(page):
    translate_in_page(page, "Zwei Männer spielen Fußball auf einer Wiese.")
    pick_view(page, "Inside a head")
    page.get_by_text("1. The query's input vector x").wait_for(timeout=30_000)
    page.get_by_role("radiogroup", name="Attention").get_by_role("radio", name="Decoder self-attention").click()
    page.get_by_role("radiogroup", name="Head").get_by_role("radio", name="4", exact=True).click()
    page.get_by_text("Decoder self-attention, layer 1, head 4, query 0").first.wait_for(timeout=20_000)
    for k in (1, 2, 3):  # one key press at a time: each redraws the view, and the slider with it
        page.get_by_role("slider").first.focus()
        page.keyboard.press("ArrowRight")
        page.get_by_text(f"head 4, query {k}:").first.wait_for(timeout=20_000)
        wait_idle(page)
    page.get_by_text("head 4, query 3: “playing → soccer”").first.wait_for(timeout=20_000)
    assert page.get_by_text("future position(s) are masked").count() == 1
    page.wait_for_function("location.search.includes('view=inside') && location.search.includes('query=3')",
                           timeout=10_000)
    assert page.locator("[data-testid='stException']").count() == 0
    draw_every_chart(page)  # the picture shows them all
    page.screenshot(path=str(ARTIFACTS / "inside.png"), full_page=True)


def test_source_flow_view_shows_coverage_and_rollout(page):
    translate_in_page(page, "Ein Mann in einem pinken Hemd sitzt auf dem Gras und ein Ball ist in der Luft.")
    pick_view(page, "Source flow")
    page.get_by_text("Coverage, layer 3, mean of the 8 heads").first.wait_for(timeout=30_000)
    page.get_by_text("Rollout through the encoder").first.wait_for(timeout=30_000)
    bars = page.locator(".js-plotly-plot").first.evaluate("g => g._fullData[0]._length")
    assert bars == 20  # one bar per source token, <sos> and <eos> included
    assert page.locator("[data-testid='stException']").count() == 0


PAIR = ("Der Hund läuft über die Wiese.", "Die Katze läuft über die Wiese.")


def test_compare_with_another_sentence_draws_both_and_their_difference(page, server):
    page.goto(f"{server}/?s={PAIR[0]}&view=enc&layer=1&head=2")
    page.get_by_text("Encoder self-attention, layer 1, head 2").first.wait_for(timeout=30_000)
    page.get_by_role("radiogroup", name="Compare with").get_by_role("radio", name="another sentence").click()
    box = page.get_by_label("Second sentence (press Enter)")
    box.wait_for(timeout=20_000)
    box.fill(PAIR[1])
    box.press("Enter")
    page.get_by_text("Difference: Encoder self-attention, layer 1, head 2").first.wait_for(timeout=30_000)
    wait_idle(page)
    assert "vs=sentence" in page.url and "s2=" in page.url
    # The difference map's rows name both tokens where the sentences differ.
    assert page.get_by_text("hund | katze").count() >= 1


def test_line_view_a_click_on_a_token_keeps_only_its_lines(page, server):
    page.goto(f"{server}/?s={PAIR[0]}&view=cross&layer=2&draw=lines")
    page.get_by_text("Cross-attention, layer 2, mean of the 8 heads").first.wait_for(timeout=30_000)
    wait_idle(page)
    plot = page.locator(".js-plotly-plot").first
    count = "g => g.data.filter(t => t.mode === 'lines' && t.visible !== 'legendonly')" \
            ".reduce((n, t) => n + t.x.filter(v => v === null).length, 0)"
    before = plot.evaluate(count)
    # The page position of the first key token (<sos>), from the figure's own axes.
    x, y = plot.evaluate("""g => {
        const L = g._fullLayout, xa = L.xaxis, ya = L.yaxis, r = g.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(1), r.top + ya._offset + ya.l2p(0)];
    }""")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.get_by_role("button", name="Show every token's lines (now only key 0)").wait_for(timeout=20_000)
    wait_idle(page)
    after = page.locator(".js-plotly-plot").first.evaluate(count)
    assert 0 < after < before
    page.get_by_role("button", name="Show every token's lines (now only key 0)").click()
    page.get_by_role("button", name="Show every token's lines (now only key 0)").wait_for(state="detached",
                                                                                           timeout=20_000)


@pytest.mark.skipif(not (CHECKPOINT / "sinusoidal/model.safetensors").is_file(), reason="no checkpoints/sinusoidal")
def test_the_model_switch_loads_the_sinusoidal_model(page):
    translate_in_page(page, PAIR[0])
    page.get_by_role("radio", name="sinusoidal positions (the paper's)").click()
    page.wait_for_function("location.search.includes('model=sinusoidal')", timeout=60_000)
    wait_idle(page, 60_000)
    page.get_by_text("About this model and the colours").click()
    page.get_by_text("sinusoidal positions (100)").first.wait_for(timeout=20_000)


def test_a_row_of_the_head_statistics_opens_that_head(page, server):
    page.goto(f"{server}/?s={PAIR[0]}&view=stats&stat=diagonal_share")
    grid = page.locator(".st-key-stats_table")
    grid.locator("canvas").first.wait_for(timeout=30_000)
    wait_idle(page)
    page.wait_for_timeout(1000)  # the grid takes clicks once it has drawn
    box = grid.bounding_box()
    # Row 3 of the table (encoder, layer 1, head 3): its row-selection cell at the left, below the header.
    page.mouse.click(box["x"] + 12, box["y"] + 35 * 3 + 17)
    page.wait_for_function("location.search.includes('view=enc&layer=1&head=3')", timeout=30_000)
    page.get_by_text("Encoder self-attention, layer 1, head 3").first.wait_for(timeout=30_000)
    assert page.get_by_role("radio", name="Encoder self-attention", exact=True).get_attribute("aria-checked") == "true"


def test_sessions_at_once_each_get_their_own_translation_and_ablation(chromium, server, data_dir):
    """The load test small (many sessions share one model): 6 browser sessions press Enter together, 3 of them with a head switched
    off by their link; each must show exactly what python -m model.translate gives (bench/load_test.py)."""

    from bench import load_test
    from model.data import load_split
    from playwright.async_api import async_playwright

    sentences = load_split(data_dir, "test")[0][:6]
    expected = load_test.expected_outputs(sentences, 6)

    async def go():
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            result = await load_test.sessions_round(browser, server + "/", sentences, expected, 6)
            await browser.close()
            return result
    r = run_async(go())
    assert not r["wrong"] and not r["errors"], (r["wrong"], r["errors"])
    assert r["max"] < 60


def test_the_walk_steps_with_the_arrow_keys_and_opens_a_detailed_view(browser, server):
    """In the browser, not only under AppTest: the → key goes to the next stop, and a stop's button switches the
    whole page to its view (inside a fragment it would rerun only the walk and leave the page where it was)."""
    ctx, pg, errors = fresh_page(browser, server + "/?s=Zwei+M%C3%A4nner+spielen+Fu%C3%9Fball.&view=walk&stop=8")
    pg.locator(".translation").wait_for(timeout=60_000)
    wait_idle(pg)
    pg.keyboard.press("ArrowRight")
    pg.wait_for_function("new URLSearchParams(location.search).get('stop') === '9'", timeout=30_000)
    wait_idle(pg)
    pg.get_by_role("button", name="Open “Cross-attention” for every detail").click()
    pg.wait_for_function("new URLSearchParams(location.search).get('view') === 'cross'", timeout=30_000)
    wait_idle(pg)
    assert pg.get_by_role("radio", name="Cross-attention", exact=True).get_attribute("aria-checked") == "true"
    assert "layer=3" in pg.url and not errors
    ctx.close()


def test_folds_made_when_opened_open_from_the_keyboard(browser, server):
    """The positions view's long sentence and the export section are made only when opened (a rerun): Enter on the
    fold's header, with the focus there, brings what it holds, each model's translation and the download buttons."""
    import urllib.parse

    ctx, pg, errors = fresh_page(browser, server + "?" + urllib.parse.urlencode({"s": "Zwei Hunde spielen im Schnee.",
                                                                                "view": "positions"}))
    assert pg.get_by_text("output tokens)").count() == 0
    pg.locator("summary", has_text="which model copes?").focus()
    pg.keyboard.press("Enter")
    pg.get_by_text("output tokens)").first.wait_for(timeout=30_000)
    wait_idle(pg)
    assert pg.get_by_text("output tokens)").count() == 2  # one line for each model
    assert pg.get_by_role("button", name="Result (JSON)").count() == 0
    pg.locator("summary", has_text="Download the data behind this view").focus()
    pg.keyboard.press("Enter")
    pg.get_by_role("button", name="Result (JSON)").wait_for(timeout=30_000)
    wait_idle(pg)
    assert pg.get_by_text("output tokens)").count() == 2  # the other fold stays open
    ctx.close()
    assert not errors, errors


def test_a_sentence_sent_as_the_socket_dies_is_translated_after_the_reconnect(browser, server):
    """A replica killed the moment a student presses Enter: the sentence's message goes into the dying socket and is
    lost, and the page reconnects. Streamlit's page asks for a run when its socket comes back only while a run or a
    fragment's timer is pending, so the page stayed on the old translation and the old link under the new sentence
    (found with deploy/serve.sh 2 and 8 sessions typing as replica 1 died: 2 of 4 lost sessions). Here the socket
    is cut by the browser's own WebSocket route, the Enter's message dropped: after the reconnect, the box, the
    translation and the link all hold the new sentence."""
    import urllib.parse

    from appserver import INPUT_LABEL

    first, typed = "Ein Mann fährt mit dem Fahrrad.", "Zwei Hunde spielen im Schnee."
    ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
    pg = ctx.new_page()
    cut = {"armed": False, "sockets": 0}

    def route(ws):
        server_side = ws.connect_to_server()
        cut["sockets"] += 1

        def to_server(message):
            if cut["armed"]:  # the Enter's message: lost with the socket
                cut["armed"] = False
                ws.close()
                server_side.close()
                return
            server_side.send(message)

        ws.on_message(to_server)
        server_side.on_message(ws.send)

    pg.route_web_socket("**/_stcore/stream", route)
    pg.goto(server + "/?" + urllib.parse.urlencode({"s": first, "view": "cross"}))
    pg.locator(".translation").wait_for(timeout=60_000)
    wait_idle(pg)
    old = pg.locator(".translation").inner_text()
    box = pg.get_by_label(INPUT_LABEL)
    box.fill(typed)
    cut["armed"] = True
    box.press("Enter")
    pg.wait_for_function("t => !document.querySelector('.translation') || "
                         "document.querySelector('.translation').innerText !== t", arg=old, timeout=60_000)
    wait_idle(pg)
    assert cut["sockets"] == 2 and not cut["armed"]
    assert box.input_value() == typed
    assert "dogs" in pg.locator(".translation").inner_text()
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(pg.url).query)["s"] == [typed]
    ctx.close()
