"""What a class waits for and what it costs the server: opening a shared link, switching views, pressing Enter.

    python bench/open_speed.py [--rounds 7] [--views cross walk ...]

A real browser (headless Chromium, at nice 19 as in bench/load_test.py: it stands for the students' own machines)
against `streamlit run app.py`; each figure beside its reference, measured in the same run:

- Link open: a shared link (a 15-token sentence, the default view) in a fresh browser context, from `goto` until the
  translation is on the page and the first view is drawn, against bench/bare_page.py (a title and one line) opened
  the same way on a second server; the two alternate, `--rounds` times each (bar: 1.5x). A third server opens
  bench/bare_chart.py (the bare page and one small heatmap drawn as the app draws every chart: a components v2
  element that loads plotly.js), alternating with them: the floor that drawing any chart in a component sets.
- View switch: every registered view in switch order, clicked on the switch, from the click until the run is over,
  every chart of the view is drawn and the page has been quiet for 0.15 s (the time of its last change is what
  counts), on its first visit and on a second visit. A first visit that computed something heavy (it showed the
  notice of views/calls.waiting_notice: "computing now", or "waiting for" others) reports when that notice first
  showed (bars: second visit median 0.25 s and max 0.6 s; any other first visit 1.0 s; the notice 0.2 s).
- Server CPU, from the server process's own counters (/proc, with its children): per Enter (each a sentence the
  server has not seen, in the default view) and per fresh open of the link, against the bare model call's CPU time
  (the same sentences, `Translator.translate` in this process with the server's one torch thread, before the servers
  start and after they stop) (bars: 2.5x and 4x).

- With --proxy, the link is also opened through deploy/serve.sh 1 (nginx in front of one replica, serving
  Streamlit's page code itself, as a class is served: docs/deploy.md), alternating with the others: its open time
  and the CPU per fresh open of the replica and of nginx (reported beside the bar, which is judged on the bare
  `streamlit run app.py`).

The last line is a summary. Exit status 1 when a bar is missed.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.app_speed import FIFTEEN  # noqa: E402
from tests.appserver import (CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, behind_the_servers, cpu_seconds,  # noqa: E402
                             free_port, start_app, stop_app, translate_in_page, until_quiet, wait_idle)

SENTENCE = FIFTEEN[0]
MORE = ["Ein Mann mit einer Mütze fährt mit seinem Fahrrad über eine alte Brücke in der Stadt.",
        "Zwei Frauen sitzen an einem Tisch in einem Café und trinken zusammen Kaffee.",
        "Ein Junge springt von einem hohen Felsen in einen klaren blauen See.",
        "Eine Gruppe von Musikern spielt auf einer Bühne vor vielen Menschen am Abend.",
        "Ein Koch in einer weißen Jacke schneidet Gemüse in einer großen Küche."]
# The link and the bare page are drawn: the translation and the first view's drawing (views/explorer.js sets
# data-ready), no run going; the bare page's line.
LINK_DRAWN = """() => document.querySelector('.translation') && document.querySelector('.explorer[data-ready]')
    && !document.querySelector('[data-testid="stStatusWidget"]')"""
BARE_DRAWN = "() => [...document.querySelectorAll('p')].some(p => p.textContent === 'One line.')"
CHART_DRAWN = f"() => ({BARE_DRAWN})() && document.querySelector('.explorer[data-ready]')"

# In the page: click a view on the switch, then wait until the address names it (the view's run writes it last,
# views/state.py page_view), no run is going or stale, every chart and browser-drawn view in the view is drawn (each
# keyed component holds an .explorer with data-ready, views/explorer.js), and nothing has changed for `quiet` ms;
# returns the ms from the click to the last change, and to the first notice of a heavy computation
# (views/calls.waiting_notice), or null.
SWITCH_JS = """async ([slug, label, quiet]) => {
    const button = [...document.querySelectorAll('[role=radiogroup] [role=radio]')]
        .find(b => b.textContent.trim() === label);
    let last = performance.now(), progress = null;
    const seen = new MutationObserver(() => {
        last = performance.now();
        if (progress === null && [...document.querySelectorAll('.st-key-view_box [data-testid=stProgress]')]
            .some(p => /computing now|waiting for/.test(p.textContent))) progress = last;
    });
    seen.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
    const t0 = performance.now();
    button.click();
    const drawn = () => {
        const box = document.querySelector('.st-key-view_box');
        return new URLSearchParams(location.search).get('view') === slug && box
            && !document.querySelector('[data-testid="stStatusWidget"]') && !document.querySelector('[data-stale="true"]')
            && [...box.querySelectorAll('.stElementContainer[class*="st-key-"] [data-testid=stBidiComponentRegular]')]
                .every(c => c.querySelector('.explorer[data-ready]'));
    };
    while (!(drawn() && performance.now() - last > quiet) && performance.now() - t0 < 300000)
        await new Promise(r => setTimeout(r, 10));
    seen.disconnect();
    return [last - t0, progress === null ? null : progress - t0]; }"""


def model_call_seconds(translator, sentences: list[str]) -> list[float]:
    """The reference: the CPU seconds of the model call alone (this thread's own clock, as the server's are its
    process's counters), with the server's one torch thread (app.py), one per sentence."""
    times = []
    for s in sentences:
        t = time.thread_time()
        translator.translate(s)
        times.append(time.thread_time() - t)
    return times


def fresh_open(browser, url: str, drawn: str) -> float:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    t = time.perf_counter()
    page.goto(url)
    page.wait_for_function(drawn, timeout=120_000)
    seconds = time.perf_counter() - t
    ctx.close()
    return seconds


def settled_cpu(pid: int) -> float:
    """The server's CPU seconds once it has gone quiet (a page's last answers may still be on their way)."""
    time.sleep(0.3)
    return cpu_seconds(pid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7, help="fresh opens of the link and of the bare page, each")
    ap.add_argument("--views", nargs="*", help="only these views (slugs); all by default")
    ap.add_argument("--proxy", action="store_true", help="also open the link through deploy/serve.sh 1 (needs nginx)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from views.registry import VIEWS

    slugs = args.views or list(VIEWS)
    heavy = set()  # the views whose first visit computed something heavy: its notice said so
    enter_sentences = FIFTEEN[1:] + MORE
    import torch

    from model.translator import Translator

    torch.set_num_threads(1)
    translator = Translator.load(device="cpu")
    translator.translate("Ein Hund.")
    model_times = model_call_seconds(translator, enter_sentences)  # again at the end: the median of both

    port, bare_port, chart_port = free_port(), free_port(), free_port()
    app, bare = start_app(port), start_app(bare_port, script=ROOT / "bench" / "bare_page.py")
    chart_dir = Path(tempfile.mkdtemp(prefix="bare-chart-"))  # the page's script beside static/ (bench/bare_chart.py)
    shutil.copy(ROOT / "bench" / "bare_chart.py", chart_dir)
    (chart_dir / "static").symlink_to(ROOT / "static")
    with_chart = start_app(chart_port, script=chart_dir / "bare_chart.py")
    link = f"http://127.0.0.1:{port}/?" + urllib.parse.urlencode({"s": SENTENCE})
    proxy = run_dir = None
    if args.proxy:
        from bench.load_test import start_proxy, stop_proxy

        run_dir = Path(tempfile.mkdtemp(prefix="serve-"))  # nginx's worker reads from it: not under a private folder
        proxy, proxy_port = start_proxy(1, run_dir)
        proxied = f"http://127.0.0.1:{proxy_port}/?" + urllib.parse.urlencode({"s": SENTENCE})
        replica, nginx = (int((run_dir / f"{name}.pid").read_text()) for name in ("replica-1", "nginx"))
    try:
        behind_the_servers(19)  # this script and the browsers it starts: the servers keep their priority
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            fresh_open(browser, link, LINK_DRAWN)  # the first open loads the model and fills the caches
            fresh_open(browser, f"http://127.0.0.1:{bare_port}/", BARE_DRAWN)
            fresh_open(browser, f"http://127.0.0.1:{chart_port}/", CHART_DRAWN)
            until_quiet(app.pid)
            opens, bares, charts, open_cpu, bare_cpu, through = [], [], [], [], [], []
            if proxy:
                fresh_open(browser, proxied, LINK_DRAWN)
                until_quiet(replica)
            for _ in range(args.rounds):
                if proxy:
                    c = settled_cpu(replica), cpu_seconds(nginx)
                    seconds = fresh_open(browser, proxied, LINK_DRAWN)
                    through.append((seconds, settled_cpu(replica) - c[0], cpu_seconds(nginx) - c[1]))
                c = settled_cpu(bare.pid)
                bares.append(fresh_open(browser, f"http://127.0.0.1:{bare_port}/", BARE_DRAWN))
                bare_cpu.append(settled_cpu(bare.pid) - c)
                charts.append(fresh_open(browser, f"http://127.0.0.1:{chart_port}/", CHART_DRAWN))
                c = settled_cpu(app.pid)
                opens.append(fresh_open(browser, link, LINK_DRAWN))
                open_cpu.append(settled_cpu(app.pid) - c)

            ctx = browser.new_context(viewport={"width": 1400, "height": 900})
            page = ctx.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_label(INPUT_LABEL).wait_for(timeout=60_000)
            translate_in_page(page, SENTENCE)
            enter_cpu = []
            for s in enter_sentences:
                c = settled_cpu(app.pid)
                translate_in_page(page, s, timeout_ms=60_000)
                wait_idle(page)
                enter_cpu.append(settled_cpu(app.pid) - c)
            translate_in_page(page, SENTENCE)
            first, warm, progress = {}, {}, {}
            if slugs[0] == page.evaluate("new URLSearchParams(location.search).get('view')"):  # a click would do nothing
                other = next(s for s in VIEWS if s not in slugs)
                page.evaluate(SWITCH_JS, [other, VIEWS[other].label, 150])
            for visit in (first, warm):
                for slug in slugs:
                    ms, shown = page.evaluate(SWITCH_JS, [slug, VIEWS[slug].label, 150])
                    visit[slug] = ms / 1000
                    if visit is first and shown is not None:
                        progress[slug] = shown / 1000
                        heavy.add(slug)
                    wait_idle(page, 300_000)
            browser.close()
    finally:
        stop_app(app)
        stop_app(bare)
        stop_app(with_chart)
        shutil.rmtree(chart_dir, ignore_errors=True)
        if proxy:
            stop_proxy(proxy)
            shutil.rmtree(run_dir, ignore_errors=True)
    model_s = statistics.median(model_times + model_call_seconds(translator, enter_sentences))

    o, b, c = statistics.median(opens), statistics.median(bares), statistics.median(charts)
    e_cpu, o_cpu, b_cpu = (statistics.median(x) for x in (enter_cpu, open_cpu, bare_cpu))
    missed = []

    def bar(ok: bool, what: str) -> str:
        if not ok:
            missed.append(what)
        return "" if ok else "  MISSED"

    print(f"link open, fresh browser, until the first view is drawn: median {o:.2f} s (min {min(opens):.2f}, max "
          f"{max(opens):.2f}) over {len(opens)}; bare Streamlit page {b:.2f} s (min {min(bares):.2f}, max "
          f"{max(bares):.2f}): {o / b:.2f}x (bar 1.5x){bar(o / b <= 1.5, 'link open')}")
    print(f"  the bare page with one chart (bench/bare_chart.py): median {c:.2f} s, {c / b:.2f}x the bare page (the "
          f"floor a chart drawn in a component sets); the link {o / c:.2f}x that")
    print("view switch, click to drawn and quiet (s); (*) a first visit that computed something heavy, and when its "
          "notice showed:")
    for slug in slugs:
        shown = f"  progress {progress[slug]:.2f}" if slug in progress else ""
        print(f"  {slug:14s}{'*' if slug in heavy else ' '} first {first[slug]:6.2f}  second {warm[slug]:6.2f}{shown}")
    light_first = [first[s] for s in slugs if s not in heavy]
    w, top = statistics.median(warm.values()), max(warm.values())
    shown_at = max(progress.values(), default=0.0)
    print(f"second visits: median {w:.2f} s (bar 0.25){bar(w <= 0.25, 'warm median')}, max {top:.2f} s "
          f"({max(warm, key=warm.get)}; bar 0.6){bar(top <= 0.6, 'warm max')}; other first visits: max "
          f"{max(light_first, default=0):.2f} s (bar 1.0){bar(max(light_first, default=0) <= 1.0, 'first visit')}; "
          f"a heavy computation's notice: max {shown_at:.2f} s (bar 0.2){bar(shown_at <= 0.2, 'heavy notice')}")
    print(f"server CPU per Enter: median {e_cpu * 1000:.0f} ms over {len(enter_cpu)} new sentences; bare model call "
          f"{model_s * 1000:.0f} ms of CPU: {e_cpu / model_s:.1f}x (bar 2.5x){bar(e_cpu / model_s <= 2.5, 'CPU per Enter')}")
    print(f"server CPU per fresh open of the link: median {o_cpu * 1000:.0f} ms: {o_cpu / model_s:.1f}x the model call "
          f"(bar 4x){bar(o_cpu / model_s <= 4, 'CPU per open')}; the bare page's server: {b_cpu * 1000:.0f} ms")
    if through:
        t, r_cpu, n_cpu = (statistics.median(x[i] for x in through) for i in range(3))
        print(f"through deploy/serve.sh 1 (nginx serves Streamlit's page code): link open median {t:.2f} s "
              f"({t / b:.2f}x the bare page); CPU per fresh open: the replica {r_cpu * 1000:.0f} ms, nginx "
              f"{n_cpu * 1000:.0f} ms: {(r_cpu + n_cpu) / model_s:.1f}x the model call")
    print(f"summary: open {o:.2f}s bare {b:.2f}s ratio {o / b:.2f} chart {c:.2f}s warm_median {w:.2f}s warm_max {top:.2f}s "
          f"notice {shown_at:.2f}s cpu_enter {e_cpu * 1000:.0f}ms cpu_open {o_cpu * 1000:.0f}ms "
          f"model {model_s * 1000:.0f}ms missed {','.join(missed) or 'none'}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
