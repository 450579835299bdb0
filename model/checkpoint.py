"""Checkpoints: weights in safetensors (no pickle: loading never runs code), config and vocabularies in JSON.

A checkpoint is a folder:
    model.safetensors   the weights, stored as float16 (half the file; loaded back as float32)
    config.json         ModelConfig as JSON
    vocab.json          {"src": [...], "tgt": [...]} (index -> token); a converted model's (model/convert.py) also
                        names its "specials" ({"unk": ..., "pad": ..., "sos": ..., "eos": ...}) and says whether
                        its tokens are "lower"-cased; a Marian model's names its SentencePiece models, "pieces":
                        {"src": "source.spm", "tgt": "target.spm"}, files of the folder
    README.md           the model card (written by hand; not needed for loading)
"""

import math
import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from . import files
from .config import ModelConfig
from .errors import CheckpointError
from .transformer import Transformer
from .vocab import ROLES, Vocab, pieces_processor

DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints"
CHECKPOINT_ENV = "TRANSFORMER_CHECKPOINT"  # overrides the default for every tool and the app
WEIGHTS, CONFIG, VOCAB = "model.safetensors", "config.json", "vocab.json"
PIECES = {"src": "source.spm", "tgt": "target.spm"}  # a Marian model's SentencePiece models, beside vocab.json
MAX_PIECES_BYTES = 20 * 2**20  # opus-mt's are 0.8 MB each
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".ckpt")
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")  # safetensors' names of the floating-point types a weight may have
# Largest |weight| a checkpoint may hold. Trained weights of this model stay within +-2 (the shipped one: 1.85);
# below 1000, no product between two LayerNorms can leave float32's range (~3e38) even at config.py's largest
# sizes, so the outputs stay finite. Past it, a file is damaged or made to break the model.
MAX_WEIGHT = 1000.0


def save_checkpoint(model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab, path, extra: dict | None = None,
                    weights: bool = True, half: bool = True):
    """Writes config.json, vocab.json and (unless weights=False, as for a folder of training snapshots) the weights,
    as float16 (half) or float32 (a converted model keeps its weights exactly: model/convert.py)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    # Each file written whole or not at all (model/files.py): a run stopped while saving leaves the last one.
    files.write_text(path / CONFIG, files.dumps({**model.cfg.to_dict(), **({"training": extra} if extra else {})},
                                                indent=2))
    if src_vocab.specials != tgt_vocab.specials or src_vocab.lower != tgt_vocab.lower:
        raise ValueError("both vocabularies must name the same special tokens and case the same way")
    more = {} if src_vocab.ours and tgt_vocab.ours else {"specials": src_vocab.specials, "lower": src_vocab.lower}
    if (src_vocab.pieces is None) != (tgt_vocab.pieces is None):
        raise ValueError("both vocabularies have SentencePiece models, or neither")
    if src_vocab.pieces is not None:
        for side, vocab in PIECES.items():
            with files.replacing(path / vocab) as tmp:
                Path(tmp).write_bytes((src_vocab if side == "src" else tgt_vocab).pieces)
        more["pieces"] = PIECES
    files.write_text(path / VOCAB, files.dumps({"src": src_vocab.itos, "tgt": tgt_vocab.itos, **more},
                                               ensure_ascii=False))
    if not weights:
        return
    # float16 halves the file (36 -> 18 MB) at a relative rounding of < 5e-4 of each tensor's largest value.
    state = {k: (v.half() if v.is_floating_point() and half else v).detach().contiguous().cpu()
             for k, v in model.stored_state().items()}
    with files.replacing(path / WEIGHTS) as tmp:
        save_file(state, tmp, metadata={"format": "pt"})


def _fail(path, what: str, fix: str = "Retrain with `python -m model.train`, or restore checkpoints/ with `git checkout -- checkpoints`."):
    raise CheckpointError(f"Checkpoint {path}: {what}. {fix}")


def checkpoint_folder(path=None) -> Path:
    """The folder a checkpoint argument names: PATH, its folder if PATH is the .safetensors file;
    without one, $TRANSFORMER_CHECKPOINT, else the shipped checkpoints/."""
    path = Path(path or os.environ.get(CHECKPOINT_ENV) or DEFAULT_CHECKPOINT)
    return path.parent if path.suffix == ".safetensors" else path


def weights_sha256(folder) -> str:
    """The sha256 hex digest of a checkpoint's model.safetensors, read in 1 MiB chunks (the file is 18 MB)."""
    return files.sha256(Path(folder) / WEIGHTS)


def load_checkpoint(path=None, device="cpu", weights: str = WEIGHTS) -> tuple[Transformer, Vocab, Vocab]:
    """Load and validate a checkpoint folder (or its model.safetensors); the model comes back in eval mode.

    Without a path: $TRANSFORMER_CHECKPOINT, else the shipped checkpoints/. weights: the weights file in the
    folder (a folder of training snapshots has one per step: model/replay.py).

    Each way a checkpoint can be wrong gives one CheckpointError saying what and what to do. What cannot be
    this model is refused before the model is built: JSON past model/files.py's size limit or nested too
    deep, sizes past config.py's MAX_SIZES, a <pad> elsewhere than the config says. The weights are checked
    from the file's header (names, shapes, floating-point types) before any is read, then each one as it is
    read: finite, and |w| <= MAX_WEIGHT.
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
        raw = _read_json(folder / CONFIG)
        cfg = ModelConfig.from_dict({k: v for k, v in raw.items() if k != "training"} if isinstance(raw, dict)
                                    else raw)
    except (ValueError, TypeError) as e:
        _fail(folder / CONFIG, f"is not a valid model config ({_short(e)})")
    try:
        vocab = _read_json(folder / VOCAB)
        more = {"specials": vocab.get("specials"), "lower": vocab.get("lower", True)}
        pieces = _read_pieces(folder, vocab.get("pieces"))
        src_vocab, tgt_vocab = (Vocab(vocab[side], **more, pieces=pieces[side]) for side in ("src", "tgt"))
    except (ValueError, KeyError, TypeError, AttributeError, OSError) as e:
        _fail(folder / VOCAB, f"is not a valid vocabulary file ({_short(e)})")
    if (len(src_vocab), len(tgt_vocab)) != (cfg.src_vocab_size, cfg.tgt_vocab_size):
        _fail(folder, f"vocabularies have {len(src_vocab)}/{len(tgt_vocab)} tokens but the config says "
                      f"{cfg.src_vocab_size}/{cfg.tgt_vocab_size}")
    for role in ROLES:  # the model reads the specials' ids from the config (masks, decoding): the vocabularies agree
        for side, vocab in (("German", src_vocab), ("English", tgt_vocab)):
            if getattr(cfg, f"{role}_id") != getattr(vocab, f"{role}_id"):
                _fail(folder / CONFIG, f"says {role}_id {getattr(cfg, f'{role}_id')}, but {vocab.specials[role]} is "
                                       f"token {getattr(vocab, f'{role}_id')} of the {side} vocabulary")
    model = Transformer(cfg)  # sizes bounded by ModelConfig: this much memory is fine
    try:
        state = _read_weights(folder / weights, {k: tuple(v.shape) for k, v in model.stored_state().items()})
    except (SafetensorError, OSError, ValueError) as e:
        _fail(folder / weights, f"is corrupt or truncated ({_short(e)})")
    model.load_state_dict(state, strict=False)  # what it lacks are the names of tied tables (stored_state)
    return model.to(device).eval(), src_vocab, tgt_vocab


def _read_pieces(folder: Path, names) -> dict:
    """{"src": bytes, "tgt": bytes} of the SentencePiece models vocab.json names (both None where it names none)."""
    if names is None:
        return {"src": None, "tgt": None}
    if names != PIECES:
        raise ValueError(f"pieces must be {PIECES}, got {names!r}")
    out = {}
    for side, name in PIECES.items():
        with open(folder / name, "rb") as f:
            out[side] = f.read(MAX_PIECES_BYTES + 1)
        if len(out[side]) > MAX_PIECES_BYTES:
            raise ValueError(f"{name} is larger than {MAX_PIECES_BYTES // 2**20} MB")
        try:
            pieces_processor(out[side])
        except Exception:  # sentencepiece raises RuntimeError or its own errors for a damaged model
            raise ValueError(f"{name} is not a SentencePiece model") from None
    return out


def origin(folder) -> dict:
    """Where a checkpoint's model came from, from its config.json's "training" entry: {"family": ours or a converted
    one's ("tutorial", "marian", ...), "languages": (source, target) codes, None where a converted model names none,
    "generation": a converted Marian model's generation settings ({} for others)}."""
    raw = _read_json(Path(folder) / CONFIG)
    training = raw.get("training") if isinstance(raw, dict) else None
    training = training if isinstance(training, dict) else {}
    family, languages = str(training.get("family", "ours")), training.get("languages")
    if isinstance(languages, list) and len(languages) == 2:  # a converted Marian model's: each a code or unknown
        languages = tuple(x[:20] if isinstance(x, str) and x else None for x in languages)
    else:  # ours and the tutorials' read German and write English; another family's without codes: unknown
        languages = ("de", "en") if family in ("ours", "tutorial", "pytorch", "annotated") else (None, None)
    generation = training.get("generation")
    return {"family": family, "languages": languages, "generation": generation if isinstance(generation, dict) else {}}


def _read_json(path: Path):
    """A checkpoint's JSON file; InputError (a ValueError) when it is too large, not JSON, or nested too deep."""
    with open(path, "rb") as f:
        return files.loads(files.read_limited(f, path.name), path.name)


def _read_weights(path: Path, expected: dict) -> dict:
    """{name: tensor} of a safetensors file whose names and shapes are `expected` ({name: shape}): CheckpointError
    for a name, shape or type that does not fit, judged from the header before a tensor is read; then for a
    tensor that is not finite or past MAX_WEIGHT, as each is read (an 18 MB file: a fraction of a second)."""
    state = {}
    with safe_open(path, framework="pt") as f:
        names = set(f.keys())
        missing, unexpected = sorted(set(expected) - names), sorted(names - set(expected))
        if missing or unexpected:
            _fail(path, f"does not fit the config: missing {missing[:5]}, unexpected {unexpected[:5]}")
        for k in sorted(names):
            header = f.get_slice(k)
            shape, dtype = tuple(header.get_shape()), header.get_dtype()
            if shape != expected[k]:
                _fail(path, f"does not fit the config: {k} has shape {shape}, the config needs {expected[k]}")
            if dtype not in FLOAT_DTYPES:
                _fail(path, f"is not this model's: {k} holds {dtype} values, weights are floating point")
        for k in sorted(names):
            v = f.get_tensor(k)
            if v.numel():  # the smallest and largest value: NaN makes both NaN, inf one of them (no copy of v)
                lo, hi = (x.item() for x in v.aminmax())
                if not (math.isfinite(lo) and math.isfinite(hi)):
                    _fail(path, f"is corrupt: {k} holds NaN or infinite values")
                if max(-lo, hi) > MAX_WEIGHT:
                    _fail(path, f"is corrupt: {k} holds values up to {max(-lo, hi):.3g}, past the "
                                f"{MAX_WEIGHT:g} a weight of this model may reach (its outputs would overflow)")
            state[k] = v
    return state


def _short(e, limit: int = 300) -> str:
    """An exception's message cut to `limit` characters: a hostile file's value must not fill the screen."""
    text = str(e)
    return text if len(text) <= limit else text[:limit] + "..."
