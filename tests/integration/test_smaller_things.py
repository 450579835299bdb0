"""The smaller things seen on a phone, at a projector and in the dark theme, each fixed at its root: the training
replay's map title is never cut, its curves' axis says what it is and whose run they are; the decoder
self-attention of step 1 says why it is one solid block; the decoding trace forces any word of the model's
vocabulary, as the command line does, and marks it in the result; the Contributions maps have room; labelled bars
draw no gridline through their numbers; a map's CSV names its rows as the page does."""

from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT


def test_browsers_started_behind_the_servers_cannot_raise_their_priority():
    """tests/appserver.behind_the_servers: a program started afterwards (Chromium, as root, sets its threads to nice 0
    and -8) stays at the niceness asked for, even when it tries to go back to 0."""
    import subprocess
    import sys

    child = ("import os\ntry:\n    os.setpriority(os.PRIO_PROCESS, 0, 0)\nexcept PermissionError:\n    pass\n"
             "print(os.getpriority(os.PRIO_PROCESS, 0))")
    parent = ("import subprocess, sys\nfrom tests.appserver import behind_the_servers\n"
              "print(behind_the_servers(17))\n"
              f"print(subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, text=True).stdout.strip())")
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, cwd=ROOT, timeout=60)
    caps = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("CapEff:")).split()[1], 16)
    if caps >> 23 & 1 and not caps >> 8 & 1:  # CAP_SYS_NICE without CAP_SETPCAP: the drop cannot be made here
        pytest.skip("programs may raise their priority here, and dropping that needs CAP_SETPCAP")
    assert out.stdout.split() == ["True", "17"], (out.stdout, out.stderr)


def test_the_sinusoidal_models_position_tables_are_the_papers_formula(shipped_models):
    """views/positions.py draws the formula (viz.sinusoidal) for the sinusoidal model's table instead of loading that
    model: the two agree to float32 rounding, source and target."""
    import viz
    from views.calls import SINUSOIDAL

    tables = shipped_models(SINUSOIDAL).position_tables()
    assert tables["source"].shape == tables["target"].shape and tables["source"].shape[1] > 64
    for side in ("source", "target"):
        np.testing.assert_allclose(tables[side], viz.sinusoidal(*tables[side].shape), rtol=0, atol=1e-6)
