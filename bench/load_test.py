"""A classroom against one server: many real browser sessions at once, each checked against the CLI.

    python bench/load_test.py [--sessions 5 10 20] [--memory 100 300 600] [--abuse]
    python bench/load_test.py --proxy 2 --sessions 40 --lost 20
    python bench/load_test.py --sessions 20 --heavy 2
    python bench/load_test.py --sessions 20 --visitor 2 --heavy 4      (the hostile mode: both bars of a fair server)

Starts one `streamlit run app.py` on 127.0.0.1 (or, with --proxy N, deploy/serve.sh: nginx in front of N
replicas) and drives headless Chromium sessions with Playwright.

--sessions: for each N, N sessions open the page at once (every other one through a link that
  switches a different head off), each types its own test-set sentence, and all press Enter
  together. Every session must show exactly the translation `python -m model.translate` gives for
  its sentence (and, with heads off, the ablated one that `--mask-heads` gives). Prints per N the
  median and max seconds from Enter to the translation (bar at 20 and at 40: median <= 4 s, max
  <= 10 s), stamped by the browser's network layer (the websocket frame that sent the sentence, the
  one that brought the translation back), and beside it the time until the page showed it, and
  until a heads-off session showed its second output (the same sentence with those heads off). The
  browsers share the server's cores here, so they run at nice 19 (--nice), standing for the
  students' own machines; the server keeps its priority.
--heavy K: each round twice, side by side: as above, then again while K more sessions keep opening the
  heaviest views (live head importance, contributions, beam search of width 8) by link, each on a new
  100-token sentence (no cache helps them). The page runs such computations one at a time server-wide
  (views/calls.py, HEAVY): the classroom must keep its bar at 20 sessions. Prints both rounds and how
  many heavy pages were drawn meanwhile, and how long they took; then, while they go on, a new student session's
  first visit to Contributions (seconds from the link to the drawn view; bar <= 10 s), and the server's peak
  resident memory in the round (sampled every 0.5 s; bar < 2 GB).
--visitor K: each round again while K sessions of one visitor keep typing new 97-token sentences and pressing
  Enter. The class's median and max Enter -> translation against the same round without the visitor, in the same
  run (bars: median <= 1.5x, max <= 2x; model/batching.py decodes long sentences in a lane that gives way).
Every round types test sentences of its own (the server caches translations: a round on the sentences of the round
before would be served from that cache), after one unmeasured warm-up round (the browsers' and the views' first
use).
--memory: the server's resident memory after that many different sentences, each opened with an
  intervention (heads switched off, beam search, a reference), four sessions at a time
  (bar: <= 1 GB at 600).
--proxy N: every round through the proxy, which also prints how the sessions spread over the replicas (the
  proxy's X-Replica header, asked with each browser's own cookie).
--lost SESSIONS (with --proxy): that many sessions, each on its own sentence and view; the replica of the first
  is killed. Sessions on the survivors must keep their WebSocket and page; the lost ones must come back through
  the proxy to their view and translate the sentence typed next right (seconds from the kill to the new socket and
  to that translation); prints what was lost (0 is the bar), whether every page's box, link and translation agree,
  and when the replica serve.sh restarts takes new sessions.
--abuse: a browser closed mid-request, 200 rapid reruns from one session and a reload during a
  beam search, while another session keeps translating: it must get every answer right, and a new
  session afterwards too.

Exit status 1 when a result is wrong or a bar is missed.
"""

import argparse
import asyncio
import base64
import collections
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.app_speed import rss_mb  # noqa: E402
from tests.appserver import (CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, behind_the_servers, cpu_seconds,  # noqa: E402
                             free_port, start_app, stop_app)
from model.data import default_data_dir, load_split  # noqa: E402

TIMEOUT_MS = 120_000
TRANSLATION_MARK = b"<div class='translation'>"  # in the protobuf message that carries the translation (app.py)
# Heads switched off by the sessions that switch heads off (0-based, as --mask-heads takes them).
SPECS = ["cross.2.4", "enc.0.1", "dec.1.7", "cross.1.0,cross.1.3", "enc.2", "cross.0.5", "dec.2.0", "enc.1.6"]


def one_based(spec: str) -> str:
    """--mask-heads 'cross.2.4' -> the link's off=cross.3.5 (the page counts from 1)."""
    return ",".join(".".join([p[0], *(str(int(x) + 1) for x in p[1:])]) for p in (i.split(".") for i in spec.split(",")))


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
    # The page's WebSockets (a reconnect opens a new one) and what a Content-Security-Policy refused.
    page.ws_opened, page.ws_closed, page.csp = [], [], []
    cdp.on("Network.webSocketCreated", lambda e: page.ws_opened.append(time.perf_counter()))
    cdp.on("Network.webSocketClosed", lambda e: page.ws_closed.append(time.perf_counter()))
    page.on("console", lambda m: page.csp.append(m.text) if "Content Security Policy" in m.text else None)
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
    # Predicates as functions: a string would be evaluated in the page, which the proxy's policy forbids (no eval).
    await page.wait_for_timeout(50)
    await page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
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
        out["ablated_shown"] = time.perf_counter() - start
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
    errors = [e for _, _, errs in opened for e in errs] + [e for _, page, _ in opened for e in page.csp]
    replicas = collections.Counter([await replica_of(ctx, base) for ctx, _, _ in opened])
    for ctx, _, _ in opened:
        await ctx.close()
    arrived, shown = [g["arrived"] for g in got], [g["shown"] for g in got]
    ablated = [g["ablated_shown"] for g in got if "ablated_shown" in g] or [float("nan")]
    return {"n": n, "median": statistics.median(arrived), "max": max(arrived), "shown_median": statistics.median(shown),
            "shown_max": max(shown), "ablated_median": statistics.median(ablated), "ablated_max": max(ablated),
            "wrong": wrong, "errors": errors, "replicas": replicas}


HEAVY_VIEWS = ({"view": "importance"}, {"view": "contributions"}, {"view": "beam", "beam": "8"}, {"view": "patch"},
               {"view": "faithful"}, {"view": "attribute", "method": "integrated_gradients"})


def long_sentence(i: int, nouns: int = 90) -> str:
    """A different long sentence for each i: `nouns` nouns with commas in an order of its own (bench/heavy_views.py:
    the model's longest output, 50 tokens). 90 nouns: cut at the model's 100 positions as the page cuts it; 49: 97
    tokens, the longest a visitor can send whole."""
    import random

    from bench.heavy_views import NOUNS

    return ", ".join(random.Random(i).sample(NOUNS * 9, nouns))


async def visitor_loop(browser, base: str, who: int, stop: asyncio.Event, done: list):
    """One session typing a new 97-token sentence and pressing Enter, again and again, until `stop`: seconds each."""
    ctx, page, _ = await open_session(browser, base)
    i = 0
    while not stop.is_set():
        got = await translation_of(page, long_sentence(7000 + 100 * who + i, nouns=49), False)
        done.append(got["shown"])
        i += 1
    await ctx.close()


async def first_contributions(browser, base: str, sentence: str) -> tuple[float, float]:
    """Seconds from a new session's link to its Contributions view drawn (the script done, the chart there), and to
    its translation shown (the part before the view's own computation)."""
    ctx = await browser.new_context(viewport={"width": 1300, "height": 1000})
    page = await ctx.new_page()
    start = time.perf_counter()
    await page.goto(base + "?" + urllib.parse.urlencode({"s": sentence, "view": "contributions"}), timeout=TIMEOUT_MS)
    await page.locator(".translation").wait_for(timeout=TIMEOUT_MS)
    shown = time.perf_counter() - start
    await idle(page)
    seconds = time.perf_counter() - start
    await ctx.close()
    return seconds, shown


async def peak_rss(pid: int, stop: asyncio.Event) -> float:
    """The largest resident memory of the server (MB) until `stop`, sampled every 0.5 s."""
    peak = 0.0
    while not stop.is_set():
        peak = max(peak, rss_mb(pid))
        await asyncio.sleep(0.5)
    return peak


async def heavy_loop(browser, base: str, who: int, stop: asyncio.Event, done: list):
    """One session opening the heavy views by link, one after another, until `stop` (or cancelled: a page on a
    100-token sentence may compute for minutes): (view, seconds) of each page drawn to `done`."""
    ctx = await browser.new_context(viewport={"width": 1300, "height": 1000})
    page = await ctx.new_page()
    i = 0
    try:
        while not stop.is_set():
            params = {"s": long_sentence(1000 * who + i), **HEAVY_VIEWS[(who + i) % len(HEAVY_VIEWS)]}
            start = time.perf_counter()
            await page.goto(base + "?" + urllib.parse.urlencode(params), timeout=TIMEOUT_MS)
            await page.locator(".translation").wait_for(timeout=TIMEOUT_MS)
            await page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                         timeout=10 * TIMEOUT_MS)
            done.append((params["view"], time.perf_counter() - start))
            i += 1
    finally:
        await ctx.close()


def fresh_sentences(de: list[str], skip: int, block: int, n_max: int) -> list[str]:
    """The test sentences of a later round, n_max + 1 of them: past the first `skip` (the first round's, which the
    abuse run and the lost replica use too), `block` rounds on."""
    start = skip + block * (n_max + 1)
    return de[start:start + n_max + 1]


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
        await page.wait_for_function("() => document.querySelector('.translation') !== null", timeout=TIMEOUT_MS)
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


# Through the proxy (--proxy N): deploy/serve.sh, N replicas behind nginx ------------------------------------------


def start_proxy(n: int, run_dir: Path, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    """`deploy/serve.sh n PORT` on 127.0.0.1 (replica k on PORT+k), its run folder run_dir, with `env` added to its
    environment; returns (process, PORT) once the proxy answers, which serve.sh allows only after every replica has
    answered its health check."""
    while True:  # a port whose next n are free too
        port = free_port()
        try:
            for k in range(1, n + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + k))
            break
        except OSError:
            continue
    log = open(run_dir / "serve.out", "w")
    proc = subprocess.Popen(["bash", str(ROOT / "deploy/serve.sh"), str(n), str(port)], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "LISTEN_ADDRESS": "127.0.0.1", "RUN_DIR": str(run_dir),
                                 "PYTHON": sys.executable, **(env or {})})
    deadline = time.time() + 60 + 30 * n
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"deploy/serve.sh exited: {(run_dir / 'serve.out').read_text()[-2000:]}")
        if health(port):
            return proc, port
        time.sleep(0.3)
    stop_proxy(proc)
    raise RuntimeError(f"the proxy did not answer within {deadline} s: {(run_dir / 'serve.out').read_text()[-2000:]}")


def stop_proxy(proc: subprocess.Popen) -> int:
    """SIGTERM, as Ctrl-C would: serve.sh stops nginx and the replicas. Its exit status (0: every port closed)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


def health(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok"
    except OSError:
        return False


async def replica_of(ctx, base: str) -> str | None:
    """The replica that holds this browser's session: the proxy's X-Replica header on a request with the
    browser's cookies (None without a proxy)."""
    r = await ctx.request.get(base + "_stcore/health")
    return r.headers.get("x-replica")


# Every session its own sentence and view, all in the link; "Stretch colours" (attention views) is not in it.
LOST_VIEWS = [("view=cross&layer=2&head=3", "Cross-attention"), ("view=trace&step=2", "Decoding trace"),
              ("view=ablate&off=enc.1.2", "Ablate heads"), ("view=dec&layer=1&head=4", "Decoder self-attention")]


async def page_state(page) -> dict:
    """What the student sees: the link's parameters, the sentence box, the translation, the view, and the Stretch
    toggle."""
    stretch = page.get_by_role("switch", name="Stretch colours")
    return {"link": dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.url).query)),
            "box": await page.get_by_label(INPUT_LABEL).input_value(),
            "translation": await page.locator(".translation").inner_text(),
            "view": await page.get_by_role("radiogroup", name="View").get_by_role("radio", checked=True).inner_text(),
            "stretch": await stretch.is_checked() if await stretch.count() else None}


async def translate_again(page, sentence: str) -> str:
    """Type another sentence on a page that shows a translation already; the translation once it has changed
    (the old one if it never does)."""
    translation = page.locator(".translation")
    old = await translation.inner_text()
    box = page.get_by_label(INPUT_LABEL)
    await box.fill(sentence)
    await box.press("Enter")
    deadline = time.perf_counter() + TIMEOUT_MS / 1000
    while await translation.inner_text() == old and time.perf_counter() < deadline:
        await asyncio.sleep(0.1)
    await idle(page)
    return await translation.inner_text()


def disagreement(state: dict, expected: dict) -> str | None:
    """What does not fit on a page: the box, the link's sentence and the translation must be one sentence's."""
    if state["link"].get("s") != state["box"]:
        return f"the box holds {state['box']!r}, the link {state['link'].get('s')!r}"
    if state["translation"] != expected.get(("", state["box"])):
        return f"the translation {state['translation']!r} is not the box's {expected.get(('', state['box']))!r}"
    return None


async def lost_replica_run(browser, base: str, run_dir: Path, port: int, sentences: list[str], expected: dict,
                           n: int) -> dict:
    """n sessions over the replicas, each on its own sentence and view (every fourth also with Stretch colours on,
    which the link does not hold); SIGKILL the replica of session 0. Every session on a survivor must keep its
    WebSocket and translate a new sentence right; every session on the lost one must come back, through the proxy,
    with the sentence typed first after the kill, its view and its link. Then every session translates one more
    sentence, and on every page the box, the link and the translation must agree. The replica serve.sh started again
    must take new sessions. "forgotten": what a page showed or was given and did not keep (a sentence, a toggle)."""
    links = [f"{base}?{urllib.parse.urlencode({'s': sentences[i]})}&{LOST_VIEWS[i % 4][0]}" for i in range(n)]
    opened = await asyncio.gather(*[open_session(browser, link) for link in links])
    pages = [page for _, page, _ in opened]
    for i, page in enumerate(pages):
        await page.locator(".translation").wait_for(timeout=TIMEOUT_MS)
        if i % 4 == 0:
            await page.get_by_text("Stretch colours").click()
        await idle(page)
    before = [await page_state(page) for page in pages]
    replicas = [await replica_of(ctx, base) for ctx, _, _ in opened]
    victim = replicas[0]
    lost = [i for i in range(n) if replicas[i] == victim]
    if len(lost) == n:
        raise RuntimeError(f"every session is on replica {victim}: nothing to compare with")
    ws_closed = [len(page.ws_closed) for page in pages]
    pid = int((run_dir / f"replica-{victim}.pid").read_text())
    killed = time.perf_counter()
    os.kill(pid, signal.SIGKILL)

    async def come_back(i: int) -> tuple[float, float, str]:
        """The page notices the lost socket and opens a new one through the proxy, to a new, empty session (the
        page keeps showing what it showed), and asks for a run at once (views/state.py rerun_on_reconnect): it reads
        the link and the boxes' values (views/state.py read_url). Then the next sentence and Enter.
        Returns (seconds to the new socket, seconds to the translation, the translation shown)."""
        page = pages[i]
        while not any(t > killed for t in page.ws_opened):
            if time.perf_counter() - killed > TIMEOUT_MS / 1000:
                raise TimeoutError(f"session {i} opened no new WebSocket")
            await asyncio.sleep(0.05)
        reconnected = min(t for t in page.ws_opened if t > killed) - killed
        box = page.get_by_label(INPUT_LABEL)
        await box.fill(sentences[i + n])
        await box.press("Enter")
        want = expected[("", sentences[i + n])]  # the page's own run at the reconnect draws the old sentence first
        while await page.locator(".translation").inner_text() != want:
            if time.perf_counter() - killed > TIMEOUT_MS / 1000:
                break  # judged below: the typed sentence was forgotten
            await asyncio.sleep(0.05)
        served = time.perf_counter() - killed
        await idle(page)
        await page.wait_for_timeout(1000)  # the link's run and the typed one can follow each other
        await idle(page)
        return reconnected, served, await page.locator(".translation").inner_text()

    back = dict(zip(lost, await asyncio.gather(*[come_back(i) for i in lost])))
    wrong, forgotten, disagree = [], [], []
    for i in range(n):
        now = await page_state(pages[i])
        if now["view"] != before[i]["view"]:
            wrong.append((i, "view", now["view"], before[i]["view"]))
        if now["stretch"] != before[i]["stretch"]:
            (forgotten if i in back else wrong).append((i, "Stretch colours", now["stretch"], before[i]["stretch"]))
        if i not in back:
            if len(pages[i].ws_closed) != ws_closed[i]:
                wrong.append((i, "a survivor's WebSocket closed"))
            if now != before[i]:
                wrong.append((i, "a survivor's page changed", now, before[i]))
            continue
        if now["box"] != sentences[i + n] or back[i][2] != expected[("", sentences[i + n])]:
            forgotten.append((i, "the sentence typed first after the reconnect", now["box"], back[i][2]))
        if now["link"] != {**before[i]["link"], "s": now["box"]}:
            wrong.append((i, "the link after the reconnect", now["link"], before[i]["link"]))
        if problem := disagreement(now, expected):
            disagree.append((i, "after the reconnect", problem))
    moved_to = collections.Counter([await replica_of(opened[i][0], base) for i in lost])
    for i in range(n):  # and every session translates its next sentence, right, and shows one sentence throughout
        s = sentences[i + 2 * n]
        got = await translate_again(pages[i], s)
        now = await page_state(pages[i])
        if now["box"] != s or got != expected[("", s)]:
            forgotten.append((i, "the next sentence", now["box"], got))
        if problem := disagreement(now, expected):
            disagree.append((i, "after the next sentence", problem))

    replica_port = port + int(victim)  # serve.sh starts it again; nginx takes it back after fail_timeout
    while not health(replica_port):
        await asyncio.sleep(0.2)
    restarted = time.perf_counter() - killed
    rejoined = None
    while rejoined is None and time.perf_counter() - killed < restarted + 60:
        ctx = await browser.new_context()
        await (await ctx.new_page()).goto(base, timeout=TIMEOUT_MS)
        if await replica_of(ctx, base) == victim:
            rejoined = time.perf_counter() - killed
        await ctx.close()
        await asyncio.sleep(0.5)
    errors = [e for _, _, errs in opened for e in errs] + [e for page in pages for e in page.csp]
    for ctx, _, _ in opened:
        await ctx.close()
    return {"n": n, "spread": collections.Counter(replicas), "victim": victim, "lost": len(lost), "moved_to": moved_to,
            "reconnect_median": statistics.median(b[0] for b in back.values()),
            "reconnect_max": max(b[0] for b in back.values()),
            "back_median": statistics.median(b[1] for b in back.values()), "back_max": max(b[1] for b in back.values()),
            "wrong": wrong, "forgotten": forgotten, "disagree": disagree, "restarted": restarted, "rejoined": rejoined,
            "errors": errors}


async def main_async(args) -> int:
    from playwright.async_api import async_playwright

    data = default_data_dir()
    if data is None:
        print("error: Multi30k not found (set MULTI30K_DIR)", file=sys.stderr)
        return 2
    de, en = load_split(data, "test")
    n_max = max(args.sessions or [0])
    sentences = de[:max(n_max + 1, 3 * args.lost, 20)]
    expected = expected_outputs(sentences, n_max)
    if args.proxy:
        run_dir = Path(tempfile.mkdtemp(prefix="serve-"))
        proc, port = start_proxy(args.proxy, run_dir)
        print(f"deploy/serve.sh {args.proxy} {port}: nginx on 127.0.0.1:{port}, replicas on {port + 1}.."
              f"{port + args.proxy}, logs in {run_dir}", flush=True)
    else:
        port = free_port()
        proc = start_app(port)
    base = f"http://127.0.0.1:{port}/"
    if args.nice:  # the browsers (started below) stand for the students' own machines: the server comes first
        behind_the_servers(args.nice)
    failed = False
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for _ in range(args.proxy or 1):  # the first run loads the model (the proxy takes turns: each replica)
                _, warm, _ = await open_session(browser, base)
                await translation_of(warm, "Ein Hund.", False)
            rounds = [(n, kind, k) for n in args.sessions or []
                      for kind, k in [(None, 0), ("visitor", args.visitor), ("heavy", args.heavy)] if kind is None or k]
            if rounds:  # a round the class's browsers and the views' first use pay for, measured by none
                warmup = fresh_sentences(de, len(sentences), len(rounds), n_max)
                r = await sessions_round(browser, base, warmup, {**expected, **expected_outputs(warmup, n_max)}, n_max)
                print(f"warm-up: {n_max} sessions, median {r['median']:.2f} s, max {r['max']:.2f} s (not measured)",
                      flush=True)
            alone = {}  # n -> the round without extra sessions
            for number, (n, kind, k) in enumerate(rounds):
                # each round on sentences of its own: the server caches translations, and a round on the sentences
                # of the round before would be served from that cache
                mine = fresh_sentences(de, len(sentences), number - 1, n_max) if number else sentences
                if number:
                    expected = {**expected, **expected_outputs(mine, n)}
                cpu0, me0 = cpu_seconds(proc.pid), cpu_seconds(os.getpid())
                stop, extra_done = asyncio.Event(), []
                loop = {"heavy": heavy_loop, "visitor": visitor_loop}.get(kind)
                loops = [asyncio.create_task(loop(browser, base, j, stop, extra_done)) for j in range(k)]
                memory = asyncio.create_task(peak_rss(proc.pid, stop)) if kind == "heavy" and not args.proxy else None
                if k:
                    await asyncio.sleep(3)  # the extra sessions are under way when the class presses Enter
                r = await sessions_round(browser, base, mine, expected, n)
                if kind == "heavy":
                    contributions, translated = await first_contributions(browser, base, mine[n])
                stop.set()
                for task in loops if kind == "heavy" else []:
                    task.cancel()
                await asyncio.gather(*loops, return_exceptions=True)
                cpu, me = cpu_seconds(proc.pid) - cpu0, cpu_seconds(os.getpid()) - me0
                bar = n not in (20, 40) or args.proxy or (r["median"] <= 4 and r["max"] <= 10)
                if kind is None:
                    alone[n] = r
                if kind == "heavy":
                    seconds = [sec for _, sec in extra_done] or [float("nan")]
                    peak = await memory if memory else float("nan")
                    fair = contributions <= 10 and (memory is None or peak < 2048)
                    print(f"    with {k} more sessions on the heaviest views meanwhile ({len(extra_done)} heavy pages "
                          f"drawn, {statistics.median(seconds):.1f} s median, {max(seconds):.1f} s max each); a new "
                          f"student's first Contributions {contributions:.1f} s (its translation shown after {translated:.1f} s), "
                          f"the server's peak memory "
                          f"{peak:.0f} MB: bar (<= 10 s, < 2 GB) {'met' if fair else 'MISSED'}", flush=True)
                    failed |= not fair
                if kind == "visitor":
                    ratio = r["median"] / alone[n]["median"], r["max"] / alone[n]["max"]
                    fair = ratio[0] <= 1.5 and ratio[1] <= 2
                    print(f"    with {k} sessions of a visitor sending 97-token sentences meanwhile ({len(extra_done)} "
                          f"sent, {statistics.median(extra_done or [float('nan')]):.1f} s median each): the class's "
                          f"median {ratio[0]:.2f}x and max {ratio[1]:.2f}x the round without the visitor: bar "
                          f"(<= 1.5x, <= 2x) {'met' if fair else 'MISSED'}", flush=True)
                    failed |= not fair
                print(f"{n:3d} sessions: Enter -> translation at the browser median {r['median']:.2f} s, max "
                      f"{r['max']:.2f} s (drawn in the page: median {r['shown_median']:.2f} s, max "
                      f"{r['shown_max']:.2f} s; the heads-off output drawn: median {r['ablated_median']:.2f} s, max "
                      f"{r['ablated_max']:.2f} s); wrong results {len(r['wrong'])}, page errors {len(r['errors'])}"
                      + ("" if n not in (20, 40) or args.proxy else
                         f"; bar (median <= 4 s, max <= 10 s) {'met' if bar else 'MISSED'}")
                      + ("" if not args.proxy else "\n     sessions per replica: " +
                         ", ".join(f"{key}: {v}" for key, v in sorted(r["replicas"].items())))
                      + f"\n     CPU seconds in the round: server {cpu:.1f}, browsers and this script {me:.1f}",
                      flush=True)
                for w in r["wrong"] + r["errors"]:
                    print("   ", w)
                failed |= bool(r["wrong"] or r["errors"]) or not bar
            if args.lost:
                r = await lost_replica_run(browser, base, run_dir, port, sentences, expected, args.lost)
                print(f"replica lost mid-class: {r['n']} sessions (per replica: "
                      f"{', '.join(f'{k}: {v}' for k, v in sorted(r['spread'].items()))}), replica {r['victim']} killed "
                      f"with {r['lost']} of them; their new socket after median {r['reconnect_median']:.1f} s, max "
                      f"{r['reconnect_max']:.1f} s (on replica {', '.join(f'{k}: {v}' for k, v in r['moved_to'].items())}); "
                      f"their next sentence translated after median {r['back_median']:.1f} s, max {r['back_max']:.1f} s"
                      f"; wrong results {len(r['wrong'])}, page errors and CSP violations {len(r['errors'])}"
                      f"\n     lost on the way: {len(r['forgotten'])}" + "".join(f"\n       {f}" for f in r["forgotten"])
                      + f"\n     box, link and translation agree in {r['n'] - len({d[0] for d in r['disagree']})} of "
                        f"{r['n']} sessions"
                      + "".join(f"\n       {d}" for d in r["disagree"])
                      + f"\n     replica {r['victim']} answered again after {r['restarted']:.1f} s, took a new session after "
                      + (f"{r['rejoined']:.1f} s" if r["rejoined"] else "NEVER"), flush=True)
                for w in r["wrong"] + r["errors"]:
                    print("   ", w)
                failed |= bool(r["wrong"] or r["forgotten"] or r["disagree"] or r["errors"]) or r["rejoined"] is None
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
        if args.proxy:
            if stop_proxy(proc) != 0:
                print(f"deploy/serve.sh did not stop cleanly: {(run_dir / 'serve.out').read_text()[-1000:]}")
                failed = True
        else:
            stop_app(proc)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, nargs="*", default=[5, 10, 20], help="simultaneous sessions per round")
    ap.add_argument("--memory", type=int, nargs="*", default=[], help="RSS after this many sentences")
    ap.add_argument("--nice", type=int, default=19,
                    help="niceness of this script and its browsers (the server keeps 0); 0 to share equally")
    ap.add_argument("--abuse", action="store_true", help="misbehaving sessions beside a well-behaved one")
    ap.add_argument("--heavy", type=int, default=0, metavar="K",
                    help="repeat each round with K sessions on the heaviest views and 100-token sentences")
    ap.add_argument("--visitor", type=int, default=0, metavar="K",
                    help="repeat each round with K sessions of one visitor sending 97-token sentences")
    ap.add_argument("--proxy", type=int, default=0, metavar="N",
                    help="through deploy/serve.sh: nginx in front of N replicas (needs nginx)")
    ap.add_argument("--lost", type=int, default=0, metavar="SESSIONS",
                    help="with --proxy: that many sessions open, then one replica is killed")
    args = ap.parse_args()
    if args.lost and args.proxy < 2:
        ap.error("--lost needs --proxy 2 or more")
    if args.memory and args.proxy:
        ap.error("--memory measures one server: leave out --proxy")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
