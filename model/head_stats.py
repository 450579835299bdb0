"""What each attention head does, in numbers: per-head statistics of the maps over a corpus.

    python -m model.head_stats --src test_2016_flickr.de.gz [--checkpoint PATH] [--device D] [--out FILE]
                               [--batch-size N] [--no-progress]

Every sentence is translated greedily (batched, with every map, as `model.translate --json`
gives them) and each head's map is summarised by the statistics below; the file holds each
statistic's mean over sentences, per kind an L x H list (layers and heads 0-based in the
lists). Default output: CHECKPOINT/head_stats.json. Descriptive, like Voita et al. (2019)
and Clark et al. (2019): what a head looks at, not what it is needed for (head_importance).

Definitions. A map is one sentence's weights of one head, rows = queries, columns = keys
(docs/contract.md): enc S x S over the source `<sos> tokens <eos>`; dec T x T over the
decoder inputs `<sos> y1 .. y(T-1)`, zero above the diagonal; cross T x S, decoder inputs
to source. Which rows count:
  - enc and cross: every row, `<sos>`/`<eos>` queries included (the model computes them and
    they feed the next layer like any other).
  - dec: every row but the first. The `<sos>` query may look at one key only, so its row is
    1 on itself by construction (entropy 0, relative entropy 0/0) and says nothing about
    the head. A sentence with T = 1 (the first output token was `<eos>`) has no dec rows.
Every statistic is a mean over the rows that count ("mean over queries"), then a mean over
the sentences where it is defined (a sentence where it is not, NaN, is left out; `counts`
says how many were used). Shares are fractions of a row's weight (each row sums to 1);
their key sets may overlap (the `<eos>` query's own key is diagonal and `<eos>` at once),
so they need not add up to 1. A statistic that makes no sense for a kind is null for it.
`<sos>` and `<eos>` mean the framing positions (first key; last key of the source), not
any generated token spelled the same. Punctuation is a token made only of Unicode
punctuation characters (categories P*: . , ; " - ( ) ...; not symbols such as + or $).
"""

import time
import unicodedata
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .errors import InputError
from .i18n import N_

KINDS = ("enc", "dec", "cross")  # as model.transformer.KINDS; not imported: this module stays free of torch
SELF = ("enc", "dec")
BATCH_SIZE = 64  # sentences per greedy batch (Translator.translate_batch)

# {stat: one line}: what the page shows as a caption, and what each JSON file carries
DEFINITIONS = {  # marked for the catalogues (model/i18n.py): the page shows each as _(definition)
    "entropy": N_("mean over queries of -sum_j w_ij log w_ij, in nats (0 log 0 = 0): 0 = one key takes everything"),
    "relative_entropy": N_("mean over queries of the entropy / log(keys the query may see): S for enc and cross, "
                           "i+1 for dec query i; 1 = uniform over what it may see"),
    "mean_distance": N_("mean over queries of sum_j w_ij |i - j|, in tokens (enc, dec; positions of different "
                        "sequences for cross, so null)"),
    "diagonal_share": N_("mean over queries of w_ii, the weight on the query's own position (enc, dec)"),
    "previous_share": N_("mean over queries i >= 1 of w_i,i-1, the weight on the token before (enc, dec)"),
    "next_share": N_("mean over queries i <= S-2 of w_i,i+1, the weight on the token after (enc; dec cannot look "
                     "ahead)"),
    "sos_share": N_("mean over queries of the weight on the <sos> key (position 0)"),
    "eos_share": N_("mean over queries of the weight on the source's <eos> key (last position; enc, cross: "
                    "the decoder inputs hold no <eos>)"),
    "punctuation_share": N_("mean over queries of the summed weight on punctuation keys (tokens made only of Unicode "
                            "punctuation); sentences without such a key left out"),
    "max_weight": N_("mean over queries of max_j w_ij: 1 = every query puts all its weight on one key"),
    "monotonicity": N_("cross: fraction of consecutive decoding steps whose argmax source position does not go "
                       "back (the step that emits <eos> left out; needs 2 steps); 1 = monotone alignment"),
    "alignment_spearman": N_("cross: Spearman correlation of decoding step and argmax source position (average "
                             "ranks for ties; <eos> step left out); undefined (left out) where the argmax never "
                             "moves"),
}
STATS = tuple(DEFINITIONS)
APPLIES = {stat: KINDS for stat in STATS} | {  # the kinds each statistic is defined for; null elsewhere
    "mean_distance": SELF, "diagonal_share": SELF, "previous_share": SELF, "next_share": ("enc",),
    "eos_share": ("enc", "cross"), "monotonicity": ("cross",), "alignment_spearman": ("cross",)}
# {stat: its short name}: how the page's pickers, tables and charts name it (Head statistics, Training)
NAMES = {"entropy": N_("entropy (nats)"), "relative_entropy": N_("relative entropy"),
         "mean_distance": N_("mean distance"), "diagonal_share": N_("on itself"),
         "previous_share": N_("on the previous token"), "next_share": N_("on the next token"),
         "sos_share": N_("on <sos>"), "eos_share": N_("on <eos>"), "punctuation_share": N_("on punctuation"),
         "max_weight": N_("max weight"), "monotonicity": N_("monotonicity"),
         "alignment_spearman": N_("alignment Spearman")}


def head_divergence(maps: np.ndarray, first_row: int = 0) -> np.ndarray:
    """How much a layer's heads differ on one sentence: (L,) the mean over pairs of heads (h < h') and over query
    rows (from `first_row`: 1 for dec, whose <sos> row is 1 on itself in every head) of the Jensen-Shannon
    divergence between the two heads' rows, in bits (0: the heads look alike; 1: they share no key).
    JS(p, q) = (KL(p || m) + KL(q || m)) / 2 with m = (p + q) / 2, 0 log 0 = 0. maps: (L, H, Tq, Tk) weights.
    The walk's multi-head stop and the attention views open on the layer where it is largest."""
    w = np.asarray(maps, dtype=np.float64)[:, :, first_row:]  # (L, H, Q, K)
    L, H = w.shape[:2]
    if H < 2 or w.shape[2] == 0:
        return np.zeros(L)
    a, b = np.triu_indices(H, 1)
    p, q = w[:, a], w[:, b]  # (L, pairs, Q, K)
    m = (p + q) / 2

    def kl(x):  # sum_k x log2(x / m), 0 where x = 0 (m > 0 wherever x > 0)
        return np.where(x > 0, x * np.log2(np.where(x > 0, x, 1) / np.where(m > 0, m, 1)), 0).sum(-1)

    return ((kl(p) + kl(q)) / 2).mean(axis=(1, 2))


def is_punctuation(token: str) -> bool:
    """True for a token made only of Unicode punctuation characters ("." "," "--" "\u201e"), not "<eos>" or "+"."""
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


# one sentence ------------------------------------------------------------------------------------
def sentence_stats(maps: dict, src_tokens: list, tgt_tokens: list, eos_step: bool, source_start: bool = True) -> dict:
    """Every statistic of one sentence: {stat: {kind: (L, H) float array, NaN where undefined, or None}}.

    maps: {"enc": (L, H, S, S), "dec": (L, H, T, T), "cross": (L, H, T, S)} (a Translation's
    maps, or the `--json` lists); src_tokens: the S labels, tgt_tokens: the T decoder inputs;
    eos_step: whether the last step emitted <eos> (False when the output was cut at max length);
    source_start: whether the source starts with <sos> (a Marian model's does not: its share on the source is NaN).
    """
    out = {stat: dict.fromkeys(KINDS) for stat in STATS}
    for kind in KINDS:
        w = np.asarray(maps[kind], dtype=np.float64)  # (L, H, Q, K)
        keys = tgt_tokens if kind == "dec" else src_tokens
        assert w.ndim == 4 and w.shape[-1] == len(keys), f"{kind} map {w.shape} does not fit {len(keys)} keys"
        for stat, value in _kind_stats(kind, w, keys, eos_step).items():
            out[stat][kind] = value
        if kind != "dec" and not source_start:  # key 0 is the first source token, not <sos>
            out["sos_share"][kind] = np.full(w.shape[:2], np.nan)
    return out


def translation_stats(result, source_start: bool = True) -> dict:
    """sentence_stats of a Translation (model/result.py) made with its maps."""
    maps = {k: result.maps(k) for k in KINDS}  # (L, H, Q, K) each
    eos_step = len(result.steps) > len(result.output_tokens)  # the last step wrote <eos> (not an output token)
    return sentence_stats(maps, result.src_tokens, result.tgt_tokens, eos_step, source_start)


def _kind_stats(kind: str, w: np.ndarray, keys: list, eos_step: bool) -> dict:
    """The statistics that apply to one kind, from its maps w (L, H, Q, K)."""
    L, H, Q, K = w.shape
    rows = np.arange(1 if kind == "dec" else 0, Q)  # (R,) the query positions that count
    if len(rows) == 0:
        return {stat: np.full((L, H), np.nan) for stat in STATS if kind in APPLIES[stat]}
    w = w[:, :, rows]  # (L, H, R, K)
    seen = rows + 1 if kind == "dec" else np.full(len(rows), K)  # (R,) keys each query may look at
    logw = np.log(np.where(w > 0, w, 1.0))  # log 1 = 0 where w = 0: 0 log 0 counts as 0
    entropy = -(w * logw).sum(-1)  # (L, H, R)
    punct = np.array([is_punctuation(t) for t in keys])  # (K,)
    s = {"entropy": entropy.mean(-1),
         "relative_entropy": (entropy / np.log(seen)).mean(-1),
         "max_weight": w.max(-1).mean(-1),
         "sos_share": w[..., 0].mean(-1),
         "punctuation_share": w[..., punct].sum(-1).mean(-1) if punct.any() else np.full((L, H), np.nan)}
    if kind == "cross":
        s.update(_alignment(w[:, :, :Q - 1] if eos_step else w))
    if kind in APPLIES["eos_share"]:
        s["eos_share"] = w[..., K - 1].mean(-1)
    if kind in SELF:
        r = np.arange(len(rows))  # row index into w, position rows[r]
        s["mean_distance"] = (w * np.abs(rows[:, None] - np.arange(K))).sum(-1).mean(-1)
        s["diagonal_share"] = w[:, :, r, rows].mean(-1)
        s["previous_share"] = _mean_at(w, r, rows - 1, rows >= 1)
        if kind == "enc":
            s["next_share"] = _mean_at(w, r, rows + 1, rows + 1 < K)
    return s


def _mean_at(w: np.ndarray, r: np.ndarray, keys: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """(L, H): mean over the rows where `ok` of w[row, keys[row]]; NaN when no row is ok."""
    L, H = w.shape[:2]
    return w[:, :, r[ok], keys[ok]].mean(-1) if ok.any() else np.full((L, H), np.nan)


def _alignment(w: np.ndarray) -> dict:
    """Monotonicity and Spearman correlation of the argmax alignment, from cross maps w (L, H, n, S)."""
    L, H, n, _ = w.shape
    if n < 2:
        return {"monotonicity": np.full((L, H), np.nan), "alignment_spearman": np.full((L, H), np.nan)}
    a = w.argmax(-1)  # (L, H, n) source position per step; a tie goes to the first
    monotonicity = (np.diff(a, axis=-1) >= 0).mean(-1)
    less = (a[..., None, :] < a[..., :, None]).sum(-1)  # (L, H, n) steps aligned further left
    same = (a[..., None, :] == a[..., :, None]).sum(-1)  # (L, H, n) itself included
    rank = less + (same + 1) / 2  # average rank, 1-based
    x = np.arange(n) - (n - 1) / 2  # (n,) the steps' ranks, centred
    y = rank - rank.mean(-1, keepdims=True)  # (L, H, n)
    spread = np.sqrt((x ** 2).sum() * (y ** 2).sum(-1))  # (L, H), 0 when the argmax never moves
    spearman = np.divide((x * y).sum(-1), spread, out=np.full((L, H), np.nan), where=spread > 0)
    return {"monotonicity": monotonicity, "alignment_spearman": spearman}


# a corpus ----------------------------------------------------------------------------------------
def corpus_mean(per_sentence: list) -> tuple[dict, dict]:
    """Means over sentences of sentence_stats results, NaNs left out: ({stat: {kind: (L, H) or None}},
    {stat: {kind: (L, H) int counts of the sentences used, or None}})."""
    assert per_sentence, "no sentences to average"
    means, counts = {}, {}
    for stat in STATS:
        means[stat], counts[stat] = dict.fromkeys(KINDS), dict.fromkeys(KINDS)
        for kind in APPLIES[stat]:
            a = np.stack([s[stat][kind] for s in per_sentence])  # (N, L, H)
            ok = ~np.isnan(a)
            n = ok.sum(0)  # (L, H)
            means[stat][kind] = np.divide(np.where(ok, a, 0).sum(0), n, out=np.full(n.shape, np.nan), where=n > 0)
            counts[stat][kind] = n
    return means, counts


def corpus_stats(translator, sentences: list, batch_size: int = BATCH_SIZE, progress: bool = False) -> tuple:
    """(per-sentence stats in input order, the usable sentences' indices), from batched greedy translation.

    Sentences the translator refuses (empty lines) are left out. Sentences are taken in order
    of length, batch_size at a time, so a batch wastes little on padding (as translate_batch).
    """
    lengths = {}
    for i, s in enumerate(sentences):
        try:
            lengths[i] = len(translator.source_ids(s)[1])
        except InputError:
            continue
    order = sorted(lengths, key=lengths.get)
    stats = {}
    with tqdm(total=len(order), desc="sentences", unit="sent", disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            results = translator.translate_batch([sentences[i] for i in chunk], batch_size=len(chunk), top_k=1)
            for i, r in zip(chunk, results, strict=True):
                stats[i] = translation_stats(r, translator.cfg.source_start)
            bar.update(len(chunk))
    used = sorted(stats)
    return [stats[i] for i in used], used


def to_json(values: dict, digits: int = 6) -> dict:
    """{stat: {kind: L x H nested lists, NaN -> null}} from corpus_mean's arrays (None stays None)."""
    def plain(a):
        if a is None:
            return None
        if a.dtype.kind in "iu":
            return a.tolist()
        return [[None if np.isnan(x) else round(float(x), digits) for x in row] for row in a]

    return {stat: {kind: plain(a) for kind, a in by_kind.items()} for stat, by_kind in values.items()}


# the command line --------------------------------------------------------------------------------
def main(argv=None):
    """`python -m model.head_stats`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    cli.add_corpus(p, ref=False)
    p.add_argument("--out", default=None, help="JSON file to write (default: CHECKPOINT/head_stats.json)")
    p.add_argument("--batch-size", type=cli.whole, default=BATCH_SIZE, help="sentences per greedy batch")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    cli.check(args, batch_size=cli.COUNT)

    from .data import read_lines
    from .translator import MAX_OUTPUT  # after argument parsing: --help stays fast

    translator = cli.load_translator(args)
    src = read_lines(args.src)
    out = cli.output_file(args.out, args.checkpoint, "head_stats.json")
    t0 = time.time()
    per_sentence, used = corpus_stats(translator, src, args.batch_size, progress=not args.no_progress)
    if not per_sentence:
        raise InputError(f"{args.src} has no sentence to translate ({len(src)} empty lines)")
    means, counts = corpus_mean(per_sentence)
    result = {"checkpoint": translator.checkpoint_id, "n": len(used), "stats": to_json(means),
              "counts": to_json(counts), "definitions": DEFINITIONS,
              "note": f"mean over sentences; lists are L x H, layers and heads 0-based; greedy decoding, at most "
                      f"{MAX_OUTPUT} output tokens; null: not defined for that kind (or on no sentence)",
              "data": {"src": Path(args.src).name, "lines": len(src), "n": len(used),
                       "seconds": round(time.time() - t0, 1), "device": translator.device_name}}
    return cli.write_corpus_result(out, result, len(used), len(src))


if __name__ == "__main__":
    from . import cli

    cli.run(main)
