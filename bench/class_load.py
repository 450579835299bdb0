"""A class votes at once: N students in real browser sessions of the page answer one question, and the projector
counts them.

    python bench/class_load.py [--students 40] [--engine sqlite|postgresql] [--replicas K [--kill]]

The class is started for the shipped model's lesson sentence with its exercises (lesson/exercises.py), and its first
choice question opened, through the store (the teacher's clicks are not what is timed). Each student's page is a
Chromium context of its own: it opens the students' link, joins with a nickname, and waits for the question. Then
every student clicks an answer, all within a few seconds; each page's own clock records the click and the moment
"Your answer is in" shows (the vote is committed before the page says so). The projector (the teacher's link) is
open meanwhile; "chart" is the time from the last click until it shows "N of N". With --replicas K the page is served
by deploy/serve.sh (K replicas behind nginx, all on the one database); --kill kills replica 1 when half the students
have clicked, and the bench checks that every acknowledged answer was counted.

The browsers run on the server's machine, behind it (nice 19, as the other benches' browsers: tests/appserver.py
behind_the_servers); on 2 cores they still take what the server leaves. Prints `summary: students N answered A counted
C p95 X s chart Y s` (bars: all counted, p95 at most 1 s, chart at most 2 s).
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.appserver import (CHROMIUM, CHROMIUM_ARGS, behind_the_servers, free_port, start_app,  # noqa: E402
                             start_postgres, stop_app)

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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=40)
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
        url, env = f"sqlite:///{folder / 'classes.sqlite'}", {classroom.DIR_ENV: str(folder)}
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
    behind = behind_the_servers()  # the students' browsers share the 2 cores: they stand behind the server
    print(f"browsers behind the server (nice 19, cannot raise it): {behind}")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            teacher = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
            teacher.goto(f"{server}/?class={code}&key={key}&present=1", timeout=120_000)
            teacher.locator(".st-key-class_panel").wait_for(timeout=120_000)
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
            killed = False
            for i, pg in enumerate(pages):
                pg.evaluate(CLICK, question.options[i % len(question.options)])
                if args.kill and not killed and i >= len(pages) // 2:
                    pid = int((run_dir / "replica-1.pid").read_text())
                    os.kill(pid, signal.SIGKILL)
                    killed = True
                    print(f"killed replica 1 (pid {pid}) after {i + 1} clicks")
            last_click = time.monotonic()
            teacher.get_by_text(f"{args.students} of {store.state(code).seats}").wait_for(timeout=60_000) \
                if not args.kill else None
            chart = time.monotonic() - last_click
            waits = []
            for pg in pages:
                try:
                    pg.wait_for_function("window.__acked !== null", timeout=30_000)
                    waits.append(pg.evaluate("(window.__acked - window.__clicked) / 1000"))
                except Exception:  # noqa: BLE001  (a page whose answer was never acknowledged: not counted here)
                    pass
            browser.close()
        counted = store.state(code).answered
        waits.sort()
        p95 = waits[max(0, int(round(0.95 * len(waits))) - 1)] if waits else float("nan")
        print(f"acknowledged: median {statistics.median(waits):.2f} s, max {max(waits):.2f} s" if waits else
              "no answer acknowledged")
        ok = counted >= len(waits)
        print(f"every acknowledged answer counted: {ok} ({len(waits)} acknowledged, {counted} in the database)")
        print(f"summary: students {args.students} answered {len(waits)} counted {counted} p95 {p95:.2f} s chart "
              + (f"{chart:.2f} s" if not args.kill else "(not timed with --kill)"))
    finally:
        stop()
        if stop_db:
            stop_db()


if __name__ == "__main__":
    main()
