"""notebooks/walkthrough.ipynb: committed without outputs, and every cell runs in a real Jupyter kernel."""

import json

import pytest

from conftest import CHECKPOINT, ROOT

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


@pytest.mark.slow
def test_every_cell_runs_in_a_real_kernel(translator):
    """Executed by nbclient in the `python3` kernel of the installed ipykernel (no user kernelspec needed), with
    the project folder as its working directory; the printed translation is Translator.translate's."""
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # Raises CellExecutionError, naming the cell and its traceback, at the first cell that fails.
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(ROOT)}}
                            ).execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
            assert cell.execution_count is not None, cell.source
    (cell,) = cells_tagged(nb, "translation")
    printed = "".join(o.text for o in cell.outputs if o.output_type == "stream")
    sentence = next(line.split('"')[1] for line in cell.source.splitlines() if line.startswith("sentence ="))
    assert printed == translator.translate(sentence).text + "\n"
    checks = "".join(o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream")
    assert checks.count("True") >= 6 and "False" not in checks  # rows sum to 1; the head's equations hold
