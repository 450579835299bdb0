"""Multi30k files, and length-bucketed batches of token ids for training and evaluation."""

import gzip
import os
import random
import zlib
from pathlib import Path

import torch

from .errors import InputError
from .files import read_limited
from .vocab import PAD_ID, Vocab

SPLITS = {
    "train": ("train.de.gz", "train.en.gz"),
    "val": ("val.de.gz", "val.en.gz"),
    "test": ("test_2016_flickr.de.gz", "test_2016_flickr.en.gz"),
}
DATA_ENV = "MULTI30K_DIR"


def read_lines(path) -> list[str]:
    """Lines of a plain or .gz UTF-8 text file (see split_lines), at most model/files.py's MAX_INPUT_BYTES of
    text; InputError when it is not one, or is larger."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file of sentences")
    if not path.is_file():
        raise InputError(f"{path} does not exist")
    if path.suffix != ".gz":
        with open(path, "rb") as f:
            return split_lines(read_limited(f, str(path)), str(path))
    try:
        with gzip.open(path, "rb") as f:
            data = read_limited(f, str(path))
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:  # not gzip, cut short, or its data damaged
        raise InputError(f"{path} cannot be read as gzip: {e}") from None
    return split_lines(data, str(path))


def split_lines(data: bytes, name: str) -> list[str]:
    """UTF-8 text split at "\\n" only, a final "\\r" dropped: exactly the lines `wc -l` counts (plus an
    unterminated last one). Other separators Python knows (\\v, \\f, \\x1c, U+2028, a lone \\r ...) stay
    inside their line, so output lines always match input lines. InputError names the first line
    that is not UTF-8."""
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")  # a byte-order mark is not part of a sentence
    if lines[-1] == b"":
        lines.pop()
    out = []
    for n, line in enumerate(lines, 1):
        try:
            out.append(line.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as e:
            raise InputError(f"{name} line {n} is not UTF-8 text (byte 0x{line[e.start]:02x} at byte "
                             f"{e.start + 1}): save the file as UTF-8") from None
    return out


def default_data_dir() -> Path | None:
    """$MULTI30K_DIR, else ../shared/data/multi30k beside the checkout; None when neither has the files."""
    candidates = [os.environ.get(DATA_ENV), Path(__file__).resolve().parents[2] / "shared/data/multi30k"]
    for c in candidates:
        if c and all((Path(c) / f).is_file() for pair in SPLITS.values() for f in pair):
            return Path(c)
    return None


def load_split(data_dir, split: str) -> tuple[list[str], list[str]]:
    """German and English sentences of one split; a clear error naming the missing files."""
    de_name, en_name = SPLITS[split]
    de, en = Path(data_dir) / de_name, Path(data_dir) / en_name
    missing = [str(p) for p in (de, en) if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"Multi30k {split} files not found: {', '.join(missing)}. Put the files of the "
            f"multi30k/dataset repository's data/task1/raw/ folder ({de_name}, {en_name}) in {data_dir}, "
            f"or pass --data-dir DIR.")
    src, tgt = read_lines(de), read_lines(en)
    if len(src) != len(tgt):
        raise ValueError(f"{de} has {len(src)} lines but {en} has {len(tgt)}")
    return src, tgt


def encode_pairs(src_lines, tgt_lines, src_vocab: Vocab, tgt_vocab: Vocab, max_positions: int,
                 source_start: bool = True):
    """Lists of id sequences, each <sos> tokens <eos>, cut to fit the model's positions; with source_start False
    (ModelConfig's: a Marian model's source) the sources are tokens <eos> alone."""
    keep = max_positions - 2

    def enc(line, lang, vocab, start=True):
        return [vocab.sos_id] * start + vocab.encode(vocab.tokenize(line, lang)[:keep]) + [vocab.eos_id]

    return ([enc(s, "de", src_vocab, source_start) for s in src_lines], [enc(t, "en", tgt_vocab) for t in tgt_lines])


def pad(seqs: list[list[int]], pad_id: int = PAD_ID) -> torch.Tensor:
    """(B, max len) long tensor, right-padded with <pad> (pad_id: the model config's)."""
    n = max(len(s) for s in seqs)
    out = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def bucket_batches(src_ids, tgt_ids, batch_size: int, seed: int | None = None) -> list[list[int]]:
    """Indices grouped into batches of similar length (little padding).

    With a seed: lengths get a little noise so batches differ per epoch, and batch order is
    shuffled. Without: sorted, deterministic (evaluation).
    """
    rng = random.Random(seed)
    noise = (lambda: rng.random()) if seed is not None else (lambda: 0.0)
    order = sorted(range(len(src_ids)), key=lambda i: (len(src_ids[i]) + noise() * 3, len(tgt_ids[i])))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if seed is not None:
        rng.shuffle(batches)
    return batches
