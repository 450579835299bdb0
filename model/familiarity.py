"""Know what the model knows: how far a sentence is from the 29,000 photo descriptions the model learned from.

    python -m model.familiarity [--checkpoint DIR] [--data-dir DIR] [--corpus FILE]   # the indexes (once)

The model learned German from Multi30k's captions of photos (a man rides a bike, two dogs play in the snow).
A sentence like none of them ("Ich habe heute keine Zeit.") comes back as nonsense, and its maps show a model out
of its depth. Five measures say how far a sentence is from what the model saw (docs/contract.md, "Familiarity"):

- unknown_share: the share of the source's words (tokens with a letter or digit) that are `<unk>` to the model;
- mean_logprob: the translation's mean log-probability per step (`<eos>` included), and its percentile among
  the validation sentences' own;
- language: whether the words look German at all: the most frequent words of each training side (the heads of
  the two vocabularies, which are sorted by frequency) counted in the sentence, German against English;
- nearest_distance: 1 - cosine between the sentence's encoder state (the last encoder layer's output, mean over
  its positions) and the nearest training source's, from an index of every training source shipped beside the
  checkpoint (`training_index.npz`: unit rows on their 64 principal components, int8: 1.9 MB for 29,000, 1.5 MB
  compressed);
- length: the positions the source takes (<sos> and <eos> included) against the training sources' lengths. The
  three measures above say little about a sentence far longer than the photo descriptions: the model can be sure of
  each word and still invent an ending.

unknown_share, mean_logprob and nearest_distance are combined into one score (each measure's tail among the
validation sentences), compared with its distribution over the validation and test2016 sentences (`familiarity.json`
beside the checkpoint, made by this command): above the least score that keeps 95% of each set at or below it, the
sentence is unusual; above the one for 99.5%, unfamiliar. A sentence longer than 99.9% of the training sources
(their lengths are in familiarity.json too) is unusual whatever its score; one that looks English, or not German at
all, is unfamiliar. The training sentences are read from assets/multi30k/ (a copy of the data set's training split,
so that the app needs no data folder).

A model trained on another corpus (a converted Marian model: its makers' corpus is not shipped) is compared with a
parallel corpus one has instead (`--corpus FILE`, a pair a line: source, a tab, target; model/evidence.py
read_corpus): its last CALIBRATION lines (at most a tenth) set the thresholds, the others make the index, and the
corpus is kept beside the checkpoint for the neighbours it names. The language measure needs word vocabularies
sorted by frequency: a model of pieces is not measured by it.
"""

import itertools
import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import files
from .data import pad
from .errors import InputError
from .i18n import _, ngettext
from .evidence import keep_corpus, principal_components, projected, quantise, read_corpus, texts_of, unit
from .evidence import build as build_steps
from .vocab import SPECIALS

ROOT = Path(__file__).resolve().parents[1]
INDEX_FILE = "training_index.npz"
THRESHOLDS_FILE = "familiarity.json"
UNUSUAL, UNFAMILIAR = 0.95, 0.995  # shares of each calibration set (validation, test2016) a score threshold keeps
LONGER = 0.999  # quantile of the training sources' lengths: a sentence longer than it is unusual (docs/contract.md)
VERDICTS = ("familiar", "unusual", "unfamiliar")
FREQUENT = 100  # most frequent words of each vocabulary that count as its language's marks
CALIBRATION = 1000  # a corpus's last lines held out of its index to set the thresholds (at most a tenth of it)
NOT_MEASURED = "not measured"  # the language of a model of pieces (its vocabulary is not sorted by frequency)
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
        memory = translator.model.encode(src)[0]
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
    language: str  # German, English, not German, or not measured (a model of pieces)
    language_counts: dict
    nearest_distance: float
    distance_percentile: float  # % of validation sentences nearer to their nearest training sentence
    length: int  # positions the source takes, <sos> and <eos> included
    length_percentile: float  # % of training sources shorter
    score: float  # Fisher's combination of the three measures' tails (the verdict's thresholds are on it)
    neighbours: list = field(default_factory=list)  # Neighbours, nearest first

    def to_json(self) -> dict:
        d = dict(vars(self))
        d["neighbours"] = [vars(n) for n in self.neighbours]
        return d


class Index:
    """The training sources' encoder states and the thresholds of one checkpoint (files beside it); `corpus`: the
    file name of the corpus they were built from (None: Multi30k's training split)."""

    def __init__(self, folder):
        folder = Path(folder)
        self.folder = folder
        with np.load(folder / INDEX_FILE) as f:
            self.mean, self.basis = f["mean"], f["basis"]  # the principal components the rows are stored in
            self.vectors = unit(f["vectors"])  # (N, DIMS)
        self.thresholds = json.loads((folder / THRESHOLDS_FILE).read_text())
        if "length" not in self.thresholds:
            raise InputError(f"{folder / THRESHOLDS_FILE} has no training lengths (made before the length measure): "
                             f"python -m model.familiarity --checkpoint {folder}")
        self.lengths = {int(n): c for n, c in self.thresholds["length"]["counts"].items()}  # JSON keys are text
        self.corpus = self.thresholds.get("corpus")

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
        """The sentences the index points into, source and target, one list each: the training split, or the
        corpus kept beside the checkpoint."""
        return texts_of(self.folder)

    def nearest(self, vector: np.ndarray, k: int = 3) -> list[Neighbour]:
        """The k training sentences whose encoder state (a sentence_vectors row) is nearest to `vector` by cosine in
        the principal components, nearest first."""
        cos = self.vectors @ torch.from_numpy(projected(vector[None], self.mean, self.basis)[0].astype(np.float32))
        top = torch.topk(cos, k)
        texts = self.texts()
        return [Neighbour(int(i), texts["de"][i], texts["en"][i], distance(c))
                for c, i in zip(top.values, top.indices)]


def mean_logprob(result) -> float:
    return float(np.mean([np.log(max(s.prob, 1e-12)) for s in result.steps]))


def unknown_words(result) -> list:
    """The source's word tokens that are `<unk>` to the model."""
    return [tok for tok, u in zip(result.src_tokens, result.src_unknown) if u and is_word(tok)]


def distance(cosine: float) -> float:
    """1 - cosine, at least 0, to 4 decimals: the nearest distance as the verdict reads it and the tool stores it."""
    return round(max(0.0, 1 - float(cosine)), 4)


def tail(measure: str, value: float, reference) -> float:
    """The share of the validation sentences at least as far from the training data as `value` on this measure
    (ties count: a sentence with no unknown word has tail 1); at least 1/(N+1), so that its log is finite."""
    ref, sign = np.asarray(reference), MEASURES[measure]
    return max(float(np.mean(ref * sign >= value * sign - 1e-12)), 1 / (len(ref) + 1))


def score(tails: dict) -> float:
    """Fisher's combination of the measures' tails, -2 sum(ln p): large when several are in their tails at once (a
    sentence slightly odd on every measure adds up, as no single threshold would see)."""
    return float(-2 * sum(np.log(p) for p in tails.values()))


def thresholds_from(values: dict, calibration: list | None = None) -> dict:
    """The validation values of each measure (for the tails, as stored: 5 decimals) and the score's two thresholds:
    the least scores that keep at least UNUSUAL and UNFAMILIAR of each calibration set (a list of such value dicts;
    default: the validation sentences themselves) at or below them."""
    stored = {m: [round(float(v), 5) for v in values[m]] for m in MEASURES}
    scores = [[score({m: tail(m, one[m][i], stored[m]) for m in MEASURES}) for i in range(len(one["mean_logprob"]))]
              for one in calibration or [values]]
    return {"score": {name: max(float(np.quantile(s, q, method="higher")) for s in scores)
                      for name, q in (("unusual", UNUSUAL), ("unfamiliar", UNFAMILIAR))},
            "values": stored}


def source_lengths(translator, sentences) -> dict:
    """{positions: sentences}: the positions each source takes as the model reads it (<sos> and <eos> included)."""
    return dict(sorted(Counter(len(translator.source_ids(s)[1]) for s in sentences).items()))


def length_quantile(counts: dict, q: float) -> int:
    """The fewest positions that at least a share q of the sentences counted in `counts` do not exceed."""
    assert counts and 0 < q <= 1, f"a quantile of no lengths, or of a share {q} outside (0, 1]"
    total, running = sum(counts.values()), 0
    for n in sorted(counts):
        running += counts[n]
        if running >= q * total:
            return n
    return max(counts)  # q * total rounded above the total


def shorter_share(counts: dict, n: int) -> float:
    """The share of the sentences counted in `counts` that take fewer than n positions."""
    return sum(c for length, c in counts.items() if length < n) / sum(counts.values())


def measure(translator, result, index: Index, k: int = 3) -> Familiarity:
    """Every measure of a translated sentence, its verdict and the nearest training sentences."""
    t = index.thresholds
    ws, unknown = words(result.src_tokens), unknown_words(result)
    lang, counts = (language(result.src_tokens, translator.src_vocab, translator.tgt_vocab)
                    if translator.src_vocab.pieces is None else (NOT_MEASURED, {}))
    neighbours = index.nearest(sentence_vectors(translator, [result.source])[0], k)
    values = {"unknown_share": len(unknown) / max(1, len(ws)), "mean_logprob": mean_logprob(result),
              "nearest_distance": neighbours[0].distance}
    tails = {m: tail(m, v, t["values"][m]) for m, v in values.items()}
    total = score(tails)
    length, shorter = len(result.src_tokens), shorter_share(index.lengths, len(result.src_tokens))
    too_long = length > t["length"]["longest_usual"]
    foreign = lang not in ("German", NOT_MEASURED)
    framing = "<sos> and <eos>" if translator.cfg.source_start else translator.src_vocab.eos
    verdict = ("unfamiliar" if total > t["score"]["unfamiliar"] or foreign else
               "unusual" if total > t["score"]["unusual"] or too_long else "familiar")
    reasons = []  # in the language of this run (model/i18n.py): the page caches a measure per language
    if verdict != "familiar":
        if foreign:
            reasons.append(_("it does not look German: it reads like English") if lang == "English" else
                           _("it does not look German: few of its words are German words the model knows"))
        if unknown:
            listed = ", ".join(unknown[:6]) + (", …" if len(unknown) > 6 else "")
            n = len(unknown)
            if translator.src_vocab.pieces is None:  # English says both counts alike; German does not
                said = ngettext("{n} of its {total} words never occurred in training ({words})",
                                "{n} of its {total} words never occurred in training ({words})", n)
            else:
                said = ngettext("{n} of its {total} pieces is not in the model's vocabulary ({words})",
                                "{n} of its {total} pieces are not in the model's vocabulary ({words})", n)
            reasons.append(said.format(n=n, total=len(ws), words=listed))
        if too_long:  # the share rounded down, so that "longer than" stays true
            reasons.append(_("it is longer than {share:g}% of the training sentences: {length} tokens, {framing} "
                             "included, where half of them have {half} or fewer").format(
                share=math.floor(1000 * shorter) / 10, length=length, framing=framing,
                half=length_quantile(index.lengths, 0.5)))
        corpus = dict(corpus=_("held-out sentences of its corpus") if index.corpus else
                      _("held-out photo descriptions"))
        if tails["nearest_distance"] < 0.25:
            reasons.append(_("even the nearest training sentence is further from it than for {share:.0f}% of "
                             "{corpus}").format(share=100 * (1 - tails["nearest_distance"]), **corpus))
        if tails["mean_logprob"] < 0.25:
            reasons.append(_("the model is less sure of its translation than for {share:.0f}% of {corpus}").format(
                share=100 * (1 - tails["mean_logprob"]), **corpus))
    return Familiarity(verdict, reasons, len(ws), unknown, round(values["unknown_share"], 4),
                       round(values["mean_logprob"], 4), round(100 * (1 - tails["mean_logprob"]), 1), lang,
                       counts, neighbours[0].distance, round(100 * (1 - tails["nearest_distance"]), 1),
                       length, round(100 * shorter, 2), round(total, 3), neighbours)


def split_corpus(path) -> tuple[list, list, dict]:
    """A corpus's sources for the index and for the thresholds (its last CALIBRATION lines, at most a tenth), and
    the corpus itself."""
    texts = read_corpus(path)
    n = len(texts["de"])
    held = min(CALIBRATION, n // 10)
    if held < 1:
        raise InputError(f"{path} has {n} pairs: a corpus needs at least 10, a tenth of them to set the thresholds")
    return texts["de"][:n - held], texts["de"][n - held:], texts


def build(translator, folder, data_dir, log=print, corpus=None) -> dict:
    """Write training_index.npz and familiarity.json beside a checkpoint; returns the thresholds written: the
    score's (quantiles over the validation sentences) and the length's (a quantile of the training sources').
    Given a corpus (a file, read_corpus's), of it instead of Multi30k, which it keeps beside the checkpoint."""
    from . import cli

    folder = Path(folder)
    start = time.perf_counter()
    if corpus is None:
        train_de = cli.read_split(data_dir, "train")[0]
        val_de, test_de = cli.read_split(data_dir, "val")[0], cli.read_split(data_dir, "test")[0]
    else:
        train_de, val_de, texts = split_corpus(corpus)
        test_de = []
        keep_corpus(texts, folder)
    vectors = sentence_vectors(translator, train_de)
    mean, basis = principal_components(vectors, centred=False)  # centred, it moved which sentences look near:
    # 31 of the 36 everyday sentences flagged instead of 35 (the cosine of unit rows is about their angle at 0)
    stored = quantise(projected(vectors, mean, basis))
    with files.replacing(folder / INDEX_FILE) as tmp:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, mean=mean, basis=basis, vectors=stored)
    log(f"index: {len(train_de):,} training sources in {time.perf_counter() - start:.0f} s, "
        f"{(folder / INDEX_FILE).stat().st_size / 1e6:.1f} MB")
    in_domain = val_de + test_de  # the calibration sentences: validation, then test2016 (a corpus's held-out part)
    results = translator.translate_batch(in_domain, with_maps=False)
    cos = torch.from_numpy(projected(sentence_vectors(translator, in_domain), mean, basis)) @ unit(stored).T
    measured = {"unknown_share": [len(unknown_words(r)) / max(1, len(words(r.src_tokens))) for r in results],
                "mean_logprob": [mean_logprob(r) for r in results],
                "nearest_distance": [distance(c) for c in cos.max(1).values.tolist()]}  # as `measure` reads them
    val = {m: v[:len(val_de)] for m, v in measured.items()}
    lengths = source_lengths(translator, train_de)
    report = {"about": "Familiarity (model/familiarity.py, docs/contract.md): each measure's values on the "
                       "validation sentences (the tails' reference); the Fisher score's thresholds, the least that "
                       "keep each quantile's share of the validation and of the test2016 sentences at or below; "
                       "the training sources' lengths, and the longest that is not unusual (their LONGER quantile)",
              "validation_sentences": len(val_de), "calibration_sentences": len(in_domain),
              "training_sentences": len(train_de),
              "quantiles": {"unusual": UNUSUAL, "unfamiliar": UNFAMILIAR, "length": LONGER},
              **thresholds_from(val, [val, *([{m: v[len(val_de):] for m, v in measured.items()}] if test_de else [])]),
              "length": {"counts": lengths, "longest_usual": length_quantile(lengths, LONGER)},
              "corpus": corpus and Path(corpus).name}
    report["seconds"] = round(time.perf_counter() - start, 1)
    files.write_text(folder / THRESHOLDS_FILE, files.dumps(report) + "\n")
    log(f"thresholds from {len(in_domain):,} {'held-out' if corpus else 'validation and test2016'} sentences: score "
        f"{report['score']}; a source "
        f"longer than {report['length']['longest_usual']} positions is unusual; {report['seconds']} s")
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
    cli.add_parallel(p)
    args = p.parse_args(argv)
    from .checkpoint import checkpoint_folder
    from .data import default_data_dir

    translator = cli.load_translator(args)
    data_dir = args.data_dir or default_data_dir()
    if args.corpus:
        read_corpus(args.corpus)  # fail now, not after the index
    else:
        cli.read_split(data_dir, "val"), cli.read_split(data_dir, "test")
    build(translator, checkpoint_folder(args.checkpoint), data_dir, corpus=args.corpus)
    build_steps(translator, checkpoint_folder(args.checkpoint), data_dir, corpus=args.corpus)  # the step index
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
