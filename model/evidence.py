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

A model trained on another corpus (a converted Marian model: its makers' corpus is not shipped) gets both from a
parallel corpus one has (`python -m model.tables --corpus FILE`, a pair a line: source, a tab, target): the corpus
is kept beside the checkpoint (corpus.tsv.gz), its lexicon counts the model's own tokens with no aligner's links
(lexicon.json.gz), and the step index is of its pairs.
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
from .errors import InputError
from .vocab import tokenize

ROOT = Path(__file__).resolve().parents[1]
LEXICON = ROOT / "assets/alignments/train.lexicon.json.gz"
TRAIN_TEXTS = {"de": ROOT / "assets/multi30k/train.de.gz", "en": ROOT / "assets/multi30k/train.en.gz"}  # the split
STEP_FILE = "step_index.npz"
CORPUS_FILE = "corpus.tsv.gz"  # the corpus the indexes beside a checkpoint were built from (model.tables --corpus)
CORPUS_LEXICON = "lexicon.json.gz"  # its lexicon, beside the checkpoint
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


def read_corpus(path) -> dict:
    """A parallel corpus, a pair a line (source, a tab, target; plain or .gz), as {"de": sources, "en": targets}
    (the keys training_texts has: the source side, the target side); InputError for a line that is not a pair."""
    from .data import read_lines

    out = {"de": [], "en": []}
    for n, line in enumerate(read_lines(path), 1):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise InputError(f"{path}:{n}: a corpus line is a source sentence, a tab and its translation")
        out["de"].append(parts[0].strip())
        out["en"].append(parts[1].strip())
    if not out["de"]:
        raise InputError(f"{path} holds no pair")
    return out


def keep_corpus(texts: dict, folder) -> None:
    """The corpus written beside a checkpoint, whole or not at all (CORPUS_FILE: its indexes' lines point into it)."""
    text = "".join(f"{s}\t{t}\n" for s, t in zip(texts["de"], texts["en"]))
    with files.replacing(Path(folder) / CORPUS_FILE) as tmp:
        with gzip.open(tmp, "wt", encoding="utf-8") as f:
            f.write(text)
    texts_of.cache_clear()


@functools.lru_cache(maxsize=4)
def texts_of(folder) -> dict:
    """The sentences the indexes beside a checkpoint point into: its corpus (CORPUS_FILE) where it has one, else the
    training split (training_texts). Read once per folder."""
    path = Path(folder) / CORPUS_FILE
    return read_corpus(path) if path.is_file() else training_texts()


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
    """The training side's words, read once: {token: [sentences, occurrences, [[en, links], ...], [lines]]}; one
    built from a corpus beside a checkpoint (CORPUS_LEXICON) points into that corpus and has no links."""

    def __init__(self, path=LEXICON):
        self.path = Path(path)
        self.table = json.loads(gzip.decompress(self.path.read_bytes()))

    def texts(self) -> dict:
        return texts_of(self.path.parent) if self.path.name == CORPUS_LEXICON else training_texts()

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


def write_lexicon(translator, sources: list, path: Path) -> None:
    """The lexicon of a corpus's sources in the model's own tokens (its pieces, or its words), without links: no
    aligner has read that corpus (the shipped one's links are eflomal's, python -m model.silver --lexicon)."""
    tokens = [translator.src_vocab.tokenize(s, "de") for s in sources]
    table = lexicon_table(tokens, [[] for _ in tokens], [[] for _ in tokens])
    with files.replacing(path) as tmp:
        Path(tmp).write_bytes(gzip.compress(json.dumps(table, ensure_ascii=False).encode("utf-8"), mtime=0))


def step_lines(n_train: int) -> list[int]:
    return list(range(0, n_train, max(1, n_train // STEP_SENTENCES)))[:STEP_SENTENCES]


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

    def nearest(self, state: np.ndarray, texts: dict, k: int = 5, split=None) -> list[StepNeighbour]:
        """The k training steps nearest to `state`; split(text): a reference's tokens as the model reads them
        (default: spaCy's, lower-cased; a model of pieces: its Vocab's tokenize)."""
        cos = self.vectors @ torch.from_numpy(self.project(state[None]).astype(np.float32)[0])
        top = torch.topk(cos, min(k, len(cos)))
        found = []
        for c, i in zip(top.values.tolist(), top.indices.tolist()):
            line, step = int(self.line[i]), int(self.step[i])
            en = split(texts["en"][line]) if split else tokenize(texts["en"][line], "en")
            found.append(StepNeighbour(line, step, en[:step], en[step] if step < len(en) else "<eos>",
                                       texts["de"][line], round(max(0.0, 1 - c), 4)))
        return found


def step_state(translator, result, t: int) -> np.ndarray:
    """The decoder's state at step t of a translation (teacher-forced on its own output)."""
    forced = translator.force(result.source, [s.token for s in result.steps])
    return decoder_states(translator, [forced.src_ids], [forced.tgt_ids])[0][t]


def build(translator, folder, data_dir, log=print, corpus=None) -> dict:
    """Write step_index.npz beside a checkpoint: of the Multi30k training split in data_dir, or of a corpus (a file,
    read_corpus's), which is kept beside the checkpoint with its lexicon (CORPUS_FILE, CORPUS_LEXICON)."""
    from . import cli

    start = time.perf_counter()
    if corpus is None:
        de, en = cli.read_split(data_dir, "train")
    else:
        texts = read_corpus(corpus)
        keep_corpus(texts, folder)
        de, en = texts["de"], texts["en"]
        write_lexicon(translator, de, Path(folder) / CORPUS_LEXICON)
    lines = step_lines(len(de))
    keep = translator.cfg.max_positions - 2
    tv = translator.tgt_vocab
    src = [translator.source_ids(de[i])[1] for i in lines]  # <sos> first where the model's source has one
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
    report = {"pairs": len(lines), "states": len(flat), "dims": DIMS, "corpus": corpus and Path(corpus).name,
              "bytes": (Path(folder) / STEP_FILE).stat().st_size, "seconds": round(time.perf_counter() - start, 1)}
    log(files.dumps(report))
    return report
