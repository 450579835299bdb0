"""notebooks/walkthrough.ipynb: committed without outputs, and every cell runs in a real Jupyter kernel."""

import json


from conftest import ROOT

NOTEBOOK = ROOT / "notebooks/walkthrough.ipynb"


def cells_tagged(nb, tag: str) -> list:
    return [c for c in nb["cells"] if tag in c.get("metadata", {}).get("tags", [])]


def test_the_committed_notebook_has_no_outputs():
    """Outputs stay out of git (the figures alone carry megabytes of plotly.js): the reader runs it."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code
    for cell in code:
        assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:2]
    assert len(cells_tagged(nb, "translation")) == 1  # the cell the slow test reads the translation from
