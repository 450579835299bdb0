"""The self-contained HTML report (viz/report.py, and its command python -m viz.report): its structure, every map
in it, hostile text kept as text, the CLI; in a real browser from disk with the network off, and the page's download
against the CLI's file."""

from pathlib import Path

import numpy as np
import pytest

from conftest import download, run
from model.export import provenance
from viz.report import report_html
from unit.test_report import HOSTILE, KINDS, expected_cells


DRAWN = "[...document.querySelectorAll('.js-plotly-plot')].filter(g => g.querySelector('.hm image')).length === 3"


def open_offline(browser, path: Path):
    """The file in a fresh page with the network off: every request that is not the file itself is aborted and
    recorded."""
    ctx = browser.new_context(viewport={"width": 1300, "height": 1000})
    ctx.set_offline(True)
    asked, errors = [], []
    ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
              else (asked.append(route.request.url), route.abort()))
    page = ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(DRAWN, timeout=30_000)
    return ctx, page, asked, errors


def drawn(page, kind: str) -> tuple[np.ndarray, str]:
    """The values the chart of one kind holds (null -> nan) and its title."""
    z, title = page.evaluate("k => { const g = document.getElementById(k + '-map'); "
                             "return [g.data[0].z, g.layout.title.text]; }", kind)
    return np.array([[np.nan if v is None else v for v in row] for row in z]), title


@pytest.mark.slow
@pytest.mark.browser
def test_the_report_draws_offline_and_switches_heads(browser, translator, tmp_path):
    r = translator.translate("Zwei Männer spielen Fußball auf einer Wiese.")
    path = tmp_path / "report.html"
    path.write_text(report_html(r, provenance(translator)), encoding="utf-8")
    ctx, page, asked, errors = open_offline(browser, path)
    try:
        for kind, field in KINDS.items():  # each drawn at layer 1, head 1
            z, title = drawn(page, kind)
            np.testing.assert_array_equal(z, np.array(expected_cells(getattr(r, field)[0, 0], kind == "dec"), float))
            assert title.endswith("layer 1, head 1")
        for kind, layer, head in (("cross", 2, 7), ("dec", 1, 4), ("enc", 2, 0)):
            page.select_option(f"#{kind}-layer", index=layer)  # a string would match labels too
            page.select_option(f"#{kind}-head", index=head)
            page.wait_for_function(f"document.getElementById('{kind}-map').layout.title.text.endsWith("
                                   f"'layer {layer + 1}, head {head + 1}')", timeout=10_000)
            z, _ = drawn(page, kind)
            want = np.array(expected_cells(getattr(r, KINDS[kind])[layer, head], kind == "dec"), float)
            np.testing.assert_array_equal(z, want)
            np.testing.assert_allclose(np.nan_to_num(z), getattr(r, KINDS[kind])[layer, head], atol=5e-5)
        assert page.evaluate(DRAWN)  # still drawn after the switches
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    finally:
        ctx.close()
    assert asked == [] and errors == []


@pytest.mark.slow
@pytest.mark.browser
def test_a_hostile_sentence_runs_nothing_in_the_browser(browser, translator, tmp_path):
    path = tmp_path / "hostile.html"
    path.write_text(report_html(translator.translate(HOSTILE), provenance(translator)), encoding="utf-8")
    ctx, page, asked, errors = open_offline(browser, path)
    try:
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img").count() == 0
        assert page.locator(".sentence").inner_text() == HOSTILE
    finally:
        ctx.close()
    assert asked == [] and errors == []


@pytest.mark.slow
@pytest.mark.browser
def test_the_pages_download_is_the_cli_report(page, tmp_path):
    """The page's "Download as an HTML page" and `python -m viz.report`: the same bytes. The page translates with
    one torch thread per call (app.py), and provenance names the threads: the CLI runs with one too."""
    from appserver import translate_in_page, wait_idle

    sentence = "Eine Frau mit einem roten Hut liest ein Buch."
    translate_in_page(page, sentence)
    wait_idle(page)
    got = download(page, "Download as an HTML page", tmp_path).read_bytes()
    cli = run("viz.report", sentence, "--out", str(tmp_path / "cli.html"), env={"OMP_NUM_THREADS": "1"})
    assert cli.returncode == 0 and cli.stderr == "", cli.stderr
    assert got == (tmp_path / "cli.html").read_bytes()
