"""A classroom against one server: many real browser sessions at once, each checked against the CLI.

    python bench/load_test.py [--sessions 5 10 20] [--memory 100 300 600] [--abuse]

Starts one `streamlit run app.py` on 127.0.0.1 and drives headless Chromium sessions with Playwright.

--sessions: for each N, N sessions open the page at once (every other one through a link that
  switches a different head off), each types its own test-set sentence, and all press Enter
  together. Every session must show exactly the translation `python -m model.translate` gives for
  its sentence (and, with heads off, the ablated one that `--mask-heads` gives). Prints per N the
  median and max seconds from Enter to the translation (bar at 20: median <= 4 s, max <= 10 s),
  stamped by the browser's network layer (the websocket frame that sent the sentence, the one
  that brought the translation back), and beside it the time until the page showed it. The
  browsers share the server's cores here, so they run at nice 19 (--nice), standing for the
  students' own machines; the server keeps its priority.
--memory: the server's resident memory after that many different sentences, each opened with an
  intervention (heads switched off, beam search, a reference), four sessions at a time
  (bar: <= 1 GB at 600).
--abuse: a browser closed mid-request, 200 rapid reruns from one session and a reload during a
  beam search, while another session keeps translating: it must get every answer right, and a new
  session afterwards too.

Exit status 1 when a result is wrong or a bar is missed.
"""

import argparse
import asyncio
import base64
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.app_speed import rss_mb  # noqa: E402
from bench.appserver import CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, free_port, start_app, stop_app  # noqa: E402
from model.data import default_data_dir, load_split  # noqa: E402

TIMEOUT_MS = 120_000
TRANSLATION_MARK = b"<div class='translation'>"  # in the protobuf message that carries the translation (app.py)
# Heads switched off by the sessions that switch heads off (0-based, as --mask-heads takes them).
SPECS = ["cross.2.4", "enc.0.1", "dec.1.7", "cross.1.0,cross.1.3", "enc.2", "cross.0.5", "dec.2.0", "enc.1.6"]


def one_based(spec: str) -> str:
    """--mask-heads 'cross.2.4' -> the link's off=cross.3.5 (the page counts from 1)."""
    return ",".join(".".join([p[0], *(str(int(x) + 1) for x in p[1:])]) for p in (i.split(".") for i in spec.split(",")))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants (Linux /proc)."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def cli_translations(sentences: list[str], spec: str = "") -> list[str]:
    """The other route: the command line's greedy output for each sentence."""
    args = [sys.executable, "-m", "model.translate", "--device", "cpu"] + (["--mask-heads", spec] if spec else [])
    r = subprocess.run(args, input="\n".join(sentences) + "\n", capture_output=True, text=True, cwd=ROOT,
                       timeout=600, check=True)
    return r.stdout.split("\n")[:len(sentences)]


async def open_session(browser, url: str):
    ctx = await browser.new_context(viewport={"width": 1300, "height": 1000})
    page = await ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # The browser's own network clock, not this script's: with 20 browsers on the server's 2 cores, the
    # events reach Python late. CDP stamps each websocket frame when it leaves or arrives.
    page.sent, page.received = [], []
    cdp = await ctx.new_cdp_session(page)
    await cdp.send("Network.enable")
    cdp.on("Network.webSocketFrameSent", lambda e: page.sent.append((e["timestamp"], frame_bytes(e))))
    cdp.on("Network.webSocketFrameReceived", lambda e: page.received.append((e["timestamp"], frame_bytes(e))))
    await page.goto(url, timeout=TIMEOUT_MS)
    await page.get_by_label(INPUT_LABEL).wait_for(timeout=TIMEOUT_MS)
    await page.wait_for_load_state("networkidle", timeout=TIMEOUT_MS)
    await idle(page)
    return ctx, page, errors


def frame_bytes(event) -> bytes:
    r = event["response"]
    return base64.b64decode(r["payloadData"]) if r["opcode"] == 2 else r["payloadData"].encode()


def round_trip(page, sentence: str) -> float:
    """Seconds from the websocket frame that sent this sentence (the Enter) to the one that brought its
    translation back, both stamped by the browser's network layer."""
    sent = min(t for t, data in page.sent if sentence.encode() in data)
    return min(t for t, data in page.received if t >= sent and TRANSLATION_MARK in data) - sent


async def idle(page):
    await page.wait_for_timeout(50)
    await page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]') && "
                                 "!document.querySelector('[data-stale=\"true\"]')", timeout=TIMEOUT_MS)


async def translation_of(page, sentence: str, ablated: bool) -> dict:
    """Type, press Enter, wait for the translation (timed) and the ablated output; read both."""
    box = page.get_by_label(INPUT_LABEL)
    await box.fill(sentence)
    start = time.perf_counter()
    await box.press("Enter")
    await page.locator(".translation").wait_for(timeout=TIMEOUT_MS)
    out = {"shown": time.perf_counter() - start}
    if ablated:
        await page.get_by_text("Without those heads:").wait_for(timeout=TIMEOUT_MS)
    await idle(page)
    out["text"] = await page.locator(".translation").inner_text()
    out["arrived"] = round_trip(page, sentence)
    if ablated:  # the diff chips: struck-through ones are only in the original
        chips = page.locator("p:has-text('Without those heads:') span.chip")
        out["ablated"] = " ".join([t for t, cls in zip(await chips.all_inner_texts(),
                                                       [await c.get_attribute("class") for c in await chips.all()])
                                   if "del" not in cls])
    return out


async def sessions_round(browser, base: str, sentences: list[str], expected: dict, n: int) -> dict:
    opened = await asyncio.gather(*[open_session(browser, base + (f"?view=ablate&off={one_based(SPECS[i // 2 % len(SPECS)])}"
                                                                  if i % 2 else ""))
                                    for i in range(n)])
    got = await asyncio.gather(*[translation_of(page, sentences[i], i % 2 == 1) for i, (_, page, _) in enumerate(opened)])
    wrong = []
    for i, g in enumerate(got):
        if g["text"] != expected[("", sentences[i])]:
            wrong.append((i, "translation", g["text"], expected[("", sentences[i])]))
        if i % 2:
            spec = SPECS[i // 2 % len(SPECS)]
            if g["ablated"] != expected[(spec, sentences[i])]:
                wrong.append((i, spec, g["ablated"], expected[(spec, sentences[i])]))
    errors = [e for _, _, errs in opened for e in errs]
    for ctx, _, _ in opened:
        await ctx.close()
    arrived, shown = [g["arrived"] for g in got], [g["shown"] for g in got]
    return {"n": n, "median": statistics.median(arrived), "max": max(arrived), "shown_median": statistics.median(shown),
            "shown_max": max(shown), "wrong": wrong, "errors": errors}


def expected_outputs(sentences: list[str], n_max: int) -> dict:
    """(spec, sentence) -> the CLI's output, for every sentence and the spec its session would use."""
    expected = dict(zip([("", s) for s in sentences], cli_translations(sentences)))
    for spec in {SPECS[i // 2 % len(SPECS)] for i in range(1, n_max, 2)}:
        mine = [sentences[i] for i in range(1, n_max, 2) if SPECS[i // 2 % len(SPECS)] == spec]
        expected.update(zip([(spec, s) for s in mine], cli_translations(mine, spec)))
    return expected


async def memory_run(browser, base: str, pool: list[str], refs: list[str], marks: list[int], pid: int) -> list:
    """Open marks[-1] different sentences with an intervention each, four sessions at a time; RSS at each mark."""
    links = []
    for i, (s, ref) in enumerate(zip(pool, refs)):
        q = {"s": s, **[{"view": "ablate", "off": one_based(SPECS[i % len(SPECS)])}, {"view": "beam", "beam": "4"},
                         {"view": "reference", "ref": ref}][i % 3]}
        wait = ["Without those heads:", "n-best list", "Loss per reference token"][i % 3]
        links.append((base + "?" + urllib.parse.urlencode(q), wait))
    contexts = [await browser.new_context(viewport={"width": 1300, "height": 1000}) for _ in range(4)]
    pages = [await c.new_page() for c in contexts]
    rows, done, t0 = [], 0, time.perf_counter()

    async def visit(page, link, wait):
        await page.goto(link, timeout=TIMEOUT_MS)
        await page.get_by_text(wait).first.wait_for(timeout=TIMEOUT_MS)
        await idle(page)

    for mark in marks:
        while done < mark:
            batch = links[done:min(mark, done + len(pages))]
            await asyncio.gather(*[visit(p, link, wait) for p, (link, wait) in zip(pages, batch)])
            done += len(batch)
        rows.append((mark, rss_mb(pid), time.perf_counter() - t0))
        print(f"after {mark:4d} sentences: server RSS {rows[-1][1]:7.1f} MB ({rows[-1][2]:.0f} s)", flush=True)
    for c in contexts:
        await c.close()
    return rows


async def abuse_run(browser, base: str, sentences: list[str], expected: dict) -> list[str]:
    """Misbehaving sessions beside a well-behaved one; returns what went wrong (nothing, when it holds)."""
    problems = []
    ctx, observer, errors = await open_session(browser, base)

    async def observe():
        for s in sentences[:6]:
            got = await translation_of(observer, s, False)
            if got["text"] != expected[("", s)]:
                problems.append(f"observer: {s!r} gave {got['text']!r}, not {expected[('', s)]!r}")

    async def close_mid_request():
        for s in sentences[6:11]:
            c, page, _ = await open_session(browser, base)
            await page.get_by_label(INPUT_LABEL).fill(s)
            await page.get_by_label(INPUT_LABEL).press("Enter")
            await page.wait_for_timeout(100)
            await c.close()  # the browser goes away while the server runs the script

    async def rapid_reruns():
        c, page, _ = await open_session(browser, base)
        box = page.get_by_label(INPUT_LABEL)
        for k in range(200):  # no waiting: each Enter interrupts the run before it
            await box.fill(f"{sentences[k % len(sentences)]} {k}")
            await box.press("Enter")
        last = f"{sentences[199 % len(sentences)]} 199"
        await page.wait_for_function("document.querySelector('.translation') !== null", timeout=TIMEOUT_MS)
        await idle(page)
        want = cli_translations([last])[0]
        got = await page.locator(".translation").inner_text()
        if got != want:
            problems.append(f"after 200 reruns the page shows {got!r}, not the last sentence's {want!r}")
        await c.close()

    async def reload_during_beam():
        c, page, _ = await open_session(browser, base + "?view=beam&beam=8")
        for s in sentences[11:14]:
            await page.get_by_label(INPUT_LABEL).fill(s)
            await page.get_by_label(INPUT_LABEL).press("Enter")
            await page.wait_for_timeout(300)
            await page.reload()
            await page.get_by_label(INPUT_LABEL).wait_for(timeout=TIMEOUT_MS)
        await c.close()

    await asyncio.gather(observe(), close_mid_request(), rapid_reruns(), reload_during_beam())
    problems += [f"observer page error: {e}" for e in errors]
    await ctx.close()
    c, page, _ = await open_session(browser, base)  # and a new session afterwards
    got = await translation_of(page, sentences[0], False)
    if got["text"] != expected[("", sentences[0])]:
        problems.append(f"a new session afterwards got {got['text']!r}")
    await c.close()
    return problems


async def main_async(args) -> int:
    from playwright.async_api import async_playwright

    data = default_data_dir()
    if data is None:
        print("error: Multi30k not found (set MULTI30K_DIR)", file=sys.stderr)
        return 2
    de, en = load_split(data, "test")
    n_max = max(args.sessions or [0])
    sentences = de[:max(n_max, 20)]
    expected = expected_outputs(sentences, n_max)
    port = free_port()
    proc = start_app(port)
    base = f"http://127.0.0.1:{port}/"
    if args.nice:  # the browsers (started below) stand for the students' own machines: the server comes first
        os.nice(args.nice)
    failed = False
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            _, warm, _ = await open_session(browser, base)  # the first run loads the model
            await translation_of(warm, "Ein Hund.", False)
            for n in args.sessions or []:
                cpu0, me0 = cpu_seconds(proc.pid), cpu_seconds(os.getpid())
                r = await sessions_round(browser, base, sentences, expected, n)
                cpu, me = cpu_seconds(proc.pid) - cpu0, cpu_seconds(os.getpid()) - me0
                bar = n != 20 or (r["median"] <= 4 and r["max"] <= 10)
                print(f"{n:3d} sessions: Enter -> translation at the browser median {r['median']:.2f} s, max "
                      f"{r['max']:.2f} s (drawn in the page: median {r['shown_median']:.2f} s, max "
                      f"{r['shown_max']:.2f} s); wrong results {len(r['wrong'])}, page errors {len(r['errors'])}"
                      + ("" if n != 20 else f"; bar (median <= 4 s, max <= 10 s) {'met' if bar else 'MISSED'}")
                      + f"\n     CPU seconds in the round: server {cpu:.1f}, browsers and this script {me:.1f}",
                      flush=True)
                for w in r["wrong"] + r["errors"]:
                    print("   ", w)
                failed |= bool(r["wrong"] or r["errors"]) or not bar
            if args.memory:
                rows = await memory_run(browser, base, de[100:], en[100:], sorted(args.memory), proc.pid)
                ok = rows[-1][1] <= 1024
                print(f"memory bar (<= 1 GB after {rows[-1][0]} sentences): {'met' if ok else 'MISSED'}")
                failed |= not ok
            if args.abuse:
                problems = await abuse_run(browser, base, sentences, expected)
                print(f"abuse (closed mid-request, 200 rapid reruns, reload during beam): "
                      f"{'served everyone right' if not problems else 'PROBLEMS'}")
                for pr in problems:
                    print("   ", pr)
                failed |= bool(problems)
            await browser.close()
    finally:
        stop_app(proc)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, nargs="*", default=[5, 10, 20], help="simultaneous sessions per round")
    ap.add_argument("--memory", type=int, nargs="*", default=[], help="RSS after this many sentences")
    ap.add_argument("--nice", type=int, default=19,
                    help="niceness of this script and its browsers (the server keeps 0); 0 to share equally")
    ap.add_argument("--abuse", action="store_true", help="misbehaving sessions beside a well-behaved one")
    return asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
