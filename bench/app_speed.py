"""The app as a person feels it: a real browser against `streamlit run app.py`.

    python bench/app_speed.py [--sentences 100]

Prints, each with its bar and next to the bare model call measured in the same run:
Enter -> translation and heatmaps drawn (bar 2 s); a change of head, layer or step
(bar 0.5 s); in "Inside a head", a change of head or query token (bar 0.5 s);
the server's resident memory after N different sentences (bar 700 MB).
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.appserver import (CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, free_port, start_app,  # noqa: E402
                             stop_app, translate_in_page, wait_idle)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=100, help="different sentences before reading memory")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from model.translator import Translator

    model_s = bare_model_seconds(Translator.load(device="cpu"))

    port = free_port()
    proc = start_app(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}")
            page.get_by_label(INPUT_LABEL).wait_for(timeout=60_000)
            translate_in_page(page, "Ein Hund.")  # the first run loads the model: not what a user waits for each time
            enter = [timed(lambda s=s: translate_in_page(page, s), lambda: None) for s in FIFTEEN]

            def radio(group, name):
                return page.get_by_role("radiogroup", name=group).get_by_role("radio", name=name, exact=True)

            heads = []  # the first view: cross-attention, layer 3
            for h in (2, 5, 8, 1):
                heads.append(timed(lambda h=h: radio("Head", str(h)).click(),
                                   lambda h=h: (page.get_by_text(f"Cross-attention, layer 3, head {h}").first.wait_for(),
                                                wait_idle(page))))
            layers = []
            for layer in (2, 1):
                layers.append(timed(lambda layer=layer: radio("Layer", str(layer)).click(),
                                    lambda layer=layer: (page.get_by_text(f"Cross-attention, layer {layer}, head 1")
                                                         .first.wait_for(), wait_idle(page))))
            page.get_by_role("radio", name="Inside a head").click()
            page.get_by_text("1. The query's input vector x").wait_for()
            wait_idle(page)
            inside = []
            for h in (3, 6):
                inside.append(timed(lambda h=h: radio("Head", str(h)).click(),
                                    lambda h=h: (page.get_by_text(f"layer 1, head {h}, query 0").first.wait_for(),
                                                 wait_idle(page))))
            for q in (1, 2):
                def next_query():
                    page.get_by_role("slider").first.focus()
                    page.keyboard.press("ArrowRight")
                inside.append(timed(next_query, lambda q=q: (page.get_by_text(f"head 6, query {q}").first.wait_for(),
                                                             wait_idle(page))))
            page.get_by_role("radio", name="Decoding trace").click()
            page.get_by_text("Step 1 of").wait_for()
            wait_idle(page)
            steps = []
            for k in (2, 3, 4, 5):
                steps.append(timed(lambda: page.get_by_role("button", name="Next ▶").click(),
                                   lambda k=k: (page.get_by_text(f"Step {k} of").wait_for(), wait_idle(page))))
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

    e, h, ly, st, ins = (statistics.median(x) for x in (enter, heads, layers, steps, inside))
    print(f"Enter -> translation + heatmaps: median {e:.2f} s over {len(enter)} 15-token sentences "
          f"(bar 2 s; bare model call {model_s * 1000:.0f} ms, page/model {e / model_s:.1f}x)")
    print(f"change of head {h:.2f} s, layer {ly:.2f} s, step {st:.2f} s (bar 0.5 s)")
    print(f"inside a head: change of head or query {ins:.2f} s (median of {len(inside)}; max {max(inside):.2f} s; "
          f"bar 0.5 s)")
    print(f"server memory after {args.sentences} different sentences: {mem:.0f} MB (bar 700 MB); "
          f"{many / args.sentences:.2f} s per sentence")
    print(f"summary: enter {e:.2f}s head {h:.2f}s layer {ly:.2f}s step {st:.2f}s inside {ins:.2f}s memory {mem:.0f}MB "
          f"model {model_s * 1000:.0f}ms")


if __name__ == "__main__":
    main()
