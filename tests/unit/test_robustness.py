"""Odd files, odd checkpoints and odd devices give one clear message (exit 2 for the tools), never a traceback,
and nothing written half-way; a file of any mix of lines gives exactly one output line per line."""

import gzip
import json
import pickle
import random
import struct

import pytest
from safetensors.torch import load_file, save_file

from conftest import ENGLISH, GERMAN, assert_error_line
from model import evaluate, head_importance, head_stats, translate
from model.checkpoint import load_checkpoint, save_checkpoint
from model.data import read_lines, split_lines
from model.errors import CheckpointError, InputError
from model.vocab import Vocab

TOOLS = {"translate": translate, "evaluate": evaluate, "head_importance": head_importance, "head_stats": head_stats}

# ---------------------------------------------------------------------------------------------- input files

# Lines Python's str.splitlines() would cut in two (or more): each must stay one line.
ODD_LINES = ["ein\x0bhund", "ein\x0chund", "a\x1cb\x1dc\x1ed", "ein\u2028hund\u2029.", "ein\x85hund", "ein\rhund",
             "\x00\x01\x07", "\u200b\ufeff", "😀 ein hund", "ein hund\x00läuft"]


def test_split_lines_keeps_every_other_separator_inside_its_line():
    text = "\n".join(ODD_LINES) + "\n"
    assert split_lines(text.encode(), "x") == ODD_LINES
    assert len(split_lines(text.encode(), "x")) == text.count("\n")  # what `wc -l` counts
    assert split_lines(b"a\r\nb\r\n", "x") == ["a", "b"]  # Windows line ends
    assert split_lines(b"a\nb", "x") == ["a", "b"]  # an unterminated last line counts
    assert split_lines(b"\n\n", "x") == ["", ""] and split_lines(b"", "x") == []
    assert split_lines("\ufeffein hund\n".encode(), "x") == ["ein hund"]  # a byte-order mark is dropped


def test_read_lines_says_what_is_wrong_with_a_file(tmp_path):
    def error(path):
        with pytest.raises(InputError) as e:
            read_lines(path)
        return str(e.value)

    assert "does not exist" in error(tmp_path / "missing.de")
    assert "is a folder" in error(tmp_path)
    (tmp_path / "latin1.de").write_bytes("ein hund\nzwei männer\n".encode("latin-1"))
    assert error(tmp_path / "latin1.de").endswith("line 2 is not UTF-8 text (byte 0xe4 at byte 7): save the file "
                                                  "as UTF-8")
    (tmp_path / "fake.gz").write_bytes(b"plain text, not gzip\n")
    assert "cannot be read as gzip" in error(tmp_path / "fake.gz")
    good = gzip.compress("ein hund\n".encode())
    (tmp_path / "cut.gz").write_bytes(good[:len(good) // 2])
    assert "cannot be read as gzip" in error(tmp_path / "cut.gz")
    (tmp_path / "ok.gz").write_bytes(good)
    assert read_lines(tmp_path / "ok.gz") == ["ein hund"]


def bad_files(tmp_path) -> dict:
    """name -> (path, what the one error line must say)."""
    (tmp_path / "latin1.de").write_bytes("ein hund\nzwei männer\n".encode("latin-1"))
    (tmp_path / "garbage.de").write_bytes(bytes(random.Random(0).randrange(256) for _ in range(4000)))
    (tmp_path / "fake.gz").write_bytes(b"not gzip at all\n")
    (tmp_path / "folder").mkdir(exist_ok=True)
    return {"missing": (tmp_path / "missing.de", "does not exist"),
            "folder": (tmp_path / "folder", "is a folder"),
            "latin1": (tmp_path / "latin1.de", "line 2 is not UTF-8 text"),
            "garbage": (tmp_path / "garbage.de", "is not UTF-8 text"),
            "fake_gz": (tmp_path / "fake.gz", "cannot be read as gzip")}


@pytest.mark.parametrize("tool", ["translate", "evaluate", "head_importance", "head_stats"])
def test_every_tool_refuses_a_bad_input_file_in_one_line(tool, tiny_checkpoint, tmp_path, call):
    good = tmp_path / "good.en"
    good.write_text("a dog .\na dog .\n", encoding="utf-8")
    out = tmp_path / "out.json"
    for name, (path, says) in bad_files(tmp_path).items():
        args = {"translate": ["--input", path],
                "evaluate": ["--src", path, "--ref", good],
                "head_importance": ["--src", path, "--ref", good, "--out", out],
                "head_stats": ["--src", path, "--out", out]}[tool]
        status, stdout, err = call(TOOLS[tool].main, *args, "--checkpoint", tiny_checkpoint)
        assert_error_line(status, err, str(path), says)
        assert stdout == "" and not out.exists(), name
    if tool in ("evaluate", "head_importance"):  # the reference file is read the same way
        path, says = bad_files(tmp_path)["latin1"]
        extra = ["--out", out] if tool == "head_importance" else []
        status, stdout, err = call(TOOLS[tool].main, "--src", good, "--ref", path, *extra, "--checkpoint", tiny_checkpoint)
        assert_error_line(status, err, str(path), says)
        assert stdout == "" and not out.exists()


def test_head_importance_checks_its_output_folder_before_the_long_run(tiny_checkpoint, tmp_path, call):
    (tmp_path / "s.de").write_text("ein hund .\n", encoding="utf-8")
    (tmp_path / "r.en").write_text("a dog .\n", encoding="utf-8")
    status, _, err = call(head_importance.main, "--src", tmp_path / "s.de", "--ref", tmp_path / "r.en",
                          "--out", tmp_path / "no/such/folder/hi.json", "--checkpoint", tiny_checkpoint)
    assert_error_line(status, err, "cannot write", "does not exist")


# ---------------------------------------------------------------------------------------------- checkpoints

class CreatesAFile:
    """Unpickling this object opens (so creates) a file: proof that a loader ran pickle code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def _pickle_as_weights(folder, marker):
    (folder / "model.safetensors").write_bytes(pickle.dumps({"weights": CreatesAFile(marker)}))


def _torch_pickle_as_weights(folder, marker):
    import torch

    torch.save({"weights": CreatesAFile(marker)}, folder / "model.safetensors")


def _huge_header(folder, marker):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", 2 ** 62) + data[8:])


def _empty_weights(folder, marker):
    (folder / "model.safetensors").write_bytes(b"")


def _wrong_shape(folder, marker):
    state = load_file(folder / "model.safetensors")
    state["generator.weight"] = state["generator.weight"][:, :-1].contiguous()
    save_file(state, folder / "model.safetensors")


def _infinite(folder, marker):
    state = load_file(folder / "model.safetensors")
    state["encoder.0.ffn.fc1.weight"][0, 0] = float("inf")
    save_file(state, folder / "model.safetensors")


def _config(text):
    def write(folder, marker):
        (folder / "config.json").write_text(text)
    return write


def _config_change(change):
    def write(folder, marker):
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(change)
        for key in [k for k, v in change.items() if v is None]:
            del cfg[key]
        (folder / "config.json").write_text(json.dumps(cfg))
    return write


def _vocab(text):
    def write(folder, marker):
        (folder / "vocab.json").write_text(text)
    return write


# name -> (how to break the saved tiny checkpoint, what the CheckpointError must say)
BROKEN = {
    "pickle": (_pickle_as_weights, "corrupt or truncated"),
    "torch_pickle": (_torch_pickle_as_weights, "corrupt or truncated"),
    "huge_header": (_huge_header, "corrupt or truncated"),
    "empty_weights": (_empty_weights, "corrupt or truncated"),
    "wrong_shape": (_wrong_shape, "generator.weight has shape (19, 15), the config needs (19, 16)"),
    "infinite": (_infinite, "encoder.0.ffn.fc1.weight holds NaN or infinite values"),
    "config_list": (_config("[1, 2]"), "a config is a JSON object, got list"),
    "config_missing_key": (_config_change({"d_model": None}), "missing config keys ['d_model']"),
    "config_wrong_type": (_config_change({"d_ff": "32"}), "d_ff must be a whole number above 0, got '32'"),
    "n_heads_text": (_config_change({"n_heads": "4"}), "n_heads must be a whole number above 0, got '4'"),
    "indivisible": (_config_change({"n_heads": 3}), "d_model 16 is not divisible by n_heads 3"),
    "dropout": (_config_change({"dropout": 1.0}), "dropout must be a number in [0, 1), got 1.0"),
    "positions": (_config_change({"positions": "rotary"}), "positions must be 'learned', 'sinusoidal' or 'halves', got 'rotary'"),
    "config_not_utf8": (lambda f, m: (f / "config.json").write_bytes(b'{"d_model": "\xff"}'),
                        "not a valid model config"),
    "vocab_not_json": (_vocab("{src: "), "is not a valid vocabulary file"),
    "vocab_list": (_vocab("[]"), "is not a valid vocabulary file"),
    "vocab_numbers": (_vocab(json.dumps({"src": list(range(23)), "tgt": ENGLISH})), "tokens must be strings"),
    "vocab_wrong_size": (_vocab(json.dumps({"src": GERMAN + ["extra"], "tgt": ENGLISH})), "vocabularies have 24/19"),
}


def broken_checkpoint(root, tiny_model, name):
    """A saved tiny checkpoint broken one way, in root/name; the marker file root/unpickled must never appear."""
    folder = root / name
    save_checkpoint(tiny_model, Vocab(GERMAN), Vocab(ENGLISH), folder)
    BROKEN[name][0](folder, root / "unpickled")
    return folder


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_checkpoint_is_one_clear_error(name, tmp_path, tiny_model):
    folder = broken_checkpoint(tmp_path, tiny_model, name)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(folder)
    assert BROKEN[name][1] in str(e.value) and str(folder) in str(e.value)
    assert not (tmp_path / "unpickled").exists()  # the pickle was never run


def test_the_marker_object_really_creates_its_file_when_unpickled(tmp_path):
    """The pickle test above could not fail if unpickling CreatesAFile did nothing: show that it does."""
    pickle.loads(pickle.dumps(CreatesAFile(tmp_path / "made")))
    assert (tmp_path / "made").exists()


# ---------------------------------------------------------------------------------------------- devices

@pytest.mark.parametrize("device, says", [("Cuda", "unknown device 'Cuda'"), ("cuda:x", "unknown device 'cuda:x'"),
                                          (" cpu", "unknown device ' cpu'"), ("mps", "MPS is not available here")])
def test_more_bad_devices_are_one_line(tiny_checkpoint, device, says, call):
    import torch

    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    status, stdout, err = call(translate.main, "--checkpoint", tiny_checkpoint, "--device", device, stdin="ein hund .\n")
    assert_error_line(status, err, says)
    assert stdout == ""
