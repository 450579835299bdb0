"""Which explanation can you trust here? Faithfulness of every explanation the page draws, measured by removal.

An explanation ranks the tokens a step read: the source tokens (and, separately, the prefix tokens, the English
words written before it). If the ranking is faithful to the model, removing what it ranks first should change the
prediction most (comprehensiveness) and keeping only what it ranks first should change it least (sufficiency).
DeYoung et al., ACL 2020 (ERASER), section 4; docs/contract.md, "Faithfulness", has every formula.

For a step t with probability p = p(y_t | y_<t, x) of its own word, and a ranking r_1, ..., r_n of the n content
tokens on one side (source: every token but <sos> and <eos>; prefix: the decoder inputs 1..t, every English word
before step t; <sos> is never removed):

    deletion curve  D(k) = p(y_t | the input with r_1..r_k removed),  k = 0..n   (D(0) = p)
    kept curve      K(k) = p(y_t | the input with r_k+1..r_n removed), k = 0..n   (K(n) = p)
    comprehensiveness = p - mean_k D(k),   sufficiency = p - mean_k K(k)          (AOPC over k = 0..n)

"Removed" is the replacement leave-one-out uses: the token becomes <unk>, every position stays (model/attribute.py),
so leave-one-out's first token is, by construction, the one whose removal alone lowers p most: no method can beat
its comprehensiveness at k = 1 (the tests use this). AOPC averages every k from 0 to n, ERASER's bins at the
finest grain one token allows (the sentences are short: 13 tokens on average). Hard removal, not the soft variants
of Zhao and Aletras (ACL 2023): their soft removal scales each token's embedding by its normalised score, which
needs scores of one sign and one scale, and the methods here are signed (input x gradient, leave-one-out) and
unsigned (attention, norms) alike; a hard removal treats every ranking the same way.

Rankings: a method's scores for the step, largest first (signed methods: the token that raised p most first), ties
by position. Agreement: Kendall's tau-b between a method's scores and leave-one-out's over the same tokens. The
random baseline ranks by R random orders (one per order for every step of a sentence: a random order restricted to
the tokens a step can see is still uniformly random).

Every removal of one sentence is a row of shared batches, distinct removals once: a source removal is one
teacher-forced pass that serves every step asking for it; a prefix removal reuses the one encoder output.
"""

import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import files
from .checkpoint import checkpoint_folder
from .errors import InputError
from .methods import ATTRIBUTIONS as METHOD_KEYS
from .methods import METHODS, Explanation, by_name
from .metrics import mean_interval
from .transformer import Extras
from .vocab import UNK_ID

ORDERS = 20  # random orders per sentence: the baseline and its spread
ROWS = 128  # removal rows per forward pass
BOOTSTRAP = 1000  # resamples of the sentences for the 95% intervals
SEED = 0

ATTRIBUTIONS = tuple(m for m in METHOD_KEYS if not METHODS[m].foil)  # their target is p(word): faithfulness measures it
REFERENCE = "leave_one_out"  # tau is measured against it
RANDOM = "random"


# --- the measures of one step: plain numbers in, plain numbers out ------------------------------------------------
def ranking(scores) -> np.ndarray:
    """Token indices from the highest score to the lowest, ties by index (a stable sort)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")


def kendall_tau(a, b) -> float:
    """Kendall's tau-b of two score vectors (ties in either count as neither concordant nor discordant, and the
    denominator leaves them out); NaN with fewer than two tokens or where one vector is constant."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    i, j = np.triu_indices(len(a), 1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    pairs = len(i)
    denominator = math.sqrt((pairs - np.count_nonzero(da == 0)) * (pairs - np.count_nonzero(db == 0)))
    return float((da * db).sum() / denominator) if denominator > 0 else float("nan")


def removals(order, kept: bool = True) -> list[tuple]:
    """The removals an order's curves need: its first k tokens, k = 0..n (the deletion curve), then, with kept,
    all but its first k (the kept curve)."""
    order = [int(i) for i in order]
    first = [tuple(sorted(order[:k])) for k in range(len(order) + 1)]
    return first + [tuple(sorted(order[k:])) for k in range(len(order) + 1)] if kept else first


@dataclass(frozen=True)
class Curves:
    """One ranking's curves at one step (k = 0..n) and its two areas."""

    deletion: np.ndarray  # D(k): p with the first k ranked tokens removed
    kept: np.ndarray  # K(k): p with only the first k kept

    @property
    def comprehensiveness(self) -> float:
        return float(self.deletion[0] - self.deletion.mean())

    @property
    def sufficiency(self) -> float:
        return float(self.kept[-1] - self.kept.mean())


def curves(order, p_of) -> Curves:
    """The curves of one order, p_of(removed: sorted tuple of token indices) giving p."""
    sets = removals(order)
    n = len(order)
    return Curves(np.array([p_of(s) for s in sets[:n + 1]]), np.array([p_of(s) for s in sets[n + 1:]]))


def step_measures(scores: dict, p_of, orders: list, reference: str | None = REFERENCE) -> dict:
    """Every method's curves and scores at one step, and the random baseline's.

    scores: {method: (n,) scores of the n tokens}; p_of: as for `curves`; orders: random orders of range(n).
    Returns {method: {"order", "curves", "comprehensiveness", "sufficiency", "tau"}, RANDOM: {"deletion": (R, n + 1),
    "comprehensiveness": (R,), "sufficiency": (R,) the same estimate}}.
    """
    out = {}
    ref = None if reference is None else scores.get(reference)
    for method, s in scores.items():
        order = ranking(s)
        c = curves(order, p_of)
        out[method] = {"order": order, "curves": c, "comprehensiveness": c.comprehensiveness,
                       "sufficiency": c.sufficiency, "tau": float("nan") if ref is None else kendall_tau(s, ref)}
    deletion = np.array([[p_of(s) for s in removals(o, kept=False)] for o in orders])  # (R, n + 1)
    comprehensiveness = deletion[:, 0] - deletion.mean(1)
    # Keeping the first k of a random order removes the first n - k of its reverse, itself a random order: the two
    # areas have one expectation, and the deletion curves estimate both.
    out[RANDOM] = {"deletion": deletion, "comprehensiveness": comprehensiveness, "sufficiency": comprehensiveness}
    return out


# --- the model's p under removals, as rows of shared batches ---------------------------------------------------
class Removals:
    """p(y_t) of one teacher-forced output with tokens replaced by <unk>, distinct removals computed once.

    src (S,), tgt (T,) decoder inputs, out (T,) the steps' words: ids on the model's device. A source removal is a
    tuple of source positions; a prefix removal a tuple of decoder-input positions. `ask` records what a step needs
    and `run` computes every recorded removal in batches of ROWS; `p` then reads one.
    """

    def __init__(self, model, src, tgt, out):
        self.model, self.src, self.tgt, self.out = model, src, tgt, out
        self.asked = {"source": {}, "prefix": {}}  # side -> {removal: set of steps}
        self.found = {"source": {}, "prefix": {}}  # side -> {(removal, step): p}

    def ask(self, side: str, removed: tuple, step: int):
        self.asked[side].setdefault(removed, set()).add(step)
        return 0.0

    def p(self, side: str, removed: tuple, step: int) -> float:
        return self.found[side][removed, step]

    @torch.no_grad()
    def run(self):
        """Every recorded removal not yet computed: rows grouped by the last step they serve, whose pass stops
        there (a step reads no later decoder input), ROWS to a pass."""
        model = self.model
        memory = src_mask = None  # the prefix rows' one encoder output, made when the first of them comes
        for side in ("source", "prefix"):
            todo = {}
            for removed, steps in self.asked[side].items():
                steps = sorted(t for t in steps if (removed, t) not in self.found[side])
                if steps:
                    todo.setdefault(steps[-1], []).append((removed, steps))
            for last, rows in todo.items():
                tgt = self.tgt[:last + 1]  # (n,) decoder inputs 0..last
                out = self.out[:last + 1]
                for start in range(0, len(rows), ROWS):
                    chunk = rows[start:start + ROWS]
                    B = len(chunk)
                    ids = (self.src if side == "source" else tgt).repeat(B, 1)  # (B, S) or (B, n)
                    for row, (removed, _) in enumerate(chunk):
                        ids[row, list(removed)] = UNK_ID
                    if side == "source":
                        logits = model(ids, tgt.expand(B, -1), Extras(need_weights=False)).logits  # (B, n, V)
                    else:
                        if memory is None:
                            src = self.src[None]  # (1, S)
                            memory, src_mask = model.encode(src, Extras(need_weights=False))[0], model.src_mask(src)
                        logits = model.decode(ids, memory.expand(B, -1, -1), src_mask,
                                              extras=Extras(need_weights=False))[0]  # (B, n, V)
                    logp = torch.log_softmax(logits.float(), -1)[:, torch.arange(last + 1), out]  # (B, n)
                    p = logp.exp().cpu().numpy()
                    for row, (removed, steps) in enumerate(chunk):
                        for t in steps:
                            self.found[side][removed, t] = float(p[row, t])


# --- the explanations of one output -----------------------------------------------------------------------------
def explanations(translator, sentence: str, output_tokens: list, ig_steps=None, heads=()) -> dict:
    """{"source": {method: (T, S)}, "prefix": {method: (T, T)}}: every explanation's scores for each step of an
    output, as plain arrays (a page's cache keeps them: no model, no translator, no hook inside).

    Attention: the cross-attention (source) and decoder self-attention (prefix) maps, the mean of every layer and
    head ("attention") and of each layer's heads ("attention L1"); the cross-attention heads in `heads` ((layer,
    head) from 0, named "attention L1 H1"); rollout (model/flow.py, through the last decoder layer; source only);
    norm-based attention, each layer's heads summed ("norms L1"); ALTI+; and the five attribution methods
    (model/attribute.py). Integrated gradients, the costly one, is computed for `ig_steps` only (default: every
    step); its rows for other steps are NaN (`add_integrated_gradients` fills more).
    """
    from .attribute import Attributor
    from .contributions import contributions, weighted_norms
    from .flow import rollout_maps
    from .translator import capture_maps
    from .value_zeroing import value_zeroing

    forced = translator.force(sentence, output_tokens)
    capture = translator.capture(forced)  # one pass: attention, norms, ALTI+ and value zeroing are read off it
    maps = capture_maps(capture)
    T = len(output_tokens)
    src, pre = {}, {}
    for kind, out in (("cross", src), ("dec", pre)):
        kind_maps = maps[kind].astype(np.float64)  # (L, H, T, S|T)
        out["attention"] = kind_maps.mean(axis=(0, 1))
        for layer in range(kind_maps.shape[0]):
            out[Explanation("attention", layer).name] = kind_maps[layer].mean(axis=0)
    for layer, head in heads:
        src[Explanation("attention", layer, head).name] = maps["cross"][layer, head].astype(np.float64)
    src["rollout"] = rollout_maps(maps["enc"], maps["cross"], maps["cross"].shape[0] - 1)
    norms = weighted_norms(capture, translator.model)
    for kind, out in (("cross", src), ("dec", pre)):
        for layer, n in enumerate(np.asarray(norms[kind], dtype=np.float64)):
            out[Explanation("norms", layer).name] = n.sum(axis=0)
    c = contributions(capture, translator.model)
    src["ALTI+"], pre["ALTI+"] = np.asarray(c["source"], np.float64), np.asarray(c["prefix"], np.float64)
    vz = value_zeroing(capture, translator.model)  # its place among the methods is after leave-one-out
    del capture
    a = Attributor(translator, forced)
    g_src, g_tgt = a.gradients(False)
    src["gradient"], pre["gradient"] = np.linalg.norm(g_src, axis=-1), np.linalg.norm(g_tgt, axis=-1)
    x_src, x_tgt = a.gradients(True)
    src["input_x_gradient"], pre["input_x_gradient"] = x_src.sum(-1), x_tgt.sum(-1)
    src["integrated_gradients"] = np.full((T, len(a.src_tokens)), np.nan)
    pre["integrated_gradients"] = np.full((T, T), np.nan)
    src["leave_one_out"], pre["leave_one_out"] = a.leave_one_out()
    src["value_zeroing"], pre["value_zeroing"] = np.asarray(vz["source"]), np.asarray(vz["prefix"])
    return add_integrated_gradients(a, {"source": src, "prefix": pre}, range(T) if ig_steps is None else ig_steps)


def add_integrated_gradients(a, scores: dict, steps) -> dict:
    """The scores with integrated gradients' rows filled for the given steps where they are still NaN, by `a` (the
    Attributor of the scores' output): a new dict with new integrated-gradients arrays, the given scores untouched
    (a cache may hold them)."""
    steps = [int(t) for t in steps if np.isnan(scores["source"]["integrated_gradients"][t]).any()]
    if not steps:
        return scores
    ig_src, ig_pre, *_ = a.integrated_gradients(steps=steps)
    filled = {**scores}
    for side, rows in (("source", ig_src), ("prefix", ig_pre)):
        filled[side] = {**scores[side], "integrated_gradients": scores[side]["integrated_gradients"].copy()}
        filled[side]["integrated_gradients"][steps] = rows
    return filled


def aligning_head(folder) -> tuple[int, int] | None:
    """The cross-attention head (layer, head) from 0 whose argmax alignment has the lowest AER in the checkpoint's
    alignment.json (the alignment view's best head), or None without that file."""
    path = Path(folder) / "alignment.json"
    if not path.is_file():
        return None
    grid = np.array(files.loads(files.read_text(path), str(path))["heads"]["cross"])  # (L, H) AER
    layer, head = np.unravel_index(int(grid.argmin()), grid.shape)
    return int(layer), int(head)


def positions(side: str, S: int, t: int) -> list[int]:
    """The content tokens a step may lose on one side: source 1..S-2 (not <sos>, <eos>); prefix 1..t."""
    return list(range(1, S - 1)) if side == "source" else list(range(1, t + 1))


def random_orders(n: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.permutation(n) for _ in range(count)]


@dataclass
class SentenceFaithfulness:
    """Every step's measures of one output, both sides: steps[t][side] is step_measures' dict over the side's
    tokens (`positions`), None where the side has no token (the prefix of step 0)."""

    src_tokens: list
    tgt_tokens: list
    output_tokens: list
    p: np.ndarray  # (T,) each step's probability of its own word
    steps: list  # T dicts {"source": ..., "prefix": ...}
    methods: dict = field(default_factory=dict)  # side -> method names, in order
    orders: int = ORDERS

    def to_json(self, digits: int = 6) -> dict:
        """The `python -m model.inspect faithfulness` object: per step and side, every method's scores and
        curves, and the random baseline's mean and 95% range."""
        r = lambda x: None if x is None or not math.isfinite(x) else round(float(x), digits)  # noqa: E731
        steps = []
        for t, token in enumerate(self.output_tokens):
            entry = {"token": token, "p": r(self.p[t])}
            for side in ("source", "prefix"):
                m = None if self.steps[t] is None else self.steps[t][side]
                if m is None:
                    entry[side] = None
                    continue
                pos = positions(side, len(self.src_tokens), t)
                labels = self.src_tokens if side == "source" else self.tgt_tokens
                rand = m[RANDOM]
                deletion = rand["deletion"]
                entry[side] = {
                    "tokens": [labels[i] for i in pos],
                    "methods": {k: {"comprehensiveness": r(v["comprehensiveness"]), "sufficiency": r(v["sufficiency"]),
                                    "tau": r(v["tau"]), "order": [pos[i] for i in v["order"]],
                                    "deletion": [r(x) for x in v["curves"].deletion],
                                    "kept": [r(x) for x in v["curves"].kept]}
                                for k, v in m.items() if k != RANDOM},
                    RANDOM: {"orders": len(deletion),
                             "comprehensiveness": r(rand["comprehensiveness"].mean()),
                             "sufficiency": r(rand["sufficiency"].mean()),
                             "comprehensiveness_range": [r(x) for x in np.percentile(rand["comprehensiveness"],
                                                                                       [2.5, 97.5])],
                             "deletion": [r(x) for x in deletion.mean(0)],
                             "deletion_range": [[r(x) for x in np.percentile(deletion, q, axis=0)] for q in (2.5, 97.5)]}}
            steps.append(entry)
        return {"src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens, "removal": "<unk>",
                "orders": self.orders, "steps": steps}


def measure(translator, sentence: str, output_tokens: list | None = None, steps=None, heads=(),
            orders: int = ORDERS, seed: int = SEED, scores: dict | None = None) -> SentenceFaithfulness:
    """Every explanation's faithfulness at the given steps (default: all) of an output (default: the greedy one).

    scores: explanations() of this output, when the caller has them (the page reuses them across steps)."""
    if output_tokens is None:
        output_tokens = [s.token for s in translator.translate_batch([sentence], with_maps=False)[0].steps]
    output_tokens = list(output_tokens)
    T = len(output_tokens)
    steps = list(range(T)) if steps is None else [int(t) for t in steps]
    if any(not 0 <= t < T for t in steps):
        raise InputError(f"steps must lie between 0 and {T - 1}: the output has {T} steps")
    from .attribute import Attributor

    a = Attributor(translator, translator.force(sentence, output_tokens))
    scores = explanations(translator, sentence, output_tokens, steps, heads) if scores is None else \
        add_integrated_gradients(a, scores, steps)
    S = len(a.src_tokens)
    probe = Removals(translator.model, a.src[0], a.tgt[0], a.out)
    order_sets = {"source": random_orders(S - 2, orders, seed), "prefix": random_orders(T - 1, orders, seed + 1)}

    def one_step(t, p_of):
        found = {}
        for side in ("source", "prefix"):
            pos = positions(side, S, t)
            if not pos:
                found[side] = None
                continue
            table = scores[side]
            per_method = {m: np.asarray(v[t])[pos] for m, v in table.items()}
            rand = [o if side == "source" else o[o < t] for o in order_sets[side]]  # prefix: tokens 1..t only
            found[side] = step_measures(per_method, lambda removed, side=side, pos=pos: p_of(
                side, tuple(pos[i] for i in removed), t), rand)
        return found

    for t in steps:  # first what every step needs, then all of it in shared batches, then the measures
        one_step(t, probe.ask)
    for t in range(T):  # every step's own p, measured or not
        probe.ask("source", (), t)
    probe.run()
    p = np.array([probe.p("source", (), t) for t in range(T)])
    measured = [None] * T
    for t in steps:
        measured[t] = one_step(t, probe.p)
    return SentenceFaithfulness(src_tokens=a.src_tokens, tgt_tokens=a.tgt_tokens, output_tokens=output_tokens,
                                p=p, steps=measured,
                                methods={side: list(scores[side]) for side in ("source", "prefix")}, orders=orders)


# --- over a test set ---------------------------------------------------------------------------------------------
STEPS = 3  # steps measured per sentence, drawn at random (integrated gradients costs 0.4 s a step)
MEASURES = ("comprehensiveness", "sufficiency", "tau")


def sample_steps(T: int, line: int, count: int = STEPS, seed: int = SEED) -> list[int]:
    """The steps measured of a test sentence: `count` of its T, drawn without replacement by a generator seeded with
    (seed, line), so that any slice of the test set draws the same steps."""
    rng = np.random.default_rng([seed, line])
    return sorted(int(t) for t in rng.choice(T, size=min(T, count), replace=False))


def sentence_summary(f: SentenceFaithfulness, steps: list[int]) -> dict:
    """{side: {method: {measure: the mean over the steps}, RANDOM: {"comprehensiveness": (R,) per order},
    "agreement": (M, M) mean tau between the methods}}; NaN where no step has a token on that side."""
    out = {}
    for side in ("source", "prefix"):
        found = [f.steps[t][side] for t in steps if f.steps[t][side] is not None]
        methods = f.methods[side]
        if not found:
            out[side] = None
            continue
        with warnings.catch_warnings():  # nanmean of no finite value warns; NaN is the answer (a one-token side)
            warnings.simplefilter("ignore", RuntimeWarning)
            summary = {m: {k: float(np.nanmean([s[m][k] for s in found])) for k in MEASURES} for m in methods}
            summary[RANDOM] = {"comprehensiveness": np.mean([s[RANDOM]["comprehensiveness"] for s in found], 0)}
        out[side] = summary
    return out


def interval(values: np.ndarray, seed: int = SEED) -> dict:
    """Mean and 95% bootstrap interval (percentile, BOOTSTRAP resamples) of per-sentence values, NaNs left out."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean, low, high = mean_interval(values, BOOTSTRAP, seed)
    return {"mean": round(float(mean), 4), "low": round(float(low), 4), "high": round(float(high), 4),
            "n": int(len(values))}


def alignment_error(method: str, alignment: dict | None) -> float | None:
    """An explanation's AER against the hand-checked links, from the checkpoint's alignment.json (model/align.py), or
    None where the alignment table does not score it (integrated gradients, rollout, the mean of every layer)."""
    if alignment is None:
        return None
    heads = alignment.get("heads", {}).get("cross", [])  # (L, H): the alignment table's grid of heads
    e = by_name(len(heads), [(layer, h) for layer, row in enumerate(heads) for h in range(len(row))]).get(method)
    if e is None:
        return None
    if e.head is not None:
        return heads[e.layer][e.head]
    return alignment.get("methods", {}).get(e.aligned(), {}).get("aer")


def table(summaries: list[dict], alignment: dict | None, methods: dict) -> dict:
    """The test-set table from every sentence's summary: per side and method, each measure's mean and 95% bootstrap
    interval over sentences, AER (source side), the random baseline, and the methods' mean tau with one another."""
    out = {}
    for side in ("source", "prefix"):
        rows = [s[side] for s in summaries if s[side] is not None]
        side_table = {}
        for m in methods[side]:
            entry = {k: interval([r[m][k] for r in rows]) for k in MEASURES}
            if side == "source":
                entry["aer"] = alignment_error(m, alignment)
            side_table[m] = entry
        per_order = np.array([r[RANDOM]["comprehensiveness"] for r in rows])  # (N, R)
        spread = np.percentile(per_order.mean(0), [2.5, 97.5])  # one random order's area over the test set
        side_table[RANDOM] = {"comprehensiveness": interval(per_order.mean(1)),
                              "sufficiency": interval(per_order.mean(1)),
                              "spread": [round(float(x), 4) for x in spread], "orders": int(per_order.shape[1])}
        out[side] = side_table
    return out


def agreement(scores: dict, steps: list[int], methods: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Kendall tau between every two methods' source scores at the given steps: (M, M) sums and counts (a tau is
    NaN where a method's scores are constant), to add over sentences; the table shows sums / counts."""
    M = len(methods)
    total, count = np.zeros((M, M)), np.zeros((M, M))
    pos = positions("source", scores["source"][methods[0]].shape[1], 0)
    for t in steps:
        rows = [np.asarray(scores["source"][m][t])[pos] for m in methods]
        for i in range(M):
            for j in range(i, M):  # tau is symmetric: each pair once, mirrored
                tau = kendall_tau(rows[i], rows[j])
                if math.isfinite(tau):
                    total[i, j] += tau
                    count[i, j] += 1
    return total + np.triu(total, 1).T, count + np.triu(count, 1).T


def verdict(result: dict) -> str:
    """One computed sentence: which explanation is both faithful and plausible on this model, and which is neither.

    Faithful: its comprehensiveness interval lies above the random orders' and its sufficiency interval below
    theirs (source side). Plausible: its AER lies below a diagonal alignment's (the alignment table's baseline that
    knows only the positions). Methods whose AER is not measured are judged on faithfulness alone."""
    source = result["source"]
    rand = source[RANDOM]
    diagonal = (result.get("baselines") or {}).get("diagonal", {}).get("aer")
    names = result.get("names", {})

    def faithful(e):
        c, s = e["comprehensiveness"], e["sufficiency"]
        return c["low"] is not None and c["low"] > rand["comprehensiveness"]["high"] and \
            s["high"] < rand["sufficiency"]["low"]

    def plausible(e):
        return e.get("aer") is not None and diagonal is not None and e["aer"] < diagonal

    methods = {m: e for m, e in source.items() if m != RANDOM}
    both = sorted((m for m, e in methods.items() if faithful(e) and plausible(e)),
                  key=lambda m: methods[m]["sufficiency"]["mean"] - methods[m]["comprehensiveness"]["mean"])
    neither = [m for m, e in methods.items() if e.get("aer") is not None and not faithful(e) and not plausible(e)]
    name = lambda m: names.get(m, m)  # noqa: E731
    n = source[next(iter(methods))]["comprehensiveness"]["n"]
    if both:
        best = methods[both[0]]
        first = (f"On {n} test sentences, {name(both[0])} is both faithful and plausible: removing the source words it "
                 f"ranks first lowers the probability of the word written by {best['comprehensiveness']['mean']:.2f} "
                 f"on average (random orders: {rand['comprehensiveness']['mean']:.2f}), and its alignments have an "
                 f"error rate of {best['aer']:.2f} (a diagonal alignment: {diagonal:.2f}).")
    else:
        first = f"On {n} test sentences, no explanation is both faithful and plausible."
    if neither:
        rest = f" {join([name(m) for m in neither])} {'is' if len(neither) == 1 else 'are'} neither."
    else:
        rest = " Every explanation whose alignments were scored is faithful, plausible or both."
    return first + rest


def join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def display_name(method: str) -> str:
    """A method's label on the page (model/methods.py); a layer's or a head's name as it is."""
    return METHODS[method].label if method in METHODS else method


def evaluate(translator, src_lines: list[str], ref_lines: list[str] | None = None, alignment: dict | None = None,
             heads=(), progress: bool = False) -> dict:
    """The test-set table of `src_lines` (each sentence's greedy output, or its reference teacher-forced): STEPS
    steps per sentence (sample_steps), every method, ORDERS random orders, intervals over sentences."""
    from tqdm import tqdm

    if ref_lines is None:
        outputs = [[s.token for s in r.steps] for r in translator.translate_batch(src_lines, with_maps=False)]
    else:
        outputs = [reference_tokens(translator, r) for r in ref_lines]
    summaries, methods, total, count = [], None, 0, 0
    for line in tqdm(range(len(src_lines)), disable=not progress, desc="faithfulness", unit="sentence"):
        steps = sample_steps(len(outputs[line]), line)
        scores = explanations(translator, src_lines[line], outputs[line], steps, heads)
        f = measure(translator, src_lines[line], outputs[line], steps, scores=scores)
        methods = f.methods
        summaries.append(sentence_summary(f, steps))
        t, c = agreement(scores, steps, methods["source"])
        total, count = total + t, count + c
    tau = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    result = {"n_sentences": len(src_lines), "steps_per_sentence": STEPS, "orders": ORDERS, "bootstrap": BOOTSTRAP,
              "removal": "<unk>", "target": "greedy output" if ref_lines is None else "reference, teacher-forced",
              "names": {m: display_name(m) for side in methods.values() for m in side},
              "baselines": None if alignment is None else alignment.get("baselines"),
              **table(summaries, alignment, methods),
              "agreement": {"methods": methods["source"],
                            "tau": [[None if not math.isfinite(x) else round(float(x), 4) for x in row] for row in tau]},
              "per_sentence": {side: {**{m: [[None if s[side] is None or not math.isfinite(s[side][m][k])
                                              else round(s[side][m][k], 6) for k in MEASURES] for s in summaries]
                                         for m in methods[side]},
                                      RANDOM: [None if s[side] is None else
                                               round(float(s[side][RANDOM]["comprehensiveness"].mean()), 6)
                                               for s in summaries]}
                               for side in ("source", "prefix")}}
    result["verdict"] = verdict(result)
    return result


def reference_tokens(translator, reference: str) -> list[str]:
    """A reference's English tokens as the model's vocabulary reads them (<unk> for words it lacks), <eos> last."""
    from .vocab import tokenize

    stoi = translator.tgt_vocab.stoi
    words = [w if w in stoi else "<unk>" for w in tokenize(reference, "en")]
    if not words:
        raise InputError("a reference line is empty")
    return [*words[:translator.cfg.max_positions - 1], "<eos>"]


def main(argv=None):
    """`python -m model.faithfulness`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__.split("\n\n")[0] + "\n\n" + USAGE)
    cli.add_corpus(p, ref=False)
    p.add_argument("--ref", default=None, help="English references, one per line: explain each reference, "
                                               "teacher-forced (default: the model's greedy translation)")
    p.add_argument("--n", type=cli.whole, default=None, help="the first N sentences only (default: all)")
    p.add_argument("--out", required=True, help="JSON file to write (the shipped table: CHECKPOINT/faithfulness.json)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.n is not None:
        cli.check(args, n=cli.Range(1, None))
    if args.ref is None:
        from .data import read_lines
        src, ref = read_lines(args.src), None
    else:
        src, ref = cli.read_corpus(args.src, args.ref)
    if args.n is not None:
        src, ref = src[:args.n], None if ref is None else ref[:args.n]
    if not src:
        raise InputError(f"{args.src} is empty: there is nothing to measure")
    out = cli.output_file(args.out, args.checkpoint, "faithfulness.json")
    translator = cli.load_translator(args)
    folder = checkpoint_folder(args.checkpoint)
    path = folder / "alignment.json"
    alignment = files.loads(files.read_text(path), str(path)) if path.is_file() else None
    head = aligning_head(folder)
    t0 = time.time()
    result = evaluate(translator, src, ref, alignment, heads=() if head is None else (head,),
                      progress=not args.no_progress)
    result["checkpoint"] = translator.checkpoint_id
    result["data"] = {"src": Path(args.src).name, "ref": None if ref is None else Path(args.ref).name,
                      "lines": len(src), "seconds": round(time.time() - t0, 1), "threads": torch.get_num_threads(),
                      "command": " ".join(["python -m model.faithfulness --src", Path(args.src).name,
                                           *(["--ref", Path(args.ref).name] if ref is not None else []),
                                           *(["--n", str(args.n)] if args.n is not None else []),
                                           *(["--checkpoint", args.checkpoint] if args.checkpoint else []),
                                           "--out", Path(args.out).name])}
    files.write_text(out, files.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(f"{len(src)} sentences in {result['data']['seconds']} s: {result['verdict']}")
    return 0


USAGE = """usage examples:
    python -m model.faithfulness --src ../shared/data/multi30k/test_2016_flickr.de.gz --n 500 \\
        --out checkpoints/faithfulness.json
    python -m model.inspect faithfulness "Ein Hund läuft über die Wiese."   (one sentence, every step)"""


if __name__ == "__main__":
    from . import cli

    cli.run(main)
