"""`python -m model.tables --quick` end to end on a tiny checkpoint and the Multi30k data: every table the views
read is written beside it, a second run builds none, and each file loads in the reader the page uses (the plan,
the estimate and the skip logic alone: tests/unit/test_tables.py)."""

import json

import pytest
import torch

from conftest import ENGLISH, GERMAN, tiny_config
from model import tables
from model.checkpoint import save_checkpoint
from model.transformer import Transformer
from model.vocab import Vocab


@pytest.fixture(scope="module")
def built(tmp_path_factory, data_dir):
    """A tiny checkpoint with room for every hand-checked sentence (100 positions), its tables built by --quick."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tables") / "mine"
    save_checkpoint(Transformer(tiny_config(max_positions=100)).eval(), Vocab(GERMAN), Vocab(ENGLISH), folder)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = tables.main(["--checkpoint", str(folder), "--data-dir", str(data_dir), "--quick", "--no-progress"])
    return folder, status, out.getvalue()


@pytest.mark.slow
def test_quick_writes_every_table_and_a_second_run_builds_none(built, data_dir, capsys):
    folder, status, out = built
    assert status == 0, out
    assert "total ~" in out and "8 of 8 tables built" in out, out
    for t in tables.TABLES:
        for name in t.files:
            assert (folder / name).is_file(), name
    head_stats = json.loads((folder / "head_stats.json").read_text())
    assert head_stats["n"] == 200 and head_stats["data"]["src"] == "test_2016_flickr.de.gz"  # the name as shipped
    assert json.loads((folder / "faithfulness.json").read_text())["n_sentences"] == 10
    before = {name: (folder / name).stat().st_mtime_ns for t in tables.TABLES for name in t.files}
    assert tables.main(["--checkpoint", str(folder), "--data-dir", str(data_dir), "--no-progress"]) == 0
    assert "every table is there" in capsys.readouterr().out
    assert before == {name: (folder / name).stat().st_mtime_ns for t in tables.TABLES for name in t.files}


@pytest.mark.slow
def test_the_tables_load_in_the_pages_readers(built):
    from model.evidence import StepIndex
    from model.faithfulness import Table, aligning_head
    from model.familiarity import Index
    from views import contributions, familiarity
    from views.calls import checkpoint_json, faithfulness_table

    folder, _, _ = built
    checkpoint = str(folder)
    assert isinstance(faithfulness_table(checkpoint), Table)
    assert Table.from_json(checkpoint_json(checkpoint, "faithfulness.json")).verdict
    assert aligning_head(folder) is not None  # alignment.json's best head, which faithfulness explains by
    median, threshold = contributions.share_lines(checkpoint_json(checkpoint, "source_share.json"))
    assert median is not None and threshold is not None
    stats = checkpoint_json(checkpoint, "head_stats.json")["stats"]["entropy"]
    assert [len(stats["enc"]), len(stats["enc"][0])] == [2, 4]  # L x H of this model
    importance = checkpoint_json(checkpoint, "head_importance.json")
    assert len(importance["kinds"]["cross"]["bleu"]) == 2
    alignment = checkpoint_json(checkpoint, "alignment.json")
    assert alignment["n_pairs"] == 20 and len(alignment["heads"]["cross"]) == 2
    patching = checkpoint_json(checkpoint, "patching.json")
    assert patching["data"]["n"] == 10 and {"categories", "skipped"} <= set(patching)
    assert familiarity.index(checkpoint) is not None and isinstance(Index(folder), Index)
    assert StepIndex.exists(folder) and len(StepIndex(folder).line) > 0
