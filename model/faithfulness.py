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

import dataclasses
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
from .i18n import _, ngettext
from .methods import ATTRIBUTIONS as METHOD_KEYS
from .methods import METHODS, Explanation, by_name
from .metrics import mean_interval
from .result import plain
from .transformer import Extras

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


@dataclass(frozen=True)
class Ranked:
    """One method at one step: its ranking and what removing by it did."""

    order: np.ndarray  # the side's token indices, the highest score first
    curves: Curves
    tau: float  # Kendall's tau-b with the reference method's scores (NaN without one)

    @property
    def comprehensiveness(self) -> float:
        return self.curves.comprehensiveness

    @property
    def sufficiency(self) -> float:
        return self.curves.sufficiency


@dataclass(frozen=True)
class RandomOrders:
    """The random baseline at one step: R random orders' deletion curves."""

    deletion: np.ndarray  # (R, n + 1)

    @property
    def comprehensiveness(self) -> np.ndarray:
        """(R,) each order's area."""
        return self.deletion[:, 0] - self.deletion.mean(1)

    @property
    def sufficiency(self) -> np.ndarray:
        """Keeping the first k of a random order removes the first n - k of its reverse, itself a random order: the
        two areas have one expectation, and the deletion curves estimate both."""
        return self.comprehensiveness


@dataclass(frozen=True)
class StepMeasures:
    """Every method's measures at one step on one side, and the random baseline's."""

    methods: dict  # method -> Ranked, in the order of the scores given
    random: RandomOrders


def step_measures(scores: dict, p_of, orders: list, reference: str | None = REFERENCE) -> StepMeasures:
    """Every method's curves and scores at one step, and the random baseline's.

    scores: {method: (n,) scores of the n tokens}; p_of: as for `curves`; orders: random orders of range(n).
    """
    ref = None if reference is None else scores.get(reference)
    methods = {method: Ranked(ranking(s), curves(ranking(s), p_of),
                              float("nan") if ref is None else kendall_tau(s, ref)) for method, s in scores.items()}
    deletion = np.array([[p_of(s) for s in removals(o, kept=False)] for o in orders])  # (R, n + 1)
    return StepMeasures(methods, RandomOrders(deletion))


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
                    for row, (removed, _kept) in enumerate(chunk):
                        ids[row, list(removed)] = model.cfg.unk_id
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
    ig_src, ig_pre = a.integrated_gradients(steps=steps)[:2]
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


def positions(side: str, S: int, t: int, first: int = 1) -> list[int]:
    """The content tokens a step may lose on one side: source first..S-2 (not <sos>, <eos>; first 0 for a source
    without <sos>, a Marian model's); prefix 1..t."""
    return list(range(first, S - 1)) if side == "source" else list(range(1, t + 1))


def random_orders(n: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.permutation(n) for _draw in range(count)]


@dataclass(frozen=True)
class SentenceFaithfulness:
    """Every step's measures of one output, both sides: steps[t][side] is a StepMeasures over the side's tokens
    (`positions`), None where the side has no token (the prefix of step 0) or the step was not measured (then
    steps[t] is None)."""

    src_tokens: list
    tgt_tokens: list
    output_tokens: list
    p: np.ndarray  # (T,) each step's probability of its own word
    steps: tuple  # T dicts {"source": StepMeasures | None, "prefix": ...}, or None
    methods: dict = field(default_factory=dict)  # side -> method names, in order
    orders: int = ORDERS
    first: int = 1  # the first source position that may be removed: 0 where the source has no <sos>

    def to_json(self, digits: int = 6) -> dict:
        """The `python -m model.inspect faithfulness` object: per step and side, every method's scores and
        curves, and the random baseline's mean and 95% range."""
        steps = []
        for t, token in enumerate(self.output_tokens):
            entry = {"token": token, "p": self.p[t]}
            for side in ("source", "prefix"):
                m = None if self.steps[t] is None else self.steps[t][side]
                if m is None:
                    entry[side] = None
                    continue
                pos = positions(side, len(self.src_tokens), t, self.first)
                labels = self.src_tokens if side == "source" else self.tgt_tokens
                deletion = m.random.deletion
                entry[side] = {
                    "tokens": [labels[i] for i in pos],
                    "methods": {k: {"comprehensiveness": v.comprehensiveness, "sufficiency": v.sufficiency,
                                    "tau": v.tau, "order": [pos[i] for i in v.order],
                                    "deletion": v.curves.deletion, "kept": v.curves.kept}
                                for k, v in m.methods.items()},
                    RANDOM: {"orders": len(deletion),
                             "comprehensiveness": m.random.comprehensiveness.mean(),
                             "sufficiency": m.random.sufficiency.mean(),
                             "comprehensiveness_range": np.percentile(m.random.comprehensiveness, [2.5, 97.5]),
                             "deletion": deletion.mean(0),
                             "deletion_range": [np.percentile(deletion, q, axis=0) for q in (2.5, 97.5)]}}
            steps.append(entry)
        return plain({"src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens, "removal": "<unk>",
                      "orders": self.orders, "steps": steps}, digits)


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
    S, first = len(a.src_tokens), int(translator.cfg.source_start)
    probe = Removals(translator.model, a.src[0], a.tgt[0], a.out)
    order_sets = {"source": random_orders(S - 1 - first, orders, seed),
                  "prefix": random_orders(T - 1, orders, seed + 1)}

    def one_step(t, p_of):
        found = {}
        for side in ("source", "prefix"):
            pos = positions(side, S, t, first)
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
                                p=p, steps=tuple(measured),
                                methods={side: list(scores[side]) for side in ("source", "prefix")}, orders=orders,
                                first=first)


# --- over a test set ---------------------------------------------------------------------------------------------
STEPS = 3  # steps measured per sentence, drawn at random (integrated gradients costs 0.4 s a step)
MEASURES = ("comprehensiveness", "sufficiency", "tau")


def sample_steps(T: int, line: int, count: int = STEPS, seed: int = SEED) -> list[int]:
    """The steps measured of a test sentence: `count` of its T, drawn without replacement by a generator seeded with
    (seed, line), so that any slice of the test set draws the same steps."""
    rng = np.random.default_rng([seed, line])
    return sorted(int(t) for t in rng.choice(T, size=min(T, count), replace=False))


@dataclass(frozen=True)
class Measures:
    """A method's three measures: at one step, or their mean over a sentence's steps."""

    comprehensiveness: float
    sufficiency: float
    tau: float


@dataclass(frozen=True)
class SideSummary:
    """One sentence, one side: each method's measures, mean over the measured steps, and the random orders'."""

    methods: dict  # method -> Measures
    random: np.ndarray  # (R,) each random order's comprehensiveness, mean over the steps


def sentence_summary(f: SentenceFaithfulness, steps: list[int]) -> dict:
    """{side: SideSummary, or None where no measured step has a token on that side}; a mean is NaN where no step
    has a finite value."""
    out = {}
    for side in ("source", "prefix"):
        found = [f.steps[t][side] for t in steps if f.steps[t][side] is not None]
        if not found:
            out[side] = None
            continue
        with warnings.catch_warnings():  # nanmean of no finite value warns; NaN is the answer (a one-token side)
            warnings.simplefilter("ignore", RuntimeWarning)
            methods = {m: Measures(*(float(np.nanmean([getattr(s.methods[m], k) for s in found])) for k in MEASURES))
                       for m in f.methods[side]}
        out[side] = SideSummary(methods, np.mean([s.random.comprehensiveness for s in found], 0))
    return out


@dataclass(frozen=True)
class Interval:
    """Mean and 95% bootstrap interval over sentences, rounded to 4 digits; None where no sentence has a value."""

    mean: float | None
    low: float | None
    high: float | None
    n: int


def interval(values: np.ndarray, seed: int = SEED) -> Interval:
    """Mean and 95% bootstrap interval (percentile, BOOTSTRAP resamples) of per-sentence values, NaNs left out."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return Interval(None, None, None, 0)
    mean, low, high = mean_interval(values, BOOTSTRAP, seed)
    return Interval(round(float(mean), 4), round(float(low), 4), round(float(high), 4), int(len(values)))


@dataclass(frozen=True)
class Row:
    """One method over the test set: each measure's interval, and (source side) its AER, None where not scored."""

    comprehensiveness: Interval
    sufficiency: Interval
    tau: Interval
    aer: float | None = None


@dataclass(frozen=True)
class RandomRow:
    """The random orders over the test set: one sentence's value is the mean over its orders; `spread` is the 95%
    range of one order's mean area over the test set."""

    comprehensiveness: Interval
    sufficiency: Interval
    spread: tuple
    orders: int


@dataclass(frozen=True)
class Side:
    rows: dict  # method -> Row, in the methods' order
    random: RandomRow


@dataclass(frozen=True)
class Table:
    """The test-set table (`python -m model.faithfulness`, shipped as CHECKPOINT/faithfulness.json)."""

    n_sentences: int
    steps_per_sentence: int
    orders: int
    bootstrap: int
    removal: str
    target: str
    names: dict  # method -> its label on the page
    baselines: dict | None  # alignment.json's baselines (the diagonal's AER)
    source: Side
    prefix: Side
    agreement: dict  # {"methods": [...], "tau": (M, M) mean Kendall tau, None where no step had a finite one}
    per_sentence: dict  # side -> {method: [[comprehensiveness, sufficiency, tau] per sentence], "random": [...]}
    verdict: str = ""
    checkpoint: dict | None = None
    data: dict | None = None

    def to_json(self) -> dict:
        def side(name: str) -> dict:
            s = getattr(self, name)
            rows = {m: plain(r) if name == "source" else {k: plain(getattr(r, k)) for k in MEASURES}
                    for m, r in s.rows.items()}
            return {**rows, RANDOM: plain(s.random)}

        out = {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {**out, "source": side("source"), "prefix": side("prefix")}

    @classmethod
    def from_json(cls, d: dict) -> "Table":
        def side(s: dict) -> Side:
            rows = {m: Row(*(Interval(**e[k]) for k in MEASURES), e.get("aer")) for m, e in s.items() if m != RANDOM}
            r = s[RANDOM]
            return Side(rows, RandomRow(Interval(**r["comprehensiveness"]), Interval(**r["sufficiency"]),
                                        tuple(r["spread"]), r["orders"]))

        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in d.items() if k in names}, "source": side(d["source"]),
                      "prefix": side(d["prefix"])})


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


def sides(summaries: list[dict], alignment: dict | None, methods: dict) -> dict:
    """{side: Side} from every sentence's summary: per method, each measure's mean and 95% bootstrap interval over
    sentences and AER (source side), and the random baseline."""
    out = {}
    for side in ("source", "prefix"):
        found = [s[side] for s in summaries if s[side] is not None]
        rows = {m: Row(*(interval([getattr(r.methods[m], k) for r in found]) for k in MEASURES),
                       alignment_error(m, alignment) if side == "source" else None) for m in methods[side]}
        per_order = np.array([r.random for r in found])  # (N, R)
        spread = np.percentile(per_order.mean(0), [2.5, 97.5])  # one random order's area over the test set
        out[side] = Side(rows, RandomRow(interval(per_order.mean(1)), interval(per_order.mean(1)),
                                         tuple(round(float(x), 4) for x in spread), int(per_order.shape[1])))
    return out


def agreement(scores: dict, steps: list[int], methods: list[str], first: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Kendall tau between every two methods' source scores at the given steps: (M, M) sums and counts (a tau is
    NaN where a method's scores are constant), to add over sentences; the table shows sums / counts."""
    M = len(methods)
    total, count = np.zeros((M, M)), np.zeros((M, M))
    pos = positions("source", scores["source"][methods[0]].shape[1], 0, first)
    for t in steps:
        rows = [np.asarray(scores["source"][m][t])[pos] for m in methods]
        for i in range(M):
            for j in range(i, M):  # tau is symmetric: each pair once, mirrored
                tau = kendall_tau(rows[i], rows[j])
                if math.isfinite(tau):
                    total[i, j] += tau
                    count[i, j] += 1
    return total + np.triu(total, 1).T, count + np.triu(count, 1).T


def faithful(e: Row, rand: RandomRow) -> bool:
    """Faithful on its side: its comprehensiveness interval lies above the random orders' and its sufficiency
    interval below theirs."""
    c, s = e.comprehensiveness, e.sufficiency
    return c.low is not None and c.low > rand.comprehensiveness.high and s.high < rand.sufficiency.low


def plausible(e: Row, diagonal: float | None) -> bool:
    """Plausible: its AER lies below a diagonal alignment's (the alignment table's baseline that knows only the
    positions); a method whose AER is not measured is not."""
    return e.aer is not None and diagonal is not None and e.aer < diagonal


def trusted(table: Table) -> list[str]:
    """The source side's methods that are both faithful and plausible, best first (sufficiency minus
    comprehensiveness, lowest first)."""
    rows, rand = table.source.rows, table.source.random
    diagonal = (table.baselines or {}).get("diagonal", {}).get("aer")
    return sorted((m for m, e in rows.items() if faithful(e, rand) and plausible(e, diagonal)),
                  key=lambda m: rows[m].sufficiency.mean - rows[m].comprehensiveness.mean)


def verdict(table: Table) -> str:
    """One computed sentence: which explanation is both faithful and plausible on this model (trusted), and which is
    neither. Methods whose AER is not measured are judged on faithfulness alone."""
    rows, rand = table.source.rows, table.source.random
    diagonal = (table.baselines or {}).get("diagonal", {}).get("aer")
    both = trusted(table)
    neither = [m for m, e in rows.items() if e.aer is not None and not faithful(e, rand) and not plausible(e, diagonal)]
    name = lambda m: table.names.get(m, m)  # noqa: E731
    n = next(iter(rows.values())).comprehensiveness.n
    if both:
        best = rows[both[0]]
        first = _("On {n} test sentences, {method} is both faithful and plausible: removing the source words it ranks "
                  "first lowers the probability of the word written by {drop:.2f} on average (random orders: "
                  "{random:.2f}), and its alignments have an error rate of {aer:.2f} (a diagonal alignment: "
                  "{diagonal:.2f}).").format(n=n, method=name(both[0]), drop=best.comprehensiveness.mean,
                                             random=rand.comprehensiveness.mean, aer=best.aer, diagonal=diagonal)
    else:
        first = _("On {n} test sentences, no explanation is both faithful and plausible.").format(n=n)
    if neither:
        rest = ngettext("{methods} is neither.", "{methods} are neither.", len(neither)).format(
            methods=join([name(m) for m in neither]))
    else:
        rest = _("Every explanation whose alignments were scored is faithful, plausible or both.")
    return first + " " + rest


def join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else _("{first} and {last}").format(first=", ".join(words[:-1]),
                                                                          last=words[-1])


def display_name(method: str) -> str:
    """A method's label on the page (model/methods.py); a layer's or a head's name as it is."""
    return METHODS[method].label if method in METHODS else method


def evaluate(translator, src_lines: list[str], ref_lines: list[str] | None = None, alignment: dict | None = None,
             heads=(), progress: bool = False) -> Table:
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
        t, c = agreement(scores, steps, methods["source"], f.first)
        total, count = total + t, count + c
    tau = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    result = Table(
        n_sentences=len(src_lines), steps_per_sentence=STEPS, orders=ORDERS, bootstrap=BOOTSTRAP, removal="<unk>",
        target="greedy output" if ref_lines is None else "reference, teacher-forced",
        names={m: display_name(m) for side in methods.values() for m in side},
        baselines=None if alignment is None else alignment.get("baselines"),
        **sides(summaries, alignment, methods),
        agreement={"methods": methods["source"], "tau": plain(tau, 4)},
        per_sentence={side: {**{m: [[None if s[side] is None else getattr(s[side].methods[m], k) for k in MEASURES]
                                    for s in summaries] for m in methods[side]},
                             RANDOM: [None if s[side] is None else s[side].random.mean() for s in summaries]}
                      for side in ("source", "prefix")})
    per_sentence = plain(result.per_sentence, 6)
    return dataclasses.replace(result, per_sentence=per_sentence, verdict=verdict(result))


def reference_tokens(translator, reference: str) -> list[str]:
    """A reference's English tokens as the model's vocabulary reads them (<unk> for words it lacks), <eos> last."""
    vocab = translator.tgt_vocab
    words = [w if w in vocab.stoi else vocab.unk for w in vocab.tokenize(reference, "en")]
    if not words:
        raise InputError("a reference line is empty")
    return [*words[:translator.cfg.max_positions - 1], vocab.eos]


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
    result = dataclasses.replace(result, checkpoint=translator.checkpoint_id, data={"src": Path(args.src).name, "ref": None if ref is None else Path(args.ref).name,
                      "lines": len(src), "seconds": round(time.time() - t0, 1), "threads": torch.get_num_threads(),
                      "command": " ".join(["python -m model.faithfulness --src", Path(args.src).name,
                                           *(["--ref", Path(args.ref).name] if ref is not None else []),
                                           *(["--n", str(args.n)] if args.n is not None else []),
                                           *(["--checkpoint", args.checkpoint] if args.checkpoint else []),
                                           "--out", Path(args.out).name])})
    files.write_text(out, files.dumps(result.to_json(), ensure_ascii=False, indent=1) + "\n")
    print(f"{len(src)} sentences in {result.data['seconds']} s: {result.verdict}")
    return 0


USAGE = """usage examples:
    python -m model.faithfulness --src ../shared/data/multi30k/test_2016_flickr.de.gz --n 500 \\
        --out checkpoints/faithfulness.json
    python -m model.inspect faithfulness "Ein Hund läuft über die Wiese."   (one sentence, every step)"""


if __name__ == "__main__":
    from . import cli

    cli.run(main)
