"""notebooks/walkthrough.ipynb: committed without outputs, and every cell runs in a real Jupyter kernel."""

import pytest

from conftest import CHECKPOINT, ROOT
from unit.test_notebook import NOTEBOOK, cells_tagged


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
