"""Checkpoints: weights in safetensors (no pickle: loading never runs code), config and vocabularies in JSON.

A checkpoint is a folder:
    model.safetensors   the weights, stored as float16 (half the file; loaded back as float32)
    config.json         ModelConfig as JSON
    vocab.json          {"src": [...], "tgt": [...]} (index -> token)
    README.md           the model card (written by hand; not needed for loading)
"""

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .config import ModelConfig
from .errors import CheckpointError
from .transformer import Transformer
from .vocab import Vocab

DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints"
CHECKPOINT_ENV = "TRANSFORMER_CHECKPOINT"  # overrides the default for every tool and the app
WEIGHTS, CONFIG, VOCAB = "model.safetensors", "config.json", "vocab.json"
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".ckpt")


def save_checkpoint(model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab, path, extra: dict | None = None,
                    weights: bool = True):
    """Writes config.json, vocab.json and (unless weights=False, as for a folder of training snapshots) the weights."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / CONFIG).write_text(json.dumps({**model.cfg.to_dict(), **({"training": extra} if extra else {})}, indent=2))
    (path / VOCAB).write_text(json.dumps({"src": src_vocab.itos, "tgt": tgt_vocab.itos}, ensure_ascii=False))
    if not weights:
        return
    # float16 halves the file (36 -> 18 MB) at a relative rounding of < 5e-4 of each tensor's largest value.
    state = {k: (v.half() if v.is_floating_point() else v).detach().contiguous().cpu()
             for k, v in model.state_dict().items()}
    save_file(state, path / WEIGHTS, metadata={"format": "pt"})


def _fail(path, what: str, fix: str = "Retrain with `python -m model.train`, or restore checkpoints/ with `git checkout -- checkpoints`."):
    raise CheckpointError(f"Checkpoint {path}: {what}. {fix}")


def checkpoint_folder(path=None) -> Path:
    """The folder a checkpoint argument names: PATH, its folder if PATH is the .safetensors file;
    without one, $TRANSFORMER_CHECKPOINT, else the shipped checkpoints/."""
    path = Path(path or os.environ.get(CHECKPOINT_ENV) or DEFAULT_CHECKPOINT)
    return path.parent if path.suffix == ".safetensors" else path


def weights_sha256(folder) -> str:
    """The sha256 hex digest of a checkpoint's model.safetensors, read in 1 MiB chunks (the file is 18 MB)."""
    digest = hashlib.sha256()
    with open(Path(folder) / WEIGHTS, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_checkpoint(path=None, device="cpu", weights: str = WEIGHTS) -> tuple[Transformer, Vocab, Vocab]:
    """Load and validate a checkpoint folder (or its model.safetensors); the model comes back in eval mode.

    Without a path: $TRANSFORMER_CHECKPOINT, else the shipped checkpoints/. weights: the weights file in the
    folder (a folder of training snapshots has one per step: model/replay.py).

    Each way a checkpoint can be wrong gives one CheckpointError saying what and what to do.
    """
    path = Path(path or os.environ.get(CHECKPOINT_ENV) or DEFAULT_CHECKPOINT)
    if path.suffix in PICKLE_SUFFIXES:
        _fail(path, "is a pickle file, which can run code when loaded, so it is refused",
              "Convert it to a checkpoint folder with model.safetensors, config.json and vocab.json.")
    folder = checkpoint_folder(path)
    if not folder.exists():
        _fail(folder, "does not exist", "Pass --checkpoint with a checkpoint folder, or restore checkpoints/ with `git checkout -- checkpoints`.")
    for name in (weights, CONFIG, VOCAB):
        if not (folder / name).is_file():
            _fail(folder, f"has no {name}")
    try:
        raw = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
        cfg = ModelConfig.from_dict({k: v for k, v in raw.items() if k != "training"} if isinstance(raw, dict)
                                    else raw)
    except (ValueError, TypeError) as e:
        _fail(folder / CONFIG, f"is not a valid model config ({e})")
    try:
        vocab = json.loads((folder / VOCAB).read_text(encoding="utf-8"))
        src_vocab, tgt_vocab = Vocab(vocab["src"]), Vocab(vocab["tgt"])
    except (ValueError, KeyError, TypeError) as e:
        _fail(folder / VOCAB, f"is not a valid vocabulary file ({e})")
    if (len(src_vocab), len(tgt_vocab)) != (cfg.src_vocab_size, cfg.tgt_vocab_size):
        _fail(folder, f"vocabularies have {len(src_vocab)}/{len(tgt_vocab)} tokens but the config says "
                      f"{cfg.src_vocab_size}/{cfg.tgt_vocab_size}")
    try:
        state = load_file(folder / weights)
    except (SafetensorError, OSError, ValueError) as e:
        _fail(folder / weights, f"is corrupt or truncated ({e})")
    model = Transformer(cfg)
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        _fail(folder / weights, f"does not fit the config: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for k, v in state.items():
        if v.shape != expected[k].shape:
            _fail(folder / weights, f"does not fit the config: {k} has shape {tuple(v.shape)}, "
                                    f"the config needs {tuple(expected[k].shape)}")
        if not torch.isfinite(v).all():
            _fail(folder / weights, f"is corrupt: {k} holds NaN or infinite values")
    model.load_state_dict(state)
    return model.to(device).eval(), src_vocab, tgt_vocab
