"""Checkpoint round trip, and one clear error for each way a checkpoint can be wrong."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import ENGLISH, GERMAN, random_batch, tiny_config
from model.config import ModelConfig
from model.checkpoint import load_checkpoint, save_checkpoint
from model.errors import CheckpointError
from model.vocab import Vocab


@pytest.fixture
def saved(tmp_path, tiny_model):
    path = tmp_path / "ckpt"
    save_checkpoint(tiny_model, Vocab(GERMAN), Vocab(ENGLISH), path)
    return path


def test_round_trip_gives_the_same_model(saved, tiny_model):
    model, sv, tv = load_checkpoint(saved)
    assert sv.itos == GERMAN and tv.itos == ENGLISH
    assert model.cfg == tiny_model.cfg and not model.training
    for k, v in tiny_model.state_dict().items():  # stored as float16, loaded back as float32
        assert model.state_dict()[k].dtype == torch.float32
        assert torch.equal(model.state_dict()[k], v.half().float())
    src, tgt = random_batch(model.cfg)
    torch.testing.assert_close(model(src, tgt).logits, tiny_model(src, tgt).logits, atol=2e-3, rtol=2e-3)
    assert load_checkpoint(saved / "model.safetensors")[0].cfg == model.cfg  # the weights file works too


def expect_error(path, *fragments):
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(path)
    for f in fragments:
        assert f in str(e.value), str(e.value)
    return str(e.value)


def test_missing_folder(tmp_path):
    expect_error(tmp_path / "nope", "does not exist", "--checkpoint")


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "vocab.json"])
def test_missing_file(saved, name):
    (saved / name).unlink()
    expect_error(saved, f"has no {name}", "python -m model.train")


def test_truncated_weights(saved):
    data = (saved / "model.safetensors").read_bytes()
    (saved / "model.safetensors").write_bytes(data[: len(data) // 2])
    expect_error(saved, "corrupt or truncated")


def test_garbage_weights(saved):
    (saved / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    expect_error(saved, "corrupt or truncated")


def test_pickle_file_is_refused_without_being_opened(tmp_path, tiny_model):
    path = tmp_path / "model.pt"
    torch.save(tiny_model.state_dict(), path)
    expect_error(path, "pickle", "safetensors")


def test_weights_that_do_not_fit_the_config(saved):
    cfg = json.loads((saved / "config.json").read_text())
    cfg["d_ff"] = 64
    (saved / "config.json").write_text(json.dumps(cfg))
    expect_error(saved, "does not fit the config", "shape")


def test_missing_tensor(saved):
    state = load_file(saved / "model.safetensors")
    state.pop("generator.bias")
    save_file(state, saved / "model.safetensors")
    expect_error(saved, "does not fit the config", "generator.bias")


def test_nan_weights(saved):
    state = load_file(saved / "model.safetensors")
    state["generator.bias"][0] = float("nan")
    save_file(state, saved / "model.safetensors")
    expect_error(saved, "NaN")


def test_bad_config_and_vocab(saved, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(saved, other)
    (saved / "config.json").write_text("{not json")
    expect_error(saved, "config.json", "not a valid model config")
    (other / "vocab.json").write_text(json.dumps({"src": GERMAN, "tgt": ENGLISH[:-1]}))
    expect_error(other, "vocabularies have")


@pytest.mark.parametrize("change,message", [
    ({"n_heads": "4"}, "n_heads must be a whole number above 0, got '4'"),
    ({"n_heads": 3}, "d_model 16 is not divisible by n_heads 3"),
    ({"d_ff": 0}, "d_ff must be a whole number above 0"),
    ({"max_positions": 24.0}, "max_positions must be a whole number above 0, got 24.0"),
    ({"n_enc_layers": True}, "n_enc_layers must be a whole number above 0, got True"),
    ({"dropout": 1.0}, "dropout must be a number in [0, 1), got 1.0"),
    ({"dropout": "0.1"}, "dropout must be a number in [0, 1)"),
    ({"positions": "rotary"}, "positions must be 'learned', 'sinusoidal' or 'halves', got 'rotary'"),
    ({"pad_id": 19}, "pad_id must be an index into both vocabularies"),
    ({"activation": "tanh"}, "activation must be 'relu', 'swish' or 'gelu', got 'tanh'"),
    ({"tie": "some"}, "tie must be 'none', 'target' or 'all', got 'some'"),
    ({"tie": "all", "tgt_vocab_size": 19}, "tie 'all' shares one table"),
    ({"embed_scale": 1}, "embed_scale must be true or false, got 1"),
    ({"source_start": "no"}, "source_start must be true or false"),
    ({"sos_id": 0}, "sos_id another one or pad_id"),
    ({"unk_id": 1}, "pad_id, unk_id and eos_id must be three different indices"),
])
def test_config_validation_raises_value_errors(change, message):
    with pytest.raises(ValueError) as e:
        tiny_config(**change)
    assert message in str(e.value)


def test_config_round_trips_through_json():
    cfg = tiny_config(positions="sinusoidal", dropout=0.0)
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown config keys"):
        ModelConfig.from_dict({**cfg.to_dict(), "n_layers": 6})
