"""Checkpoint round trip, and one clear error for each way a checkpoint can be wrong."""

import pytest

from conftest import CHECKPOINT
from model.checkpoint import load_checkpoint


def test_shipped_checkpoint_is_the_reference_model():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    model, sv, tv = load_checkpoint(CHECKPOINT)
    assert (len(sv), len(tv)) == (7853, 5893)
    assert model.n_params() == 9_038_341
    assert (CHECKPOINT / "README.md").is_file()
    assert sum(f.stat().st_size for f in CHECKPOINT.iterdir()) <= 40 * 1024 * 1024
