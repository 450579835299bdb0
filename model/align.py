"""Is cross-attention an alignment? Word alignments read off every cross-attention head, each layer's mean of
heads, the norm-based attention and the ALTI+ source contributions, scored by the alignment error rate against
a hand-checked reference (Och & Ney, 2003) and compared with a statistical aligner (the silver alignment).

    python -m model.align --src test_2016_flickr.de.gz --ref test_2016_flickr.en.gz
                          --gold assets/alignments/test2016.gold.jsonl [--silver FILE] [--checkpoint DIR]
                          [--device D] [--out FILE] [--no-progress]

Writes CHECKPOINT/alignment.json (default). The model reads each German sentence and is teacher-forced on its
English reference (the gold links are between the reference's words), so every decoder row belongs to one
reference word. Methods (docs/contract.md "Word alignment"):

- argmax (Garg et al., 2019): English word t aligns to the German word the row that *predicts* t weighs most;
- shift (Shift-Att, Chen et al., 2020): the row that *reads* t as its input, one step later;
- threshold: the argmax row's weights renormalised over the German words, every word with at least THRESHOLD
  (none, one or several links per English word).

`<sos>` and `<eos>` are left out of the German side before the argmax (as fairseq's extract_hard_alignment
does), so every English word gets exactly one link from argmax and shift. Baselines: the monotone diagonal and
the silver alignment (eflomal, model/silver.py).

A model whose tokens are SentencePiece pieces (a converted Marian model) has its maps summed into words before
any rule reads them (`Grouping`, `word_rows`): the links are between the words (spaCy's tokens) of both sides.
"""

import math
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import files
from .errors import InputError
from .methods import ATTRIBUTIONS as METHOD_KEYS
from .methods import METHODS

ROOT = Path(__file__).resolve().parent.parent
GOLD = ROOT / "assets/alignments/test2016.gold.jsonl"
SILVER = ROOT / "assets/alignments/test2016.silver.jsonl"
THRESHOLD = 0.25  # fixed in advance, not tuned on the reference
# The method of the per-head grid `heads.cross` (`heads_by_method` has both): the row that writes a word, the
# reading the page's cross-attention map invites ("this English word came from that German word").
HEAD_METHOD = "argmax"
# Attributions scored as alignments (model/attribute.py; Ding, Xu and Koehn, WMT 2019, found saliency alignments
# better than attention): each English word links to the German word with the largest score for it. Integrated
# gradients is left out: 64 quadrature points for every step of the 101 sentences ran for over 30 minutes on 2
# cores (the page draws it for any one sentence).
ATTRIBUTIONS = {m: METHODS[m].aligned for m in METHOD_KEYS if METHODS[m].aligned}  # model/methods.py
ROUTES = ("argmax", "shift", "threshold")


@dataclass(frozen=True)
class Reference:
    """One hand-checked pair: sure and possible links (German index, English index), S a subset of P; the
    pair's German and English text (the file carries them, so that the page needs no corpus)."""

    line: int
    sure: frozenset
    possible: frozenset
    de: str = ""
    en: str = ""


# reading the references ---------------------------------------------------------------------------------------
def _links(value, where: str) -> frozenset:
    if not isinstance(value, list) or not all(isinstance(x, list) and len(x) == 2 and
                                              all(isinstance(k, int) and k >= 0 for k in x) for x in value):
        raise InputError(f"{where}: links must be a list of [source_index, target_index] pairs of whole numbers")
    return frozenset(map(tuple, value))


def read_gold(path) -> list[Reference]:
    """The hand-checked pairs of a .jsonl file, sorted by line; InputError for anything malformed."""
    from .data import read_lines  # UTF-8, bounded in size, InputError naming the file and line

    refs = []
    for n, raw in enumerate(read_lines(path), 1):
        if not raw.strip():
            continue
        where = f"{path}:{n}"
        obj = files.loads(raw, where)
        if not isinstance(obj, dict) or not isinstance(obj.get("line"), int) or obj["line"] < 0:
            raise InputError(f"{where}: expected {{\"line\": N, \"sure\": [...], \"possible\": [...]}}")
        sure, possible = _links(obj.get("sure"), where), _links(obj.get("possible"), where)
        if not sure <= possible:
            raise InputError(f"{where}: sure links {sorted(sure - possible)} are not among the possible ones")
        de, en = obj.get("de", ""), obj.get("en", "")
        if not isinstance(de, str) or not isinstance(en, str):
            raise InputError(f"{where}: de and en must be text")
        refs.append(Reference(obj["line"], sure, possible, de, en))
    lines = [r.line for r in refs]
    if len(set(lines)) != len(lines):
        raise InputError(f"{path}: a line is annotated twice")
    if not refs:
        raise InputError(f"{path} holds no annotated pair")
    return sorted(refs, key=lambda r: r.line)


def annotated(path=GOLD) -> dict:
    """{German sentence: Reference} of the hand-checked pairs that carry their text (the page's lookup)."""
    return {r.de: r for r in read_gold(path) if r.de}


def read_silver(path) -> dict:
    """{line: links} of the silver alignment (.jsonl of {"line", "links"}); InputError for anything malformed."""
    from .data import read_lines

    out = {}
    for n, raw in enumerate(read_lines(path), 1):
        if raw.strip():
            obj = files.loads(raw, f"{path}:{n}")
            if not isinstance(obj, dict) or not isinstance(obj.get("line"), int):
                raise InputError(f"{path}:{n}: expected {{\"line\": N, \"links\": [...]}}")
            out[obj["line"]] = _links(obj.get("links"), f"{path}:{n}")
    return out


# scoring ------------------------------------------------------------------------------------------------------
def counts(links, sure, possible) -> tuple[int, int, int, int]:
    """(|A|, |S|, |A & S|, |A & P|) of one pair: what AER, precision and recall add up over a corpus."""
    links = set(links)
    return len(links), len(sure), len(links & set(sure)), len(links & set(possible))


def rates(total) -> dict:
    """Och & Ney (2003) over summed counts: precision |A&P|/|A|, recall |A&S|/|S|,
    AER = 1 - (|A&S| + |A&P|) / (|A| + |S|). An empty A has precision 1 (nothing claimed is wrong)."""
    a, s, a_s, a_p = total
    return {"aer": 1 - (a_s + a_p) / (a + s) if a + s else 0.0,
            "precision": a_p / a if a else 1.0, "recall": a_s / s if s else 1.0}


def score(pairs) -> dict:
    """AER, precision and recall of [(links, sure, possible), ...], counted over the whole corpus."""
    return rates(np.sum([counts(*p) for p in pairs], axis=0) if pairs else (0, 0, 0, 0))


# words from pieces --------------------------------------------------------------------------------------------
# A model whose tokens are pieces (Marian's SentencePiece pieces, "▁" starting a word) has maps over pieces, and the
# links are between words. The rule (Zenkel et al., 2019; inseq's subword aggregation; docs/contract.md "Word
# alignment"): a source word's column is the SUM of its pieces' columns (the weight a row gives the word, as one
# key: rows still sum to at most 1), a target word's row the MEAN of its pieces' rows (still a distribution over the
# source); a piece that spans two words counts for each. The words are spaCy's tokens of the text as written.
SPACY_LANGUAGES = ("de", "en")  # the words of another language: spaCy's multi-language tokenizer ("xx")


@dataclass(frozen=True)
class Grouping:
    """Which tokens make each word: per source word its source positions (in the model's source), per target word
    its output positions. None stands for a model whose tokens are the words."""

    src: tuple  # (n_src,) tuples of source positions
    tgt: tuple  # (n_tgt,) tuples of output positions


def words_of(text: str, code: str | None) -> list[str]:
    """The words the links are between: spaCy's tokens of the text as written, by the language's code."""
    from .vocab import tokenize

    return tokenize(text, code if code in SPACY_LANGUAGES else "xx", lower=False)


def _plain(text: str) -> str:
    """A text as pieces and words are matched: NFKC (SentencePiece's normalisation), no whitespace, no "▁"."""
    return "".join(unicodedata.normalize("NFKC", text).replace("\u2581", " ").split())


def piece_groups(pieces: list[str], words: list[str]) -> list[tuple]:
    """Per word, the indices of the pieces that cover any of its characters (whitespace aside); InputError when the
    pieces do not spell the words (an unknown piece, a cut sentence)."""
    ends, at = [], 0
    for w in words:
        at += len(_plain(w))
        ends.append(at)
    spans, at = [], 0
    for p in pieces:
        n = len(_plain(p))
        spans.append((at, at + n))
        at += n
    if at != (ends[-1] if ends else 0):
        raise InputError("the model's pieces do not spell the sentence's words, so they cannot be summed into them")
    starts = [0, *ends[:-1]]
    return [tuple(k for k, (a, b) in enumerate(spans) if a < e and b > s) for s, e in zip(starts, ends)]


def grouping(translator, sentence: str, out_tokens: list, src_words: list, tgt_words: list) -> Grouping | None:
    """Each word's tokens, for a model whose tokens are pieces (None for one whose tokens are the words): the source
    words over the pieces the model reads of `sentence`, the target words over `out_tokens` (its output pieces)."""
    if translator.src_vocab.pieces is None:
        return None
    src_tokens = translator.source_ids(sentence)[0]
    start = int(translator.cfg.source_start)
    src = [tuple(start + k for k in g) for g in piece_groups(src_tokens[start:-1], src_words)]
    return Grouping(tuple(src), tuple(piece_groups(list(out_tokens), tgt_words)))


# links from a map ---------------------------------------------------------------------------------------------
def word_rows(m: np.ndarray, n_src: int, n_tgt: int, route: str, groups: Grouping | None = None) -> np.ndarray:
    """The (n_tgt, n_src) block of a cross map (T, S) between the English words and the German words.

    Rows: row t predicts English word t ("argmax", "threshold"), row t + 1 reads it ("shift"). Columns: the German words,
    <sos> (column 0) and <eos> (column S - 1) left out. With groups (a model of pieces): each word's rows averaged
    and its columns summed, the rows of the pieces that write it, or those that read them (shift).
    """
    first = 1 if route == "shift" else 0
    m = np.asarray(m)
    if groups is None:
        return m[first:first + n_tgt, 1:1 + n_src]
    assert (len(groups.src), len(groups.tgt)) == (n_src, n_tgt), f"groups for {n_src} and {n_tgt} words"
    rows = np.stack([m[[first + j for j in g]].mean(0) for g in groups.tgt])  # (n_tgt, S)
    return np.stack([rows[:, list(g)].sum(-1) for g in groups.src], axis=-1)  # (n_tgt, n_src)


def links_of(rows: np.ndarray, route: str) -> frozenset:
    """Links (German index, English index) from word rows: the argmax of each row, or every weight of at
    least THRESHOLD after renormalising the row over the German words."""
    if route == "threshold":
        norm = rows / np.maximum(rows.sum(-1, keepdims=True), 1e-30)
        return frozenset((int(i), int(t)) for t, i in zip(*np.nonzero(norm >= THRESHOLD)))
    return frozenset((int(i), t) for t, i in enumerate(rows.argmax(-1)))


def diagonal(n_src: int, n_tgt: int) -> frozenset:
    """The monotone diagonal: English word t links to German word floor((t + 1/2) n_src / n_tgt)."""
    return frozenset((min(n_src - 1, math.floor((t + 0.5) * n_src / n_tgt)), t) for t in range(n_tgt))


def method_names(n_layers: int, attention_only: bool = False) -> list[str]:
    names = [f"attention L{l} {r}" for l in range(1, n_layers + 1) for r in ROUTES]
    if attention_only:
        return names
    names += [f"norms L{l} {r}" for l in range(1, n_layers + 1) for r in ("argmax", "shift")]
    return names + ["ALTI+ argmax", "ALTI+ shift", *(f"{ATTRIBUTIONS[m]} argmax" for m in ATTRIBUTIONS)]


def maps_for(translator, sentence: str, en_tokens: list, attention_only: bool = False) -> dict:
    """One teacher-forced pass over the English words (unknown words as <unk>, so any reference works):
    {"attention": (L, H, T, S) cross maps, "norms": (L, H, T, S), "alti": (T, S) source contributions}
    (attention_only: the cross maps alone, for the training replay)."""
    from .attribute import attribute
    from .contributions import contributions, weighted_norms
    from .translator import capture_maps

    if len(en_tokens) > translator.cfg.max_positions - 1:
        raise InputError(f"{len(en_tokens)} English words: the model has {translator.cfg.max_positions} positions")
    vocab = translator.tgt_vocab  # the words as the model reads them (<unk> for unknown ones), <eos> last
    forced = translator.force(sentence, vocab.decode(vocab.encode(en_tokens) + [vocab.eos_id]))
    capture = translator.capture(forced)  # a long source is cut to the model's positions, as everywhere
    attention = capture_maps(capture)["cross"]
    if attention_only:
        return {"attention": attention}
    return {"attention": attention,
            "norms": weighted_norms(capture, translator.model)["cross"],
            "alti": contributions(capture, translator.model)["source"],
            **{m: attribute(translator, forced, m).source for m in ATTRIBUTIONS}}


def pair_links(maps: dict, n_src: int, n_tgt: int, groups: Grouping | None = None) -> tuple[dict, dict]:
    """({method: links}, {route: (L, H) array of per-head links}) of one pair's maps (methods of the maps given);
    groups: a model of pieces' words (word_rows)."""
    att, norms = maps["attention"], maps.get("norms")

    def links(m, r):
        return links_of(word_rows(m, n_src, n_tgt, r, groups), r)

    methods = {}
    for l in range(att.shape[0]):
        for r in ROUTES:
            methods[f"attention L{l + 1} {r}"] = links(att[l].mean(0), r)
        for r in ("argmax", "shift") if norms is not None else ():
            methods[f"norms L{l + 1} {r}"] = links(norms[l].mean(0), r)
    for r in ("argmax", "shift") if "alti" in maps else ():
        methods[f"ALTI+ {r}"] = links(maps["alti"], r)
    for m, name in ATTRIBUTIONS.items() if "alti" in maps else ():  # the score of each source word, its argmax
        methods[f"{name} argmax"] = links(maps[m], "argmax")
    heads = {r: [[links(att[l, h], r) for h in range(att.shape[1])] for l in range(att.shape[0])]
             for r in ("argmax", "shift")}
    return methods, heads


def check_indices(ref: Reference, n_src: int, n_tgt: int):
    bad = sorted((i, j) for i, j in ref.possible if i >= n_src or j >= n_tgt)
    if bad:
        raise InputError(f"gold line {ref.line}: links {bad[:3]} point past its {n_src} German and {n_tgt} "
                         f"English tokens")


def evaluate(translator, src, ref, gold: list, silver: dict | None = None, progress: bool = False,
             attention_only: bool = False) -> dict:
    """The alignment report (the module docstring) of the gold pairs whose line is in src/ref (lists of lines,
    or {line: text}); attention_only: the attention methods alone (the training replay)."""
    from .vocab import tokenize

    src, ref = (dict(enumerate(x)) if isinstance(x, list) else x for x in (src, ref))
    L, H = translator.cfg.n_dec_layers, translator.cfg.n_heads
    names = method_names(L, attention_only)
    usable = [g for g in gold if g.line in src and g.line in ref]
    if not usable:
        raise InputError(f"no annotated line is among the {len(src)} lines of the corpus")
    per_line, base = {}, {"diagonal": []}
    head_counts = {r: np.zeros((L, H, 4), dtype=np.int64) for r in ("argmax", "shift")}
    method_silver = {m: [] for m in names}
    if silver is not None:
        base["silver"] = []
    for g in tqdm(usable, desc="pairs", unit="pair", disable=not progress):
        if (g.de and g.de != src[g.line]) or (g.en and g.en != ref[g.line]):
            raise InputError(f"gold line {g.line}: its text is not line {g.line} of the corpus (wrong files?)")
        de, en = tokenize(src[g.line], "de"), tokenize(ref[g.line], "en")
        if translator.source_ids(src[g.line])[2]:
            raise InputError(f"gold line {g.line} is longer than the model's {translator.cfg.max_positions} positions")
        check_indices(g, len(de), len(en))
        out = en if translator.tgt_vocab.pieces is None else translator.tgt_vocab.tokenize(ref[g.line], "en")
        groups = grouping(translator, src[g.line], out, de, en)
        methods, heads = pair_links(maps_for(translator, src[g.line], out, attention_only), len(de), len(en), groups)
        per_line[g.line] = {m: list(counts(methods[m], g.sure, g.possible)) for m in names}
        for r, grid in heads.items():
            for l in range(L):
                for h in range(H):
                    head_counts[r][l, h] += counts(grid[l][h], g.sure, g.possible)
        base["diagonal"].append((diagonal(len(de), len(en)), g.sure, g.possible))
        if silver is not None:
            s = silver.get(g.line, frozenset())
            base["silver"].append((s, g.sure, g.possible))
            for m in names:
                method_silver[m].append((methods[m], s, s))
    methods = {}
    for m in names:
        methods[m] = {k: round(v, 4) for k, v in rates(np.sum([per_line[n][m] for n in per_line], axis=0)).items()}
        if silver is not None:
            methods[m]["silver_aer"] = round(score(method_silver[m])["aer"], 4)
    grids = {r: [[round(rates(c[l, h])["aer"], 4) for h in range(H)] for l in range(L)]
             for r, c in head_counts.items()}
    best = min(methods, key=lambda m: methods[m]["aer"])
    return {"n_pairs": len(usable), "lines": [g.line for g in usable], "threshold": THRESHOLD,
            "method": HEAD_METHOD, "best_method": best,
            "baselines": {k: {m: round(v, 4) for m, v in score(v).items()} for k, v in base.items()},
            "heads": {"cross": grids[HEAD_METHOD]}, "heads_by_method": grids, "methods": methods,
            "per_line": {str(n): v for n, v in per_line.items()}}


def main(argv=None):
    """`python -m model.align`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    cli.add_corpus(p)
    p.add_argument("--gold", required=True, help="hand-checked alignments (.jsonl; docs/alignment-guidelines.md)")
    p.add_argument("--silver", default=str(SILVER), help="silver alignment (.jsonl of {line, links}); "
                   "'none' to leave it out (default: %(default)s)")
    p.add_argument("--out", default=None, help="JSON file to write (default: CHECKPOINT/alignment.json)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)

    src, ref = cli.read_corpus(args.src, args.ref)
    gold = read_gold(args.gold)
    silver = None if args.silver == "none" else read_silver(args.silver)
    translator = cli.load_translator(args)
    out = cli.output_file(args.out, args.checkpoint, "alignment.json")
    t0 = time.time()
    result = evaluate(translator, src, ref, gold, silver, progress=not args.no_progress)
    result["checkpoint"] = translator.checkpoint_id
    result["data"] = {"src": Path(args.src).name, "gold": Path(args.gold).name, "lines": len(src),
                      "n": result["n_pairs"], "seconds": round(time.time() - t0, 1),
                      "silver": None if silver is None else Path(args.silver).name,
                      "command": f"python -m model.align --src {Path(args.src).name} --ref {Path(args.ref).name} "
                                 f"--gold {Path(args.gold).name}"
                                 + ("" if args.checkpoint is None else f" --checkpoint {args.checkpoint}")}
    return cli.write_corpus_result(out, result, result["n_pairs"], len(src))


if __name__ == "__main__":
    from . import cli

    cli.run(main)
