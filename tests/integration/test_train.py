"""Training: a few steps lower the loss, resume continues, and 2 DDP processes equal 1 on the same global batch."""

import json
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from conftest import ROOT
from model import train as train_cli
from unit.test_train import tiny_data


def train(data, out, work, *extra, procs=1):
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(procs),
                "-m", "model.train"] if procs > 1 else [sys.executable, "-m", "model.train"]
    r = subprocess.run([*launcher, "--data-dir", str(data), "--out", str(out), "--work-dir", str(work),
                        "--batch-size", "8", "--no-progress", "--seed", "7", *extra],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.mark.slow
def test_train_cli_learns_saves_and_resumes(tiny_data, tmp_path):
    out, work = tmp_path / "ckpt", tmp_path / "work"
    r = train(tiny_data, out, work, "--epochs", "2")
    assert "epoch  2 |" in r.stdout and "tok/s" in r.stdout
    history = json.loads((out / "config.json").read_text())["training"]["history"]
    assert history[1]["val_loss"] < history[0]["val_loss"]
    r = train(tiny_data, out, work, "--epochs", "3", "--resume")
    assert "resumed after epoch 2" in r.stdout and "epoch  3 |" in r.stdout and "epoch  1 |" not in r.stdout
    from model.checkpoint import load_checkpoint

    model, sv, tv = load_checkpoint(out)
    assert "hund" in sv.stoi and "dog" in tv.stoi
    # The shipped weights are exactly the best epoch's snapshot (in float16, as checkpoints store them).
    history = json.loads((out / "config.json").read_text())["training"]["history"]
    best = min(history, key=lambda h: h["val_loss"])["epoch"]
    snap = load_file(work / f"epoch{best:02d}.safetensors")
    assert all(torch.equal(v, snap[k].half().float()) for k, v in model.state_dict().items() if k in snap)
    # Finishing a stopped run: --resume with no epochs left writes the checkpoint again from the snapshots.
    shutil.rmtree(out)
    r = train(tiny_data, out, work, "--epochs", "3", "--resume")
    assert "result" in r.stdout and (out / "model.safetensors").is_file()


@pytest.mark.slow
def test_two_ddp_processes_equal_one_on_the_same_global_batch(tiny_data, tmp_path):
    """gloo on CPU: same global batches, dropout off, so the parameters must agree after a few steps."""
    common = ("--epochs", "1", "--max-steps", "3", "--dropout", "0")
    train(tiny_data, tmp_path / "one", tmp_path / "w1", *common)
    train(tiny_data, tmp_path / "two", tmp_path / "w2", *common, procs=2)
    one, two = load_file(tmp_path / "w1/epoch01.safetensors"), load_file(tmp_path / "w2/epoch01.safetensors")
    torch.manual_seed(7)
    from model.transformer import Transformer
    from model.config import ModelConfig

    cfg = json.loads((tmp_path / "one/config.json").read_text())
    cfg.pop("training")
    init = Transformer(ModelConfig(**cfg)).state_dict()
    moved = 0
    for k in one:
        torch.testing.assert_close(two[k], one[k], atol=2e-5, rtol=1e-4)
        moved += not torch.equal(one[k], init[k])
    assert moved > len(one) // 2  # training really changed the weights


@pytest.mark.slow
def test_training_is_reproducible_and_word_dropout_changes_it(tiny_data, tmp_path):
    common = ("--epochs", "1", "--max-steps", "3")
    for name, extra in (("a", ()), ("b", ()), ("wd", ("--word-dropout", "0.3"))):
        train(tiny_data, tmp_path / f"ckpt_{name}", tmp_path / f"work_{name}", *common, *extra)
    a, b, wd = (load_file(tmp_path / f"work_{n}/epoch01.safetensors") for n in ("a", "b", "wd"))
    assert all(torch.equal(a[k], b[k]) for k in a)  # same seed, same weights, to the bit
    assert not all(torch.equal(a[k], wd[k]) for k in a)


def test_snapshots_leave_training_unchanged(tiny_data, tmp_path, call):
    """The same short run with and without --snapshots ends with the same weights, to the bit; the snapshots are
    the weights at the steps asked for (step 0: the initialisation; the last one: the last epoch's weights)."""
    common = ("--data-dir", tiny_data, "--batch-size", "8", "--no-progress", "--seed", "7", "--epochs", "2",
              "--word-dropout", "0.2")
    assert call(train_cli.main, *common, "--out", tmp_path / "a", "--work-dir", tmp_path / "wa")[0] == 0
    assert call(train_cli.main, *common, "--out", tmp_path / "b", "--work-dir", tmp_path / "wb",
                "--snapshots", "0,2,e1,last")[0] == 0
    a, b = load_file(tmp_path / "wa/epoch02.safetensors"), load_file(tmp_path / "wb/epoch02.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    snaps = tmp_path / "wb/snapshots"
    rows = json.loads((snaps / "snapshots.json").read_text())
    assert [(r["step"], r["epoch_end"]) for r in rows] == [(0, None), (2, None), (3, 1), (6, 2)]  # 24 pairs: 3 steps
    last, first = load_file(snaps / rows[-1]["file"]), load_file(snaps / rows[0]["file"])
    assert all(torch.equal(last[k], a[k]) for k in a)
    mid, epoch1 = load_file(snaps / "step000003.safetensors"), load_file(tmp_path / "wa/epoch01.safetensors")
    assert all(torch.equal(mid[k], epoch1[k]) for k in epoch1)
    torch.manual_seed(7)
    from model.config import ModelConfig
    from model.transformer import Transformer

    cfg = json.loads((snaps / "config.json").read_text())
    cfg.pop("training")
    init = Transformer(ModelConfig(**cfg)).state_dict()
    assert all(torch.equal(first[k], init[k]) for k in init)
    assert not (snaps / "model.safetensors").exists()
    # a step that is also an epoch's end keeps the epoch it ends; the run's very last step is kept as a step too
    assert call(train_cli.main, *common, "--out", tmp_path / "c", "--work-dir", tmp_path / "wc",
                "--snapshots", "3,6,e1")[0] == 0
    rows = json.loads((tmp_path / "wc/snapshots/snapshots.json").read_text())
    assert [(r["step"], r["epoch_end"]) for r in rows] == [(3, 1), (6, None)]
    end = load_file(tmp_path / "wc/snapshots/step000006.safetensors")
    assert all(torch.equal(end[k], a[k]) for k in a)
