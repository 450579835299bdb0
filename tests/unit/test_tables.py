"""`python -m model.tables`: its plan (what a run builds, what it skips, how many sentences), the estimate's
arithmetic, the shortened inputs, and the loop's resume and skip logic on a tiny checkpoint with each table's build
replaced (the real builds: tests/integration/test_tables.py)."""

import gzip
import json

import pytest

from conftest import TRAINING_PAIRS, assert_error_line, write_multi30k
from model import tables
from model.data import read_lines
from model.errors import InputError
from model.tables import BY_NAME, PROBE_SECONDS, TABLES, Inputs, estimate, plan

UNITS = {t.name: 1 if t.unit == "index" else 1000 for t in TABLES}  # as `available` says of the full data


def names(steps, build=True) -> list[str]:
    return [s.table.name for s in steps if s.build == build]


def test_a_bare_checkpoint_builds_every_table_in_an_order_that_reads_alignment_before_faithfulness(tiny_checkpoint):
    steps = plan(tiny_checkpoint, UNITS)
    assert names(steps) == [t.name for t in TABLES] and not names(steps, False)
    order = names(steps)
    assert order.index("align") < order.index("faithfulness")  # faithfulness reads alignment.json's best head
    files = [f for t in TABLES for f in t.files]
    assert sorted(files) == sorted(["head_stats.json", "head_importance.json", "source_share.json", "alignment.json",
                                    "faithfulness.json", "patching.json", "training_index.npz", "familiarity.json",
                                    "step_index.npz"])


def test_a_table_whose_files_are_all_there_is_skipped_unless_forced(tmp_path):
    (tmp_path / "head_stats.json").write_text("{}")
    (tmp_path / "training_index.npz").write_bytes(b"")  # familiarity.json missing: the index is built again
    steps = plan(tmp_path, UNITS)
    assert names(steps, False) == ["head_stats"]
    assert "familiarity" in names(steps)
    assert not names(plan(tmp_path, UNITS, force=True), False)


def test_quick_counts_and_the_shipped_counts():
    quick = {s.table.name: s.units for s in plan("nowhere", UNITS, quick=True)}
    assert quick == {"head_stats": 200, "head_importance": 200, "source_share": 200, "align": 20,
                     "faithfulness": 10, "patch": 10, "familiarity": 1, "evidence": 1}
    full = {s.table.name: s.units for s in plan("nowhere", UNITS)}
    assert full["faithfulness"] == 500 and full["head_stats"] == 1000  # as the shipped tables were made
    few = {s.table.name: s.units for s in plan("nowhere", {**UNITS, "align": 7}, quick=True)}
    assert few["align"] == 7  # never more than the data hold


def test_the_estimate_is_units_times_seconds_scaled_by_the_probe(tmp_path):
    (tmp_path / "patching.json").write_text("{}")
    steps = plan(tmp_path, UNITS, quick=True)
    seconds = estimate(steps, probe_seconds=2 * PROBE_SECONDS)  # a machine (or model) half as fast
    assert "patch" not in seconds  # there: nothing to estimate
    assert seconds["head_stats"] == pytest.approx(200 * BY_NAME["head_stats"].seconds * 2)
    assert seconds["faithfulness"] == pytest.approx(10 * BY_NAME["faithfulness"].seconds * 2)
    assert seconds["familiarity"] == pytest.approx(BY_NAME["familiarity"].seconds * 2)
    reference = estimate(plan("nowhere", UNITS, quick=True), PROBE_SECONDS)
    assert sum(reference.values()) < 600  # --quick within 10 minutes on the reference machine, by the estimate
    assert [tables.duration(s) for s in (40, 420, 9000)] == ["40 s", "7 min", "2.5 h"]


def test_shortened_inputs_keep_the_name_and_the_first_lines(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(data / "test_2016_flickr.de.gz", "wt", encoding="utf-8") as f:
        f.write("eins\nzwei\ndrei\n")
    inputs = Inputs(data, tmp_path)
    assert inputs.first(data / "test_2016_flickr.de.gz", 3) == str(data / "test_2016_flickr.de.gz")
    copy = inputs.first(data / "test_2016_flickr.de.gz", 2)
    assert copy == str(tmp_path / "test_2016_flickr.de.gz")  # what the command records of it: the same name
    assert read_lines(copy) == ["eins", "zwei"]


def test_contrast_pairs_are_taken_a_category_at_a_time():
    lines = tables.spread(tables.PAIRS)
    categories = [json.loads(line)["category"] for line in lines]
    assert len(set(categories[:5])) == 5  # any first 5 hold every category
    assert sorted(lines) == sorted(x for x in tables.PAIRS.read_text().splitlines() if x.strip())


def test_the_command_line_the_page_names():
    assert tables.command_line("/tmp/my model") == "python -m model.tables --checkpoint '/tmp/my model'"


@pytest.fixture
def data(tmp_path):
    """A tiny Multi30k folder with the test split too."""
    folder = write_multi30k(tmp_path / "data")
    for lang, col in (("de", 0), ("en", 1)):
        with gzip.open(folder / f"test_2016_flickr.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(p[col] for p in TRAINING_PAIRS) + "\n")
    return folder


def fake_builds(monkeypatch, fails=()):
    """Replace each table's build: write its files (or fail with InputError for the names in `fails`)."""
    built = []

    def build(step, folder, inputs, translator, shared, write, progress=True, corpus=None):
        built.append(step.table.name)
        if step.table.name in fails:
            raise InputError("this model cannot have it")
        for f in step.table.files:
            (folder / f).write_text("{}")

    monkeypatch.setattr(tables, "build", build)
    return built


def test_a_second_run_builds_nothing_and_an_interrupted_one_goes_on(call, monkeypatch, tmp_path, data,
                                                                     tiny_checkpoint):
    import shutil

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / "alignment.json").write_text("{}")  # as if a run had stopped after it
    built = fake_builds(monkeypatch)
    status, out, err = call(tables.main, "--checkpoint", folder, "--data-dir", data, "--quick", "--no-progress")
    assert status == 0, err
    assert "align" not in built and len(built) == len(TABLES) - 1
    assert "alignment.json" in out and "there (--force builds it again)" in out and "total ~" in out
    built.clear()
    status, out, _ = call(tables.main, "--checkpoint", folder, "--data-dir", data, "--no-progress")
    assert status == 0 and not built and "every table is there" in out
    status, out, _ = call(tables.main, "--checkpoint", folder, "--data-dir", data, "--estimate", "--force")
    assert status == 0 and not built and "total ~" in out  # --estimate: the plan only


def test_a_table_this_model_cannot_have_is_skipped_in_one_line(call, monkeypatch, tmp_path, data, tiny_checkpoint):
    import shutil

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, folder)
    fake_builds(monkeypatch, fails=("align",))
    status, out, err = call(tables.main, "--checkpoint", folder, "--data-dir", data, "--quick", "--no-progress")
    assert status == 1
    assert "skipped alignment.json: this model cannot have it" in out
    assert (folder / "faithfulness.json").is_file() and not (folder / "alignment.json").exists()


def test_errors_before_any_work_are_one_line(call, tmp_path, data, tiny_checkpoint):
    status, out, err = call(tables.main, "--checkpoint", tmp_path / "nowhere", "--data-dir", data)
    assert_error_line(status, err, "nowhere")
    status, out, err = call(tables.main, "--checkpoint", tiny_checkpoint, "--data-dir", tmp_path / "no-data")
    assert_error_line(status, err, "no-data")
    status, out, err = call(tables.main, "--checkpoint", tiny_checkpoint, "--quik")
    assert_error_line(status, err, "--quik")
    assert not out
