"""The real app in a real browser: `streamlit run app.py` driven by Playwright in Debian's headless Chromium."""

from pathlib import Path

import pytest

from bench.appserver import CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, free_port, start_app, stop_app, \
    translate_in_page, wait_idle
from conftest import CHECKPOINT, ROOT

ARTIFACTS = ROOT / "tests/artifacts"
HOSTILE = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> Ein Hund'

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    port = free_port()
    proc = start_app(port)
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1500, "height": 2200})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server)
    pg.get_by_label(INPUT_LABEL).wait_for(timeout=30_000)
    yield pg
    ctx.close()
    assert not errors, errors


def test_translate_view_heads_and_step_through_decoding(page):
    ARTIFACTS.mkdir(exist_ok=True)
    translate_in_page(page, "Zwei Hunde spielen im Schnee.")
    assert "dogs" in page.locator(".translation").inner_text()
    assert page.locator(".js-plotly-plot .hm").count() >= 2  # the chosen head and the model view
    page.screenshot(path=str(ARTIFACTS / "encoder.png"), full_page=True)

    page.get_by_role("radio", name="Cross-attention").click()
    page.get_by_text("reads from the German source").wait_for(timeout=20_000)
    page.get_by_role("radio", name="head 3", exact=True).click()
    page.get_by_text("Layer 1, head 3").first.wait_for(timeout=20_000)

    page.get_by_role("radio", name="Decoding trace").click()
    page.get_by_text("Step 1 of").wait_for(timeout=20_000)
    page.get_by_role("button", name="Next ▶").click()
    page.get_by_text("Step 2 of").wait_for(timeout=20_000)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "trace.png"), full_page=True)


def test_hostile_html_creates_no_element(page):
    translate_in_page(page, HOSTILE)
    wait_idle(page)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src='x']").count() == 0
    assert page.locator("script:has-text('__pwned')").count() == 0
    assert "script" in page.locator(".chip").all_inner_texts()  # shown as text
    page.screenshot(path=str(ARTIFACTS / "hostile.png"), full_page=True)


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


VIEWS = ["Encoder self-attention", "Decoder self-attention", "Cross-attention", "Decoding trace",
         "Positional encodings", "Ablate heads", "Head importance", "Reference", "Beam search"]


def test_every_view_renders_in_the_browser(page):
    translate_in_page(page, "Ein Mann fährt Fahrrad.")
    for view in VIEWS:
        page.get_by_role("radio", name=view).click()
        wait_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0, view
    page.get_by_role("radio", name="Ablate heads").click()
    wait_idle(page)
    page.get_by_label("Cross-attention").click()  # the multiselect of cross-attention heads
    page.get_by_role("option", name="layer 3 (all heads)").click()
    page.keyboard.press("Escape")
    page.get_by_text("Without those heads:").wait_for(timeout=30_000)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "ablation.png"), full_page=True)
    page.get_by_role("radio", name="Beam search").click()
    page.get_by_text("n-best list").wait_for(timeout=30_000)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "beam.png"), full_page=True)
