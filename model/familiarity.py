"""Know what the model knows: how far a sentence is from the 29,000 photo descriptions the model learned from.

    python -m model.familiarity [--checkpoint DIR] [--data-dir DIR]   # the index, thresholds and step index (once)

The model learned German from Multi30k's captions of photos (a man rides a bike, two dogs play in the snow).
A sentence like none of them ("Ich habe heute keine Zeit.") comes back as nonsense, and its maps show a model out
of its depth. Four measures say how far a sentence is from what the model saw (docs/contract.md, "Familiarity"):

- unknown_share: the share of the source's words (tokens with a letter or digit) that are `<unk>` to the model;
- mean_logprob: the translation's mean log-probability per step (`<eos>` included), and its percentile among
  the validation sentences' own;
- language: whether the words look German at all: the most frequent words of each training side (the heads of
  the two vocabularies, which are sorted by frequency) counted in the sentence, German against English;
- nearest_distance: 1 - cosine between the sentence's encoder state (the last encoder layer's output, mean over
  its positions) and the nearest training source's, from an index of every training source shipped beside the
  checkpoint (`training_index.npz`: unit rows on their 64 principal components, int8: 1.9 MB for 29,000, 1.5 MB
  compressed).

Each measure is compared with its own distribution on the validation set (`familiarity.json` beside the
checkpoint, made by this command): beyond the value that only 2% of validation sentences reach, the sentence is
unusual on that measure; beyond the 0.2% value, unfamiliar. The verdict is the worst of them; a sentence that
looks English, or not German at all, is unfamiliar. The training sentences are read from assets/multi30k/ (a copy
of the data set's training split, so that the app needs no data folder).
"""

import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import files
from .data import pad
from .errors import InputError
from .evidence import principal_components, projected, quantise, training_texts, unit
from .evidence import build as build_steps
from .vocab import SPECIALS

ROOT = Path(__file__).resolve().parents[1]
INDEX_FILE = "training_index.npz"
THRESHOLDS_FILE = "familiarity.json"
UNUSUAL, UNFAMILIAR = 0.95, 0.995  # quantiles of the validation scores: beyond them, unusual and unfamiliar
VERDICTS = ("familiar", "unusual", "unfamiliar")
FREQUENT = 100  # most frequent words of each vocabulary that count as its language's marks
# The direction in which each measure moves away from the training data: +1 larger is stranger, -1 smaller is.
MEASURES = {"unknown_share": +1, "mean_logprob": -1, "nearest_distance": +1}


def is_word(token: str) -> bool:
    """A word has a letter or a digit (punctuation and specials are not words)."""
    return token not in SPECIALS and any(c.isalnum() for c in token)


def words(tokens) -> list[str]:
    """The tokens that are words."""
    return [t for t in tokens if is_word(t)]


def marks(vocab) -> set:
    """A language's marks: its FREQUENT most frequent word tokens (a vocabulary lists tokens by frequency). Read
    from the top of the list only: the whole vocabulary's words took 3 ms a call, four calls an Enter."""
    specials = set(vocab.specials.values())  # another family's (<s>, <blank>, ...) too
    return set(itertools.islice((t for t in vocab.itos if is_word(t) and t not in specials), FREQUENT))


def language(tokens, src_vocab, tgt_vocab) -> tuple[str, dict]:
    """'German', 'English' or 'not German', and the counts behind it: the sentence's words that are marks of
    German only or of English only (words both share, such as "in", count for neither)."""
    de, en = marks(src_vocab), marks(tgt_vocab)
    ws = [w.lower() for w in words(tokens)]
    counts = {"words": len(ws), "german_marks": sum(w in de - en for w in ws),
              "english_marks": sum(w in en - de for w in ws),
              "german_known": sum(w in src_vocab.stoi for w in ws)}
    if counts["english_marks"] > counts["german_marks"]:
        return "English", counts
    if ws and counts["german_marks"] == 0 and counts["german_known"] * 2 < len(ws):
        return "not German", counts  # no common German word, and most words unknown: another language
    return "German", counts


@torch.no_grad()
def sentence_vectors(translator, sentences: list[str], batch_size: int = 128) -> np.ndarray:
    """(N, D) float32 unit vectors: each sentence's last encoder layer, mean over its positions (<sos> and <eos>
    included, padding not)."""
    ids = [translator.source_ids(s)[1] for s in sentences]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.zeros((len(ids), translator.cfg.d_model), np.float32)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        src = pad([ids[i] for i in chunk], translator.cfg.pad_id).to(translator.device)
        memory, _ = translator.model.encode(src)
        keep = (src != translator.cfg.pad_id).unsqueeze(-1).to(memory.dtype)
        mean = (memory * keep).sum(1) / keep.sum(1)
        out[chunk] = torch.nn.functional.normalize(mean.float(), dim=-1).cpu().numpy()
    return out


@dataclass(frozen=True)
class Neighbour:
    line: int  # 0-based line of the training split
    de: str
    en: str
    distance: float  # 1 - cosine of the encoder states


@dataclass(frozen=True)
class Familiarity:
    verdict: str  # familiar, unusual or unfamiliar
    reasons: list  # plain sentences: what in this sentence is unlike the training data (empty when familiar)
    words: int
    unknown_words: list
    unknown_share: float
    mean_logprob: float
    logprob_percentile: float  # % of validation sentences whose translation the model was surer of
    language: str  # German, English or not German
    language_counts: dict
    nearest_distance: float
    distance_percentile: float  # % of validation sentences nearer to their nearest training sentence
    score: float  # Fisher's combination of the three measures' tails (the verdict's thresholds are on it)
    neighbours: list = field(default_factory=list)  # Neighbours, nearest first

    def to_json(self) -> dict:
        d = dict(vars(self))
        d["neighbours"] = [vars(n) for n in self.neighbours]
        return d


class Index:
    """The training sources' encoder states and the thresholds of one checkpoint (files beside it)."""

    def __init__(self, folder):
        folder = Path(folder)
        with np.load(folder / INDEX_FILE) as f:
            self.mean, self.basis = f["mean"], f["basis"]  # the principal components the rows are stored in
            self.vectors = unit(f["vectors"])  # (N, DIMS)
        self.thresholds = json.loads((folder / THRESHOLDS_FILE).read_text())

    @staticmethod
    def exists(folder) -> bool:
        return all((Path(folder) / f).is_file() for f in (INDEX_FILE, THRESHOLDS_FILE))

    @classmethod
    def of(cls, checkpoint) -> "Index":
        """The index beside a checkpoint (None: the shipped one); InputError saying how to build a missing one."""
        from .checkpoint import checkpoint_folder

        folder = checkpoint_folder(checkpoint)
        if not cls.exists(folder):
            raise InputError(f"{folder} has no {INDEX_FILE} and {THRESHOLDS_FILE}: python -m model.familiarity "
                             f"--checkpoint {folder}")
        return cls(folder)

    def texts(self) -> dict:
        """The training split, German and English, one list each."""
        return training_texts()

    def nearest(self, vector: np.ndarray, k: int = 3) -> list[Neighbour]:
        """The k training sentences whose encoder state (a sentence_vectors row) is nearest to `vector` by cosine in
        the principal components, nearest first."""
        cos = self.vectors @ torch.from_numpy(projected(vector[None], self.mean, self.basis)[0].astype(np.float32))
        top = torch.topk(cos, k)
        texts = self.texts()
        return [Neighbour(int(i), texts["de"][i], texts["en"][i], round(max(0.0, 1 - float(c)), 4))
                for c, i in zip(top.values, top.indices)]


def mean_logprob(result) -> float:
    return float(np.mean([np.log(max(s.prob, 1e-12)) for s in result.steps]))


def tail(measure: str, value: float, reference) -> float:
    """The share of the validation sentences at least as far from the training data as `value` on this measure
    (ties count: a sentence with no unknown word has tail 1); at least 1/(N+1), so that its log is finite."""
    ref, sign = np.asarray(reference), MEASURES[measure]
    return max(float(np.mean(ref * sign >= value * sign - 1e-12)), 1 / (len(ref) + 1))


def score(tails: dict) -> float:
    """Fisher's combination of the measures' tails, -2 sum(ln p): large when several are in their tails at once (a
    sentence slightly odd on every measure adds up, as no single threshold would see)."""
    return float(-2 * sum(np.log(p) for p in tails.values()))


def thresholds_from(values: dict) -> dict:
    """The validation values of each measure (for the tails) and the score's two thresholds: its UNUSUAL and
    UNFAMILIAR quantiles over the validation sentences themselves."""
    scores = [score({m: tail(m, values[m][i], values[m]) for m in MEASURES}) for i in range(len(values["mean_logprob"]))]
    return {"score": {"unusual": float(np.quantile(scores, UNUSUAL)),
                      "unfamiliar": float(np.quantile(scores, UNFAMILIAR))},
            "values": {m: [round(float(v), 5) for v in values[m]] for m in MEASURES}}


def measure(translator, result, index: Index, k: int = 3) -> Familiarity:
    """Every measure of a translated sentence, its verdict and the nearest training sentences."""
    t = index.thresholds
    ws = words(result.src_tokens)
    unknown = [tok for tok, u in zip(result.src_tokens, result.src_unknown) if u and tok in ws]
    lang, counts = language(result.src_tokens, translator.src_vocab, translator.tgt_vocab)
    neighbours = index.nearest(sentence_vectors(translator, [result.source])[0], k)
    values = {"unknown_share": len(unknown) / max(1, len(ws)), "mean_logprob": mean_logprob(result),
              "nearest_distance": neighbours[0].distance}
    tails = {m: tail(m, v, t["values"][m]) for m, v in values.items()}
    total = score(tails)
    verdict = ("unfamiliar" if total > t["score"]["unfamiliar"] or lang != "German" else
               "unusual" if total > t["score"]["unusual"] else "familiar")
    reasons = []
    if verdict != "familiar":
        if lang != "German":
            reasons.append("it does not look German: " + ("it reads like English" if lang == "English" else
                                                          "few of its words are German words the model knows"))
        if unknown:
            reasons.append(f"{len(unknown)} of its {len(ws)} words never occurred in training "
                           f"({', '.join(unknown[:6])}{', …' if len(unknown) > 6 else ''})")
        if tails["nearest_distance"] < 0.25:
            reasons.append(f"even the nearest training sentence is further from it than for "
                           f"{100 * (1 - tails['nearest_distance']):.0f}% of held-out photo descriptions")
        if tails["mean_logprob"] < 0.25:
            reasons.append(f"the model is less sure of its translation than for "
                           f"{100 * (1 - tails['mean_logprob']):.0f}% of held-out photo descriptions")
    return Familiarity(verdict, reasons, len(ws), unknown, round(values["unknown_share"], 4),
                       round(values["mean_logprob"], 4), round(100 * (1 - tails["mean_logprob"]), 1), lang,
                       counts, neighbours[0].distance, round(100 * (1 - tails["nearest_distance"]), 1),
                       round(total, 3), neighbours)


def build(translator, folder, data_dir, log=print) -> dict:
    """Write training_index.npz and familiarity.json beside a checkpoint; returns the thresholds written."""
    from . import cli

    folder = Path(folder)
    start = time.perf_counter()
    train_de, _ = cli.read_split(data_dir, "train")
    vectors = sentence_vectors(translator, train_de)
    mean, basis = principal_components(vectors, centred=False)  # centred, it moved which sentences look near:
    # 31 of the 36 everyday sentences flagged instead of 35 (the cosine of unit rows is about their angle at 0)
    stored = quantise(projected(vectors, mean, basis))
    with files.replacing(folder / INDEX_FILE) as tmp:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, mean=mean, basis=basis, vectors=stored)
    log(f"index: {len(train_de):,} training sources in {time.perf_counter() - start:.0f} s, "
        f"{(folder / INDEX_FILE).stat().st_size / 1e6:.1f} MB")
    val_de, _ = cli.read_split(data_dir, "val")
    results = translator.translate_batch(val_de, with_maps=False)
    cos = torch.from_numpy(projected(sentence_vectors(translator, val_de), mean, basis)) @ unit(stored).T
    values = {"unknown_share": [sum(r.src_unknown) / max(1, len(words(r.src_tokens))) for r in results],
              "mean_logprob": [mean_logprob(r) for r in results],
              "nearest_distance": (1 - cos.max(1).values).clamp(min=0).tolist()}
    report = {"about": "Familiarity (model/familiarity.py, docs/contract.md): each measure's values on the "
                       "validation sentences, and the Fisher score's quantiles there as thresholds",
              "validation_sentences": len(val_de), "training_sentences": len(train_de),
              "quantiles": {"unusual": UNUSUAL, "unfamiliar": UNFAMILIAR}, **thresholds_from(values)}
    report["seconds"] = round(time.perf_counter() - start, 1)
    files.write_text(folder / THRESHOLDS_FILE, files.dumps(report) + "\n")
    log(f"thresholds from {len(val_de):,} validation sentences: score {report['score']}; {report['seconds']} s")
    return report


def main(argv=None):
    """`python -m model.familiarity`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    cli.add_checkpoint(p)
    cli.add_device(p)
    p.add_argument("--data-dir", default=None, help="the Multi30k folder (default: $MULTI30K_DIR, else ../shared)")
    args = p.parse_args(argv)
    from .checkpoint import checkpoint_folder
    from .data import default_data_dir

    translator = cli.load_translator(args)
    data_dir = args.data_dir or default_data_dir()
    cli.read_split(data_dir, "val")  # fails now, not after the index
    build(translator, checkpoint_folder(args.checkpoint), data_dir)
    build_steps(translator, checkpoint_folder(args.checkpoint), data_dir)  # the training evidence's step index
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
