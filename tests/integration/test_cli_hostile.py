"""The command-line tools and checkpoint loading against hostile input (docs/contract.md, Command-line contracts).

Almost every case here gave a traceback, a silent wrong answer, a partial file or an unbounded allocation before
the fix it guards (a few neighbours guard what already held): every failure is one `error: ...` line and status 2;
Ctrl-C is `interrupted` and status 130; an --out file is written whole or not at all; no JSON holds NaN; inputs
are read up to a limit; a checkpoint that cannot be this model is refused before the model is built. Most run a
tool's main in this process (conftest's `call`); a few start `python -m` for real, for the wiring and a real SIGINT.
"""

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import CHECKPOINT, ROOT, assert_error_line, run, write_multi30k
from model import checkpoint, files, translate
from unit.test_cli_hostile import LIMIT_MB, MANY_DIGITS, SENTENCE


@pytest.mark.parametrize("argv, says", [
    (["--top-k", "100000"], "--top-k must be at most 19"),
    (["--beam", "100000"], "--beam must be at most 64"),
    (["--mask-heads", "enc.\u00b2"], "is not a number"),
    (["--force", f"{MANY_DIGITS}:dog"], "is not STEP:TOKEN"),
])
def test_the_reported_tracebacks_are_one_line_as_a_module(argv, says, tiny_checkpoint):
    r = run("model.translate", "--checkpoint", tiny_checkpoint, *argv, stdin=f"{SENTENCE}\n")
    assert "Traceback" not in r.stderr
    assert_error_line(r.returncode, r.stderr, says)
    assert r.stdout == ""


def test_a_real_sigint_while_the_tool_imports_torch_is_one_line_and_status_130(tiny_checkpoint):
    """SIGINT in a tool's first second, while its module imports torch: `interrupted` and 130, no traceback.

    -X importtime says when the package `model` is imported (its line comes once it is): the signal follows at
    once, while model.translate's own imports (torch among them, seconds) are still loading."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "model.translate", "--checkpoint",
                             tiny_checkpoint], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a shell starts it
    try:
        for line in proc.stderr:
            if line.rstrip().endswith("| model"):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    said = [line for line in err.splitlines() if not line.startswith("import time:")]
    assert "Traceback" not in err and (proc.returncode, said) == (130, ["interrupted"]), err[-2000:]
    assert not any(line.rstrip().endswith("| torch") for line in err.splitlines())  # stopped inside its import


def test_a_real_sigint_stops_training_with_status_130_and_no_half_file(tmp_path):
    """SIGINT once training runs (its first log line is out): status 130, one line, no temporary file left."""
    data = write_multi30k(tmp_path / "data")
    proc = subprocess.Popen([sys.executable, "-m", "model.train", "--data-dir", str(data), "--out",
                             str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"), "--epochs", "100000",
                             "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as a shell starts it: SIGINT at its default, whatever this test process inherited (a
                            # child of a process that ignores SIGINT ignores it too, and Python then never raises
                            # KeyboardInterrupt)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().startswith("vocab "), proc.stderr.read()
        # SIGINT once the first epoch is logged, when the training loop runs: sent right after the first line, it
        # once went unanswered for the 120 s below in a full run (cause not found; the same contract is tested).
        for line in proc.stdout:
            if line.startswith("epoch "):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (130, "interrupted\n")
    assert not [p.name for p in tmp_path.rglob("*.tmp")]


@pytest.fixture
def shipped_copy(tmp_path) -> Path:
    """The shipped checkpoint's three files, copied to be damaged."""
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    for name in ("config.json", "vocab.json", "model.safetensors"):
        shutil.copy(CHECKPOINT / name, folder / name)
    return folder


def set_config(**change):
    def damage(folder):
        cfg = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, **change}))
    return damage


def nested(name: str, key: str):
    def damage(folder):
        (folder / name).write_text(f'{{"{key}": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return damage


def too_large(name: str):
    def damage(folder):
        with open(folder / name, "r+b") as f:
            f.truncate(files.MAX_INPUT_BYTES + 1)
    return damage


def set_weight(name: str, make):
    def damage(folder):
        state = load_file(folder / "model.safetensors")
        state[name] = make(state[name])
        save_file(state, folder / "model.safetensors")
    return damage


BEFORE_THE_MODEL = {  # refused from the JSON alone, before the model is built
    "config nested too deeply": (nested("config.json", "d_model"), ["config.json", "nested too deeply"]),
    "vocab nested too deeply": (nested("vocab.json", "src"), ["vocab.json", "nested too deeply"]),
    "config past the size limit": (too_large("config.json"), ["config.json", "larger than the input limit", LIMIT_MB]),
    "d_ff 10**12": (set_config(d_ff=10**12), ["d_ff must be at most 16,384"]),
    "d_model 2**40": (set_config(d_model=2**40), ["d_model must be at most 4,096"]),
    "max_positions 10**9": (set_config(max_positions=10**9), ["max_positions must be at most 4,096"]),
    "n_enc_layers 10**6": (set_config(n_enc_layers=10**6), ["n_enc_layers must be at most 48"]),
    "n_dec_layers 10**6": (set_config(n_dec_layers=10**6), ["n_dec_layers must be at most 48"]),
    "n_heads 10**4": (set_config(n_heads=10**4), ["n_heads must be at most 64"]),
    "parameters past the total": (set_config(d_model=4096, d_ff=16384, n_heads=64, n_enc_layers=48, n_dec_layers=48),
                                  ["parameters, more than the 250,000,000"]),
    "pad_id not <pad>": (set_config(pad_id=4), ["says pad_id 4, but <pad> is token 1"]),
    "pad_id is unk_id": (set_config(pad_id=0), ["pad_id, unk_id and eos_id must be three different indices"]),
    "sos_id not <sos>": (set_config(sos_id=5), ["says sos_id 5, but <sos> is token 2"]),
}


WEIGHTS = {  # refused from the weights file: its header, then each tensor as it is read
    "int8 weights": (set_weight("generator.weight", lambda w: w.to(torch.int8)), ["generator.weight holds I8", "floating point"]),
    "bool weights": (set_weight("encoder.0.ffn.fc1.weight", lambda w: w > 0), ["holds BOOL", "floating point"]),
    "an infinite weight": (set_weight("generator.bias", lambda w: w.index_fill(0, torch.tensor([5]), float("inf"))),
                           ["generator.bias holds NaN or infinite values"]),
    "weights so large the outputs overflow": (set_weight("generator.weight", lambda w: w.float() * 1e30),
                                              ["generator.weight holds values up to", "past the 1000"]),
}


@pytest.mark.parametrize("case", list(BEFORE_THE_MODEL) + list(WEIGHTS))
def test_a_checkpoint_that_cannot_be_this_model_is_one_error_line(case, shipped_copy, call, monkeypatch):
    damage, fragments = {**BEFORE_THE_MODEL, **WEIGHTS}[case]
    damage(shipped_copy)
    if case in BEFORE_THE_MODEL:  # nothing allocated for the model yet
        def built(*args, **kwargs):
            raise AssertionError(f"the model was built for {case}")

        monkeypatch.setattr(checkpoint, "Transformer", built)
    status, out, err = call(translate.main, "--checkpoint", shipped_copy, stdin=f"{SENTENCE}\n")
    assert_error_line(status, err, str(shipped_copy), *fragments)
    assert out == ""


def test_the_shipped_checkpoint_is_within_every_bound():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    model, _, _ = checkpoint.load_checkpoint(CHECKPOINT)
    assert max(v.abs().max().item() for v in model.state_dict().values()) < checkpoint.MAX_WEIGHT / 100
