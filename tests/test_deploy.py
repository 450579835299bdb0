"""deploy/serve.sh: two replicas behind nginx, a replica lost mid-class, and the proxy's security headers.

Drives the same code as `python bench/load_test.py --proxy 2 --lost 4`, smaller.
"""

import asyncio
import shutil
import subprocess
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.appserver import CHROMIUM, CHROMIUM_ARGS
from conftest import CHECKPOINT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Seconds from the kill until a lost session has its next sentence translated by the survivor. Measured on
# 2 shared cores: 11-14 s (the page waits out its own reconnect back-off, then the survivor runs the page
# for every lost session at once); the bound leaves room for a loaded CI machine.
BACK_WITHIN = 60


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """deploy/serve.sh 2 PORT on 127.0.0.1: (process, port, run folder)."""
    from bench.load_test import start_proxy

    if shutil.which("nginx") is None:
        pytest.skip("no nginx (apt-get install nginx)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    run_dir = tmp_path_factory.mktemp("serve")
    proc, port = start_proxy(2, run_dir)
    yield proc, port, run_dir
    if proc.poll() is None:
        from bench.load_test import stop_proxy

        stop_proxy(proc)


def test_the_proxy_sets_the_security_headers_and_a_sticky_cookie(served):
    _, port, _ = served
    headers = urllib.request.urlopen(f"http://127.0.0.1:{port}/").headers
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp and "object-src 'none'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]  # inline styles only, never scripts
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Replica"] in ("1", "2")
    assert f"explorer_replica={headers['X-Replica']};" in headers["Set-Cookie"]


def test_a_replica_lost_mid_class(served, data_dir):
    """4 sessions on 2 replicas, each its own sentence and view; one replica killed. Survivors keep their socket and
    page; lost sessions come back through the proxy to their sentence and view; no CSP violation anywhere; the
    replica serve.sh starts again takes new sessions; and SIGTERM leaves no port open."""
    from playwright.async_api import async_playwright

    from bench import load_test
    from model.data import load_split

    proc, port, run_dir = served
    sentences = load_split(data_dir, "test")[0][:12]
    expected = load_test.expected_outputs(sentences, 0)

    async def go():
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            result = await load_test.lost_replica_run(browser, f"http://127.0.0.1:{port}/", run_dir, port, sentences,
                                                      expected, 4)
            await browser.close()
            return result
    with ThreadPoolExecutor(1) as pool:  # its own thread: the sync Playwright of the other tests may be running
        r = pool.submit(asyncio.run, go()).result()
    assert r["spread"].keys() == {"1", "2"}, r["spread"]
    assert not r["wrong"] and not r["errors"], (r["wrong"], r["errors"])
    assert r["back_max"] < BACK_WITHIN, r
    assert r["rejoined"] is not None, r

    assert load_test.stop_proxy(proc) == 0, (run_dir / "serve.out").read_text()[-2000:]
    listening = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout
    assert not any(f":{p} " in listening for p in (port, port + 1, port + 2)), listening
