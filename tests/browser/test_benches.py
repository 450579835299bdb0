"""The team's benches run: each measures against the page as it is now, so a change of the page that breaks a bench
fails here instead of going unnoticed until the next measurement."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.browser
def test_app_speed_measures_every_figure_for_one_sentence():
    """bench/app_speed.py, one sentence picked through and one translated before reading memory: every figure
    printed, down to the summary. It crashed once Inside a head drew its far charts later (its bare-Plotly
    reference read the data of a chart not drawn yet)."""
    r = subprocess.run([sys.executable, "bench/app_speed.py", "--picked", "1", "--sentences", "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    for start in ("Enter -> translation", "bare Plotly.react", "change of head", "change of layer", "change of step",
                  "change of inside a head", "server memory", "maps on the wire", "summary:"):
        assert any(line.startswith(start) for line in lines), (start, r.stdout)
    assert "nan" not in r.stdout
