"""Training evidence: where the model met a German word in training, and which training steps its decoder state
resembles at a step of the decoding.

    python -m model.familiarity [--checkpoint DIR] [--data-dir DIR]  # builds the step index too (once)

A word: how many training sentences contain it and how often, the English words a statistical aligner linked it
to there with their counts, and a few training pairs that contain it (assets/alignments/train.lexicon.json.gz,
made by `python -m model.silver --lexicon`, from eflomal's links of the whole training set; docs/contract.md).

A step: the decoder's last-layer state while it chooses the step's word (the input of the output layer), against
the same state at every step of 5,000 training pairs, teacher-forced on their references (step_index.npz beside
each checkpoint: the states projected on their 64 principal components and stored as int8 rows, with the line
and the step of each). The nearest by cosine are the training moments the model was in the most similar state.
"""

import functools
import gzip
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import files
from .data import pad
from .vocab import tokenize

ROOT = Path(__file__).resolve().parents[1]
LEXICON = ROOT / "assets/alignments/train.lexicon.json.gz"
TRAIN_TEXTS = {"de": ROOT / "assets/multi30k/train.de.gz", "en": ROOT / "assets/multi30k/train.en.gz"}  # the split
STEP_FILE = "step_index.npz"
STEP_SENTENCES = 5_000  # training lines 0, 5, 10, ..., 24,995
DIMS = 64  # principal components kept of the decoder's D-dimensional state
SHOWN_PAIRS = 5  # training pairs kept per word


def quantise(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors as int8 (x 127, rounded): a quarter of float32's bytes; cosines change by about 1e-3."""
    return np.clip(np.rint(vectors * 127), -127, 127).astype(np.int8)


@functools.cache
def training_texts() -> dict:
    """The training split, {"de": [...], "en": [...]}, read once for every index and view that shows it."""
    return {lang: gzip.decompress(p.read_bytes()).decode("utf-8").splitlines() for lang, p in TRAIN_TEXTS.items()}


def principal_components(rows: np.ndarray, dims: int = None, centred: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The mean (D,) and the first `dims` principal directions (D, dims) of rows (N, D), float32; not centred:
    a zero mean and the directions of the rows as they are (their cosines kept as far as dims allow)."""
    mean = rows.mean(0) if centred else np.zeros(rows.shape[1], rows.dtype)
    _, _, vt = np.linalg.svd(rows - mean, full_matrices=False)
    return mean.astype(np.float32), vt[:dims or DIMS].T.astype(np.float32)


def projected(rows: np.ndarray, mean: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """(N, D) -> (N, dims) unit rows in the principal components: what the indexes store and compare."""
    z = (rows - mean) @ basis
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def unit(stored: np.ndarray) -> torch.Tensor:
    """quantise's rows back as float32 unit rows (their norms rescaled: the rounding moves only their angle)."""
    v = torch.from_numpy(stored.astype(np.float32))
    return v / v.norm(dim=1, keepdim=True)


@dataclass(frozen=True)
class WordEvidence:
    word: str  # the token as the model reads it (lowercased)
    sentences: int  # training sentences that contain it
    occurrences: int  # times it occurs in them
    aligned: list  # [(English word, links), ...] most linked first (at most 8)
    pairs: list  # [(line, German, English), ...] training pairs that contain it (at most SHOWN_PAIRS)
    known: bool  # in the model's vocabulary (else it reads <unk>)


@dataclass(frozen=True)
class StepNeighbour:
    line: int  # 0-based line of the training split
    step: int  # 0-based step of that pair's reference
    prefix: list  # the English written before that step
    word: str  # the reference's word at that step
    de: str
    distance: float  # 1 - cosine in the principal components


class Lexicon:
    """The training side's words, read once: {token: [sentences, occurrences, [[en, links], ...], [lines]]}."""

    def __init__(self, path=LEXICON):
        self.table = json.loads(gzip.decompress(Path(path).read_bytes()))

    def texts(self) -> dict:
        return training_texts()

    def word(self, token: str, src_vocab) -> WordEvidence:
        sentences, occurrences, aligned, lines = self.table.get(token, [0, 0, [], []])
        texts = self.texts()
        return WordEvidence(token, sentences, occurrences, [tuple(a) for a in aligned],
                            [(i, texts["de"][i], texts["en"][i]) for i in lines], token in src_vocab.stoi)


def lexicon_table(de_tokens: list, en_tokens: list, links: list, keep_aligned: int = 8) -> dict:
    """The lexical table of a tokenized, aligned corpus (lists per pair): per German token, the sentences and
    occurrences, its `keep_aligned` most linked English tokens with their link counts, and its first lines."""
    table: dict = {}
    for line, (de, en, pair) in enumerate(zip(de_tokens, en_tokens, links, strict=True)):
        for token in set(de):
            entry = table.setdefault(token, [0, 0, {}, []])
            entry[0] += 1
            if len(entry[3]) < SHOWN_PAIRS:
                entry[3].append(line)
        for token in de:
            table[token][1] += 1
        for i, j in pair:
            counts = table[de[i]][2]
            counts[en[j]] = counts.get(en[j], 0) + 1
    return {t: [s, o, sorted(c.items(), key=lambda x: (-x[1], x[0]))[:keep_aligned], lines]
            for t, (s, o, c, lines) in sorted(table.items())}


def step_lines(n_train: int) -> list[int]:
    return list(range(0, n_train, n_train // STEP_SENTENCES))[:STEP_SENTENCES]


@torch.no_grad()
def decoder_states(translator, src_ids: list, tgt_ids: list, batch_size: int = 64) -> list[np.ndarray]:
    """Per pair, (T, D): the last decoder layer's output at each decoder input (<sos> and the reference but its
    last token), teacher-forced: the state in which the model chooses each next word."""
    model, seen, me = translator.model, [], threading.get_ident()
    # this thread's passes only: the model is shared, and another session's pass meanwhile runs the same hook
    hook = model.generator.register_forward_hook(
        lambda m, inp, out: seen.append(inp[0].float().cpu()) if threading.get_ident() == me else None)
    out = [None] * len(src_ids)
    try:
        for start in range(0, len(src_ids), batch_size):
            chunk = range(start, min(start + batch_size, len(src_ids)))
            src = pad([src_ids[i] for i in chunk], model.cfg.pad_id).to(translator.device)
            tgt = pad([tgt_ids[i] for i in chunk], model.cfg.pad_id).to(translator.device)
            seen.clear()
            model(src, tgt)
            for b, i in enumerate(chunk):
                out[i] = seen[0][b, :len(tgt_ids[i])].numpy()
    finally:
        hook.remove()
    return out


class StepIndex:
    def __init__(self, folder):
        with np.load(Path(folder) / STEP_FILE) as f:
            self.mean, self.basis = f["mean"], f["basis"]
            self.vectors = unit(f["vectors"])
            self.line, self.step = f["line"], f["step"]
        self._tokens = None

    @staticmethod
    def exists(folder) -> bool:
        return (Path(folder) / STEP_FILE).is_file()

    def project(self, states: np.ndarray) -> np.ndarray:
        """(N, D) -> (N, DIMS) unit rows in the principal components."""
        return projected(states, self.mean, self.basis)

    def nearest(self, state: np.ndarray, texts: dict, k: int = 5) -> list[StepNeighbour]:
        cos = self.vectors @ torch.from_numpy(self.project(state[None]).astype(np.float32)[0])
        top = torch.topk(cos, k)
        found = []
        for c, i in zip(top.values.tolist(), top.indices.tolist()):
            line, step = int(self.line[i]), int(self.step[i])
            en = tokenize(texts["en"][line], "en")
            found.append(StepNeighbour(line, step, en[:step], en[step] if step < len(en) else "<eos>",
                                       texts["de"][line], round(max(0.0, 1 - c), 4)))
        return found


def step_state(translator, result, t: int) -> np.ndarray:
    """The decoder's state at step t of a translation (teacher-forced on its own output)."""
    forced = translator.force(result.source, [s.token for s in result.steps])
    return decoder_states(translator, [forced.src_ids], [forced.tgt_ids])[0][t]


def build(translator, folder, data_dir, log=print) -> dict:
    """Write step_index.npz beside a checkpoint."""
    from . import cli

    start = time.perf_counter()
    de, en = cli.read_split(data_dir, "train")
    lines = step_lines(len(de))
    keep = translator.cfg.max_positions - 2
    sv, tv = translator.src_vocab, translator.tgt_vocab
    src = [[sv.sos_id, *sv.encode(sv.tokenize(de[i], "de")[:keep]), sv.eos_id] for i in lines]
    tgt = [[tv.sos_id, *tv.encode(tv.tokenize(en[i], "en")[:keep - 1])] for i in lines]
    states = decoder_states(translator, src, tgt)
    flat = np.concatenate(states)
    mean, basis = principal_components(flat)
    z = projected(flat, mean, basis)
    rows = np.concatenate([np.full(len(s), line) for line, s in zip(lines, states)]).astype(np.int32)
    steps = np.concatenate([np.arange(len(s)) for s in states]).astype(np.int16)
    with files.replacing(Path(folder) / STEP_FILE) as tmp:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, mean=mean, basis=basis, line=rows, step=steps, vectors=quantise(z))
    report = {"pairs": len(lines), "states": len(flat), "dims": DIMS,
              "bytes": (Path(folder) / STEP_FILE).stat().st_size, "seconds": round(time.perf_counter() - start, 1)}
    log(files.dumps(report))
    return report
