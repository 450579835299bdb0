"""A class votes at once: N students answer one question, and the projector counts them.

    python bench/class_load.py [--students 40] [--client ws|browser] [--within 10] [--engine sqlite|postgresql]
                               [--replicas K [--kill]]

The class is started for the shipped model's lesson sentence with its exercises (lesson/exercises.py), and its first
choice question opened, through the store (the teacher's clicks are not what is timed). Each student opens the
students' link, joins with a nickname, and waits for the question. Then every student clicks an answer, one after
the other, the clicks spread evenly over --within seconds (the issue's class answers within 10 s; 0: back to back);
the time from each click to "Your answer is in" is taken (the vote is committed before the page says so). The
projector (the teacher's link) is a real Chromium page, open meanwhile; "chart" is the time from the last click until
it shows "N of N", what a person at the projector sees. With --replicas K the page is served by deploy/serve.sh (K
replicas behind nginx, all on the one database); --kill kills replica 1 when half the students have clicked, and the
bench checks that every acknowledged answer was counted, seat by seat.

--client ws (the default): each student is a bench/st_session.Session, a client of Streamlit's own WebSocket
protocol speaking to the real page as the browser does (its link, its widget states, its fragment's reruns and the
fragment's auto-reruns every STUDENT_S, its reconnect through nginx after a replica's death), all N in this process
on one asyncio loop, without rendering anything. The click is timed just before its BackMsg is sent, the
acknowledgement when the ForwardMsg that carries "Your answer is in" arrives. This is the default because it
measures what the bars are about, the server: 40 headless Chromium pages on the server's 2 cores took most of the CPU
the server needed (the browsers' rendering was in the measured 1.8 s p95, even at nice 19), while 40 sessions of the
protocol cost a few percent of one core (printed). Their loop runs at the server's priority (only the projector's
Chromium stands behind it, nice 19), so that a message is timed when it arrives, not when a niced process next gets
the CPU. A student whose replica died reconnects as the page does; if the new session's page shows the question
unanswered, the student clicks again (counted as "again"); the time runs from the first click.
--client browser: each student is a Chromium context of its own (nice 19, as the other benches' browsers:
tests/appserver.py behind_the_servers), each page's own clock timing its click and the moment "Your answer is in"
shows; on 2 cores the browsers take what the server leaves, and their rendering is in the times.

Prints `summary: students N answered A counted C p95 X s chart Y s` (bars: all counted, p95 at most 1 s, chart at
most 2 s); answered is how many answers were acknowledged.
"""

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.appserver import (CHROMIUM, CHROMIUM_ARGS, behind_the_servers, free_port, start_app,  # noqa: E402
                             start_postgres, stop_app)

ACK, PICK = "Your answer is in", "Pick one."  # a student's panel: answered, and the question still open to this seat
# Records, in the page's own clock, when the vote button was clicked and when the acknowledgement appeared.
WATCH = """() => {
  window.__acked = null;
  const seen = () => { if (window.__acked === null && document.body.innerText.includes('Your answer is in'))
                         window.__acked = performance.now(); };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
CLICK = """(label) => {
  const b = [...document.querySelectorAll('.st-key-class_panel button')].find(b => b.innerText.trim() === label);
  window.__clicked = performance.now(); b.click(); return true;
}"""


def serve(replicas: int, env: dict) -> tuple[str, object]:
    """deploy/serve.sh with `replicas` replicas: (its address, a stop function); its run folder in env RUN_DIR."""
    port = free_port()
    proc = subprocess.Popen(["bash", str(ROOT / "deploy/serve.sh"), str(replicas), str(port), str(free_port())],
                            cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("deploy/serve.sh did not answer within 180 s")

    def stop():
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)

    return f"http://127.0.0.1:{port}", stop


def kill_replica(run_dir: Path, clicks: int):
    pid = int((run_dir / "replica-1.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    print(f"killed replica 1 (pid {pid}) after {clicks} clicks")


def browser_students(browser, server: str, code: str, question, args, run_dir: Path, clicked) -> dict:
    """The students as Chromium pages; calls clicked(last click time) once all have clicked, then waits for their
    acknowledgements."""
    pages = []
    t = time.monotonic()
    for i in range(args.students):
        pg = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
        pg.goto(f"{server}/?class={code}", timeout=120_000)
        pg.get_by_label("Nickname").fill(f"student {i + 1}", timeout=120_000)
        pg.get_by_role("button", name="Join").click()
        pages.append(pg)
    for pg in pages:
        pg.locator(".st-key-class_panel").get_by_role("button", name=question.options[0], exact=True) \
            .wait_for(timeout=120_000)
        pg.evaluate(WATCH)
    print(f"{args.students} students joined and saw the question in {time.monotonic() - t:.0f} s")
    start, killed = time.monotonic(), False
    for i, pg in enumerate(pages):
        time.sleep(max(0.0, start + i * args.within / args.students - time.monotonic()))
        pg.evaluate(CLICK, question.options[i % len(question.options)])
        if args.kill and not killed and i >= len(pages) // 2:
            kill_replica(run_dir, i + 1)
            killed = True
    clicked(time.monotonic())
    print(f"{len(pages)} clicks over {time.monotonic() - start:.2f} s")
    waits = []
    for pg in pages:
        try:
            pg.wait_for_function("window.__acked !== null", timeout=30_000)
            waits.append(pg.evaluate("(window.__acked - window.__clicked) / 1000"))
        except Exception:  # noqa: BLE001  (a page whose answer was never acknowledged: not counted here)
            pass
    return {"waits": waits, "acked": {}}


async def ws_students(server: str, code: str, question, args, run_dir: Path, clicked) -> dict:
    """The students as WebSocket sessions (bench/st_session.py) on this loop; calls clicked(last click time) once
    all have clicked, then waits for their acknowledgements. Returns the waits, each acknowledged seat's answer, and
    what the sessions did."""
    from bench.st_session import Session

    n, options = args.students, len(question.options)
    sessions = [Session(server, f"class={code}", timeout=60) for _i in range(n)]
    keys = [f"class_vote_{question.number}_1_{i % options}" for i in range(n)]
    gate = asyncio.Semaphore(4)  # students open the link a few at a time, as a class does

    async def join(i: int, s: Session):
        async with gate:
            await s.open(timeout=180)
            await s.fill("Nickname", f"student {i + 1}")
            t = await s.click(label="Join")
            await s.wait_for_text(PICK, 120, since=t)

    t = time.monotonic()
    await asyncio.gather(*(join(i, s) for i, s in enumerate(sessions)))
    print(f"{n} students joined and saw the question in {time.monotonic() - t:.0f} s")
    on = [s.replica or "-" for s in sessions]  # X-Replica of the socket (deploy/'s nginx; none without it)
    cpu, wall = time.thread_time(), time.monotonic()
    clicks, half, every = [], asyncio.Event(), asyncio.Event()

    def count(t: float):
        clicks.append(t)
        if len(clicks) > n // 2:
            half.set()
        if len(clicks) == n:
            every.set()

    async def answer(i: int, s: Session, at: float, limit: float = 60.0) -> tuple[float | None, float, int]:
        """(when acknowledged, or None; the first click's time; clicks again), as a person: a page that lost its socket
        cannot be clicked until it is back and drawn by its new session; if that shows the question unanswered, the
        student clicks again. The time runs from the first click (or, if the page was down then, the moment the
        student meant to click)."""
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        first, sent, waited, deadline = time.monotonic(), 0, False, at + limit

        def up():  # connected, and after a reconnect drawn again: the question open or the answer in
            return s.connected and (not s.reconnects or s.text_at(PICK, s.connected_at) is not None
                                    or s.text_at(ACK, s.connected_at) is not None)

        try:
            while True:
                if not up():
                    waited = True
                    await s.wait_until(up, deadline - time.monotonic())
                if s.text_at(ACK, first) is not None:
                    return s.text_at(ACK, first), first, max(0, sent - 1)
                try:
                    t = await s.click(key=keys[i])
                except ConnectionError:  # dropped just now: wait for the page to come back
                    waited = True
                    continue
                if sent == 0:
                    first = first if waited else t  # from just before the first BackMsg
                    count(t)
                sent += 1
                seen = s.reconnects
                await s.wait_until(lambda: s.text_at(ACK, first) is not None or s.reconnects > seen,
                                   deadline - time.monotonic())
                if s.text_at(ACK, first) is not None:
                    return s.text_at(ACK, first), first, sent - 1
        except TimeoutError:
            return None, first, max(0, sent - 1)

    start = time.monotonic() + 0.05
    everyone = asyncio.gather(*(answer(i, s, start + i * args.within / n) for i, s in enumerate(sessions)))

    async def until(event: asyncio.Event):  # or until every student has given up
        await asyncio.wait([asyncio.ensure_future(event.wait()), everyone], return_when=asyncio.FIRST_COMPLETED)

    if args.kill:
        await until(half)
        kill_replica(run_dir, len(clicks))
    await until(every)
    clicked(max(clicks, default=time.monotonic()))
    results = await everyone
    cpu, wall = time.thread_time() - cpu, time.monotonic() - wall

    def spread(side: list) -> str:
        return str({r: side.count(r) for r in sorted(set(side))})

    replicas = spread(on) + (f" -> {spread([s.replica or '-' for s in sessions])}" if args.kill else "")
    acked = {}
    for i, (s, (ack, _first, _again)) in enumerate(zip(sessions, results)):
        if ack is not None:
            acked[urllib.parse.parse_qs(s.query)["seat"][0]] = i % options
    print(f"{len(clicks)} clicks over {max(clicks) - min(clicks) if clicks else 0:.2f} s; students' sessions (this "
          f"process, {n} WebSockets, server priority) used {cpu:.2f} s CPU in the vote's {wall:.1f} s "
          f"({cpu / wall:.0%} of a core); on replicas {replicas}; reconnected "
          f"{sum(1 for s in sessions if s.reconnects)}, clicked again {sum(r[2] for r in results)}")
    await asyncio.gather(*(s.close() for s in sessions))
    return {"waits": [ack - first for ack, first, _again in results if ack is not None], "acked": acked}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--client", choices=("ws", "browser"), default="ws",
                   help="students as WebSocket sessions of the page (default) or as Chromium pages")
    p.add_argument("--within", type=float, default=10.0,
                   help="seconds over which the clicks are spread, one after the other (default 10; 0: back to back)")
    p.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    p.add_argument("--replicas", type=int, default=0, help="serve with deploy/serve.sh K (default: one app)")
    p.add_argument("--kill", action="store_true", help="with --replicas: kill replica 1 mid-vote")
    args = p.parse_args()
    from playwright.sync_api import sync_playwright

    from lesson import classroom
    from lesson.exercises import exercises, lesson_sentence
    from model.checkpoint import DEFAULT_CHECKPOINT
    from model.translator import Translator

    folder = Path(tempfile.mkdtemp(prefix="class-load-"))
    stop_db = None
    if args.engine == "postgresql":
        url, stop_db = start_postgres()
        env = {classroom.URL_ENV: url}
    else:
        url, env = f"sqlite:///{folder / 'classes.sqlite'}", {classroom.DIR_ENV: str(folder), classroom.URL_ENV: ""}
    store = classroom.Store(url)
    sentence = lesson_sentence()
    asked = classroom.asked_of(exercises(Translator.load(), DEFAULT_CHECKPOINT, sentence))
    code, key = store.start(sentence, "", asked)
    question = asked[0]
    store.ask(code, key, question.number)

    run_dir = ROOT / "runs" / f"class-load-{os.getpid()}"  # nginx's workers read the page code there: not in /tmp's
    #                                                     private folder
    if args.replicas:
        server, stop = serve(args.replicas, {**env, "RUN_DIR": str(run_dir), "LISTEN_ADDRESS": "127.0.0.1"})
    else:
        port = free_port()
        proc = start_app(port, env=env)
        server, stop = f"http://127.0.0.1:{port}", lambda: stop_app(proc)
    loop = None
    if args.client == "ws":  # the students' loop: a thread started before this one stands behind the server (Linux
        #                      keeps a nice value per thread, and a thread inherits its creator's)
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="students", daemon=True).start()
    behind = behind_the_servers()
    print(f"{'the projector' if loop else 'browsers'} behind the server (nice 19, cannot raise it): {behind}")
    last_click = threading.Event()
    times = {}

    def clicked(t: float):
        times["last"] = t
        last_click.set()

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            teacher = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
            teacher.goto(f"{server}/?class={code}&key={key}&present=1", timeout=120_000)
            teacher.locator(".st-key-class_panel").wait_for(timeout=120_000)

            def projector(last: float) -> float | None:
                """Seconds from the last click until the projector shows every answer (not timed with --kill)."""
                if args.kill:
                    return None
                teacher.get_by_text(f"{args.students} of {store.state(code).seats}").wait_for(timeout=60_000)
                return time.monotonic() - last

            if loop:
                students = asyncio.run_coroutine_threadsafe(
                    ws_students(server, code, question, args, run_dir, clicked), loop)
                while not last_click.wait(0.2):
                    if students.done():
                        students.result()  # raises what stopped it
                        break
                chart = projector(times["last"])
                outcome = students.result()
            else:  # one thread drives every page: the projector is read before the students' acknowledgements
                outcome = browser_students(browser, server, code, question, args, run_dir,
                                           lambda t: times.update(chart=projector(t)))
                chart = times["chart"]
            browser.close()
        waits, acked = outcome["waits"], outcome["acked"]
        counted = store.state(code).answered
        waits.sort()
        p95 = waits[max(0, int(round(0.95 * len(waits))) - 1)] if waits else float("nan")
        print(f"acknowledged: median {statistics.median(waits):.2f} s, max {max(waits):.2f} s" if waits else
              "no answer acknowledged")
        if acked:  # seat by seat: each acknowledged answer is the seat's vote in the database
            kept = sum(store.my_vote(code, seat) == choice for seat, choice in acked.items())
            ok = kept == len(acked) and counted >= len(acked)
            print(f"every acknowledged answer counted: {ok} ({len(waits)} acknowledged, {kept} of them in the database "
                  f"as given, {counted} in the database)")
        else:
            ok = counted >= len(waits)
            print(f"every acknowledged answer counted: {ok} ({len(waits)} acknowledged, {counted} in the database)")
        print(f"summary: students {args.students} answered {len(waits)} counted {counted} p95 {p95:.2f} s chart "
              + (f"{chart:.2f} s" if chart is not None else "(not timed with --kill)"))
    finally:
        stop()
        if loop:
            loop.call_soon_threadsafe(loop.stop)
        if stop_db:
            stop_db()


if __name__ == "__main__":
    main()
