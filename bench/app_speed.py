"""The app as a person feels it: a real browser against `streamlit run app.py`.

    python bench/app_speed.py [--sentences 100] [--picked 5]

Prints, each next to a reference measured in the same run: Enter -> translation and the first view drawn, over
the bare model call (bar 20x); a change of head or layer in an attention view, of decoding step, and of layer,
head or query in "Inside a head", all drawn in the browser (views/maps.js, trace.js, inside.js) and timed in the
page from the click to the end of the view's redraw, over a bare `Plotly.react` of the same figures in the same
page (the map; the trace's 3 charts; Inside a head's 9) (bars: median 5x, max 10x); heads and layers are picked on
each of five sentences in turn (--picked), as a person uses the page; the server's resident memory after N different
sentences (bar 700 MB); and what the maps of a 100-token sentence weigh on the wire. The last line is the summary
(seconds, MB, ms).
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.appserver import (CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, draw_every_chart, free_port,  # noqa: E402
                             start_app, stop_app, translate_in_page, wait_idle)
from model.data import default_data_dir, load_split  # noqa: E402

FIFTEEN = ["Ein kleines Mädchen in einem rosa Kleid klettert auf einen großen Baum im Park.",
           "Zwei junge Männer spielen auf einer grünen Wiese neben dem See mit einem Ball.",
           "Eine ältere Frau mit einem roten Hut verkauft Obst auf einem belebten Markt.",
           "Ein Hund mit einem Stock im Maul rennt am Strand durch das flache Wasser.",
           "Drei Kinder sitzen auf einer Bank und essen zusammen ein großes Eis."]


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (Linux /proc)."""
    total = 0
    for p in [pid] + [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def timed(action, wait) -> float:
    t = time.perf_counter()
    action()
    wait()
    return time.perf_counter() - t


def bare_model_seconds(translator) -> float:
    """The reference: the model call alone, in this process, for the same sentences."""
    return statistics.median(timed(lambda s=s: translator.translate(s), lambda: None) for s in FIFTEEN)


# In the page: from a pick (a radio of a group, a button, a slider value) to the end of the view's redraw (its
# box's data-drawn count goes up: views/explorer.js `Explorer.mount`).
PICK_JS = """async ([box, how, a, b]) => {
    const root = document.querySelector(box);
    const before = Number(root.dataset.drawn || 0);
    const buttons = [...root.querySelectorAll(how === 'radio' ? `[aria-label="${a}"] button` : 'button')];
    const t0 = performance.now();
    if (how === 'range') {
        const s = root.querySelector('input[type=range]');
        s.value = a;
        s.dispatchEvent(new Event('input', {bubbles: true}));
    } else {
        buttons.find(e => e.textContent === (how === 'radio' ? b : a)).click();
    }
    while (Number(root.dataset.drawn || 0) === before) await new Promise(r => setTimeout(r, 0));
    return performance.now() - t0; }"""

# The reference: a bare Plotly.react of the same figures, each on a bare div of the same page, as many times as
# the view has charts (one map for an attention view, three for the trace, nine for Inside a head), each round
# with a new data revision so that every figure is recomputed and redrawn; median of 21 rounds, in ms. Every chart
# must be drawn first (draw_every_chart: Inside a head draws a chart far below the window only when scrolled near).
REACT_JS = """async box => {
    const charts = [...document.querySelectorAll(box + ' .chart')];
    const waiting = charts.filter(gd => !gd.data).length;
    if (waiting) throw new Error(`${waiting} of the ${charts.length} charts are not drawn yet: scroll to them first`);
    const divs = charts.map(() => document.body.appendChild(document.createElement('div')));
    const times = [];
    for (let i = 0; i < 21; i++) {
        const t0 = performance.now();
        for (let j = 0; j < charts.length; j++) {
            const gd = charts[j];
            await Plotly.react(divs[j], gd.data.map(t => ({...t})),
                               {...gd.layout, datarevision: i, title: {...gd.layout.title, text: 'bare ' + i}});
        }
        times.push(performance.now() - t0);
    }
    divs.forEach(d => { Plotly.purge(d); d.remove(); });
    times.sort((a, b) => a - b);
    return times[10]; }"""


def pick_ms(page, box: str, how: str, a: str, b: str = "") -> float:
    return page.evaluate(PICK_JS, [box, how, a, b])


def bare_react_ms(page, box: str) -> float:
    return page.evaluate(REACT_JS, box)


def payload_bytes(translator, sentence: str) -> tuple[int, int, int]:
    """What the three attention views send the browser for one sentence (the component's data, as JSON), the
    packed maps' share of it, and the sentence's token count."""
    import json
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # the views' caches, used here without a server
    import viz
    from views.attention import Shown, panel
    from views.instant import figure_json
    from viz.labels import SIDES, token_labels

    r = translator.translate(sentence)
    total = maps = 0
    for kind in SIDES:
        p = panel(r, Shown(kind, 0, None), r.maps(kind))
        (q, qu), (k, ku) = (token_labels(r, s) for s in SIDES[kind])
        grid = figure_json(viz.model_view(r.maps(kind), q, k, causal=kind == "dec", query_unknown=qu,
                                          key_unknown=ku, cells=False))  # as views/attention.py sends it
        total += len(json.dumps(p)) + len(json.dumps(grid))
        maps += len(p["maps"]["b64"])
    return total, maps, len(r.src_tokens)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=100, help="different sentences before reading memory")
    ap.add_argument("--picked", type=int, default=len(FIFTEEN), help="sentences whose heads and layers are picked")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from model.translator import Translator

    translator = Translator.load(device="cpu")
    model_s = bare_model_seconds(translator)
    long_sentence = " ".join(FIFTEEN * 7)  # past the 100 positions: cut to the 98 the model reads
    payload, maps_only, long_tokens = payload_bytes(translator, long_sentence)

    port = free_port()
    proc = start_app(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}/?view=cross")  # the attention views, where its picks are timed
            page.get_by_label(INPUT_LABEL).wait_for(timeout=60_000)
            translate_in_page(page, "Ein Hund.")  # the first run loads the model: not what a user waits for each time
            # As a person uses the page: picks on each sentence, the next sentence shown after them (a chart that
            # has been redrawn many times, with earlier picks, is what a pick meets).
            enter, maps, heads, layers = [], [], [], []
            for s in FIFTEEN[:args.picked]:
                enter.append(timed(lambda s=s: translate_in_page(page, s), lambda: None))
                maps.append(bare_react_ms(page, ".explorer-maps"))
                heads += [pick_ms(page, ".explorer-maps", "radio", "Head", str(h)) for h in (2, 5, 8, 1, 4, 7)]
                layers += [pick_ms(page, ".explorer-maps", "radio", "Layer", str(layer)) for layer in (2, 1, 3, 1)]
            react = {"map": statistics.median(maps)}
            page.get_by_role("radio", name="Inside a head").click()
            page.get_by_text("1. The query's input vector x").wait_for()
            wait_idle(page)
            draw_every_chart(page, ".explorer-inside")
            react["inside"] = bare_react_ms(page, ".explorer-inside")
            inside = [pick_ms(page, ".explorer-inside", "radio", "Head", str(h)) for h in (3, 6)]
            inside += [pick_ms(page, ".explorer-inside", "radio", "Layer", str(layer)) for layer in (2, 3)]
            inside += [pick_ms(page, ".explorer-inside", "range", str(q)) for q in (1, 2)]
            page.get_by_role("radio", name="Decoding trace").click()
            page.get_by_text("Step 1 of").wait_for()
            wait_idle(page)
            react["trace"] = bare_react_ms(page, ".explorer-trace")
            steps = [pick_ms(page, ".explorer-trace", "button", "Next ▶") for _ in range(4)]
            page.get_by_role("radio", name="Encoder self-attention").click()
            wait_idle(page)

            data = default_data_dir()
            pool = load_split(data, "test")[0] if data else [f"{s} Nummer {i}." for i in range(args.sentences)
                                                              for s in FIFTEEN[:1]]
            t = time.perf_counter()
            for s in pool[:args.sentences]:
                translate_in_page(page, s)
            many = time.perf_counter() - t
            mem = rss_mb(proc.pid)
            browser.close()
    finally:
        stop_app(proc)

    e = statistics.median(enter)
    h, ly, st, ins = (statistics.median(x) for x in (heads, layers, steps, inside))
    print(f"Enter -> translation + first view: median {e:.2f} s over {len(enter)} 15-token sentences "
          f"(bare model call {model_s * 1000:.0f} ms, page/model {e / model_s:.1f}x; bar 20x)")
    print(f"bare Plotly.react of the same figures in this page, median: the map {react['map']:.1f} ms, the trace's "
          f"3 charts {react['trace']:.1f} ms, Inside a head's 9 charts {react['inside']:.1f} ms")
    for name, ms, base in (("head", heads, "map"), ("layer", layers, "map"), ("step", steps, "trace"),
                           ("inside a head: layer, head or query", inside, "inside")):
        print(f"change of {name}, drawn in the browser: median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms "
              f"= {statistics.median(ms) / react[base]:.1f}x / {max(ms) / react[base]:.1f}x a bare Plotly.react of "
              f"the same figures (bars 5x / 10x)")
    print(f"server memory after {args.sentences} different sentences: {mem:.0f} MB (bar 700 MB); "
          f"{many / args.sentences:.2f} s per sentence")
    print(f"maps on the wire, a {long_tokens}-token sentence: {payload / 1e6:.2f} MB for the three attention views "
          f"(each view's maps, lines and grid; {maps_only / 1e6:.2f} MB of it packed maps)")
    print(f"summary: enter {e:.2f}s head {h / 1000:.3f}s layer {ly / 1000:.3f}s step {st / 1000:.3f}s "
          f"inside {ins / 1000:.3f}s "
          f"memory {mem:.0f}MB model {model_s * 1000:.0f}ms react {react['map']:.1f}ms")


if __name__ == "__main__":
    main()
