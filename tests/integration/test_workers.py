"""The suite on two workers (`python -m pytest -n 2`, tests/conftest.py's hooks): a test marked `alone` runs with
the other worker held back, while the other tests run side by side; two tests of tests/browser never run at once;
and every process a worker starts gets one torch thread."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

MODULE = '''
import json, os, time
import pytest

def spend(name):
    t0 = time.time()
    time.sleep(0.6)
    with open(os.environ["TURNS_LOG"], "a") as f:
        f.write(json.dumps([name, t0, time.time(), os.environ.get("OMP_NUM_THREADS")]) + "\\n")

@pytest.mark.parametrize("k", range(4))
def test_before(k):
    spend(f"before{k}")

@pytest.mark.alone
def test_alone():
    spend("alone")

@pytest.mark.parametrize("k", range(4))
def test_after(k):
    spend(f"after{k}")
'''
BROWSER = '''
import pytest
from test_turns import spend

@pytest.mark.parametrize("k", range(4))
def test_page(k):
    spend(f"browser{k}")
'''


@pytest.mark.slow
def test_an_alone_test_overlaps_no_other_and_browser_tests_none_of_their_own(tmp_path):
    (tmp_path / "test_turns.py").write_text(MODULE)
    (tmp_path / "browser").mkdir()
    (tmp_path / "browser" / "test_pages.py").write_text(BROWSER)  # a file of a folder named browser: that tier's
    log = tmp_path / "turns.jsonl"
    env = {**os.environ, "TURNS_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(tmp_path)])}
    env.pop("OMP_NUM_THREADS", None)
    env.pop("PYTEST_XDIST_WORKER", None)  # the run below has workers of its own
    # -p conftest: this suite's hooks, as its tests get them; --dist load: the module's tests go to both workers
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-o", "addopts=", "-n", "2", "--dist",
                        "load", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "base"),
                        str(tmp_path / "test_turns.py"), str(tmp_path / "browser")],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    runs = {name: (t0, t1, threads) for name, t0, t1, threads in map(json.loads, log.read_text().splitlines())}
    assert len(runs) == 13 and {threads for *_, threads in runs.values()} == {"1"}

    def overlap(a, b):
        return runs[a][0] < runs[b][1] and runs[b][0] < runs[a][1]
    others = [name for name in runs if name != "alone"]
    assert not [name for name in others if overlap("alone", name)]
    assert any(overlap(a, b) for a in others for b in others if a < b)  # two workers, side by side
    pages = [name for name in runs if name.startswith("browser")]
    assert not [(a, b) for a in pages for b in pages if a < b and overlap(a, b)]
