"""The code's structure: which module may import which."""

from conftest import ROOT


def test_viz_imports_no_torch():
    """viz/ draws arrays and token lists (the HTML report included): importing it loads no torch."""
    import subprocess
    import sys

    probe = "import sys, viz, viz.report; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
