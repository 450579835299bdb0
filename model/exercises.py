"""Exercises in the walk's order, each answered by the model itself (docs/contract.md, "Exercises and the worksheet").

No answer is written here: every one is computed from the model (a translation of a fixed example sentence, its
maps, one head's arithmetic, ALTI+, the position tables, the config, the vocabulary) or from the measurements shipped
beside its checkpoint (head_stats.json, alignment.json, head_importance.json, source_share.json, faithfulness.json,
patching.json). A retrained checkpoint, or the sinusoidal one, gets its own answers; only the questions stay.

Each exercise carries the link parameters that open the page where its answer can be found (views/state.py reads
them: layers, heads and steps from 1, Inside a head's query from 0). The page (views/exercises.py) and the worksheet
(model/worksheet.py) show them; `check` judges an answer.
"""

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from .checkpoint import DEFAULT_CHECKPOINT
from .heads import Head

TOPICS = ("tokens and embeddings", "positions", "scaled dot-product", "masks", "heads",
          "cross-attention and alignment", "decoding", "interventions", "contributions")  # the walk's order

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "assets/examples.json"  # the page's example sentences
TRAIN_LENGTHS = ROOT / "assets/train_lengths.json"  # python -m model.train_lengths
SENTENCE_INDEX = 0  # which example sentence the exercises are about: a choice of sentence, not an answer
SINUSOIDAL = DEFAULT_CHECKPOINT / "sinusoidal"  # the page's second model (views/calls.py), linked as model=sinusoidal
N_OPTIONS = 4  # choices offered per question, at most
NUMBER = re.compile(r"-?(?:[0-9]{1,12}(?:[.,][0-9]{0,12})?|[.,][0-9]{1,12})")  # ASCII only: no "²", "1e999", "١"


@dataclass(frozen=True)
class Exercise:
    number: int  # 1, 2, ... in order; the page says "Exercise 1", ...
    topic: str  # one of TOPICS; exercises sorted by TOPICS order
    question: str  # plain text (no Markdown), the sentence quoted
    params: dict  # the page link's parameters (str -> str) that open the exact page state to explore
    options: tuple  # the choices (str), or () for a typed number
    answer: str  # the right option, or the number as text
    tolerance: float  # typed numbers: right when |given - answer| <= tolerance; 0.0 for choices
    hint: str  # a nudge, not the answer
    why: str  # the explanation shown after answering, with the numbers that decide it


def check(ex: Exercise, given: str) -> bool:
    """Whether `given` answers `ex`: a choice exactly; a number (ASCII digits, one '.' or ',', a leading '-')
    within the tolerance. Never raises: anything else is a wrong answer."""
    try:
        if ex.options:
            return given == ex.answer
        text = given.strip()
        if not NUMBER.fullmatch(text):
            return False
        return abs(float(text.replace(",", ".")) - float(ex.answer)) <= ex.tolerance + 1e-9  # 1e-9: float rounding
    except Exception:  # a page's or a form's value of any type: a wrong answer, never an error
        return False


def link(ex: Exercise, server: str = "") -> str:
    """The exercise's page: server (or nothing, for this page) + "/?" + its parameters."""
    return server.rstrip("/") + "/?" + urlencode(ex.params)


def lesson_params(sentence: str, model_slug: str | None) -> dict:
    """The lesson link's parameters: the walk from stop 1 with this sentence, guess first."""
    params = {"s": sentence, "view": "walk", "stop": "1", "guess": "1"}
    return params | ({"model": model_slug} if model_slug else {})


# --- helpers -------------------------------------------------------------------------------------------------------


def unique(items) -> list:
    """items without repeats, in their first order."""
    return list(dict.fromkeys(items))


def choices(right: str, others, order) -> tuple:
    """The right option and the first others (no repeats), N_OPTIONS at most, sorted by `order` (a key function):
    a stable order that does not give the answer away by its place."""
    return tuple(sorted(unique([right, *others])[:N_OPTIONS], key=order))


def number(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def heads_of(grid, kind: str) -> list[tuple[Head, float]]:
    """Every (Head, value) of an (L, H) table from a shipped JSON, in model order; null cells left out."""
    return [(Head(kind, layer, head), value) for layer, row in enumerate(grid) for head, value in enumerate(row)
            if value is not None]


def head_choices(ranked: list, worst_first: list) -> tuple:
    """The best head's label and the labels of the least-fitting heads, in model order."""
    order = {h.label(): h.order() for h, _ in ranked}
    return choices(ranked[0][0].label(), [h.label() for h, _ in worst_first], lambda s: order[s])


def read_json(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def model_slug(folder: Path) -> str | None:
    """How the page's link names this checkpoint: "sinusoidal" for the second model, nothing for the default."""
    return "sinusoidal" if folder.resolve() == SINUSOIDAL.resolve() else None


def cosine(a, b) -> float:
    return float(a @ b / (math.sqrt(float(a @ a) * float(b @ b)) or 1.0))


# --- the exercises ---------------------------------------------------------------------------------------------------


def exercises(translator, checkpoint_dir) -> list[Exercise]:
    """The exercises of one model, in TOPICS order, numbered from 1. checkpoint_dir: the folder holding the
    measurements shipped beside the checkpoint (head_stats.json, ...)."""
    folder = Path(checkpoint_dir)
    folder = folder.parent if folder.suffix == ".safetensors" else folder
    sentence = json.loads(EXAMPLES.read_text(encoding="utf-8"))["examples"][SENTENCE_INDEX]["de"]
    slug, cfg = model_slug(folder), translator.cfg
    r = translator.translate(sentence)
    inside = translator.inside(sentence)
    contrib = translator.contributions(sentence)
    src, out = r.src_tokens, [s.token for s in r.steps]
    quoted = f"“{sentence}”"
    found = []

    def add(topic, question, view, options, answer, tolerance, hint, why, **params):
        page = {"s": sentence, "view": view, **params} | ({"model": slug} if slug else {})
        found.append((topic, question, page, tuple(options), answer, float(tolerance), hint, why))

    def in_sentence(tokens):  # tokens in sentence order, for choices among the sentence's words
        return lambda s: tokens.index(s)

    # tokens and embeddings
    add("tokens and embeddings", f"How many tokens does the encoder read for {quoted}, <sos> and <eos> included?",
        "walk", (), str(len(src)), 0, "Stop 1 shows the sentence as tokens; count the chips, the two specials too.",
        f"The tokenizer makes {len(src) - 2} tokens of it ({' '.join(src[1:-1])}); with <sos> and <eos>: {len(src)}.",
        stop="1")
    word = src[1]
    word_id = translator.src_vocab.stoi.get(word, 0)
    add("tokens and embeddings", f"Which id does the model's German vocabulary give the first token of {quoted}, "
        f"“{word}”?", "walk", (), str(word_id), 0, "Stop 1 puts each token's id under it.",
        f"“{word}” is entry {word_id} of the German vocabulary of {cfg.src_vocab_size:,} entries (0 to 3 are the "
        f"specials; the rest by how often the training data has them).", stop="1")

    # positions
    lengths = json.loads(TRAIN_LENGTHS.read_text(encoding="utf-8"))["source"]
    longest = max(int(n) for n in lengths)
    add("positions", "How many source positions (with <sos> and <eos>) did the longest German training sentence use?",
        "positions", (), str(longest), 0, "The positional encodings page marks the lengths the training data had.",
        f"Of {sum(lengths.values()):,} training sentences the longest used {longest} of the model's "
        f"{cfg.max_positions} positions; the positions after it were never seen in training.")
    table = translator.position_tables()["source"]  # (P, D)
    P = table.shape[0]
    last = cosine(table[P - 2], table[P - 1])
    add("positions", f"What is the cosine similarity of the last two source positions, {P - 2} and {P - 1} "
        f"(counted from 0), in this model's position table? Answer within 0.05.", "positions", (), number(last),
        0.05, f"The cosine similarity picture of the model's source table: its bottom right corner. No training "
        f"sentence reached past position {longest - 1}.",
        f"cos(p{P - 2}, p{P - 1}) = {last:.3f}. This model's positions are {cfg.positions}: learned rows that no "
        "training sentence reached keep their random start (a similarity near 0), sinusoids stay smooth "
        "(neighbours alike) however far they go.")

    # scaled dot-product
    d_k = cfg.d_model // cfg.n_heads
    add("scaled dot-product", "Each head compares a query with a key by their dot product, divided by √d_k. "
        "What is d_k, the length of one head's query and key vectors?", "inside", (), str(d_k), 0,
        "Inside a head shows q and k as strips of numbers: count them, or divide d_model by the number of heads.",
        f"d_k = d_model / heads = {cfg.d_model} / {cfg.n_heads} = {d_k}: the scores are divided by √{d_k} = "
        f"{math.sqrt(d_k):.2f}.", kind="enc", layer="1", head="1", query="1")
    trace = inside.head("enc", 0, 0, 1)
    best = max(range(len(src)), key=lambda k: float(trace.weights[k]))
    add("scaled dot-product", f"In encoder layer 1, head 1, the query “{src[1]}” (position 1) of {quoted}: which "
        "key gets the largest attention weight?", "inside", unique(src), src[best], 0,
        "Inside a head: the softmax row of this query; the tallest bar.",
        f"softmax(q·k/√{d_k}) puts {float(trace.weights[best]):.3f} on “{src[best]}” (position {best}), more than on "
        "any other key.", kind="enc", layer="1", head="1", query="1")
    add("scaled dot-product", "Same query, same head: how large is that largest weight? Answer within 0.05.",
        "inside", (), number(float(trace.weights[best])), 0.05,
        "The softmax row of Inside a head; each weight is a share of 1.",
        f"The weights of the row sum to 1; “{src[best]}” takes {float(trace.weights[best]):.3f} of it (scaled "
        f"score {float(trace.scaled[best]):.2f}).", kind="enc", layer="1", head="1", query="1")

    # masks
    dec = r.decoder_attentions  # (L, H, T, T)
    step = min(3, len(out))
    seen = sum(1 for k in range(dec.shape[-1]) if float(dec[0, :, step - 1, k].max()) > 0)
    add("masks", f"Decoder self-attention, layer 1, translating {quoted}: how many decoder inputs can step {step} "
        "look at (keys with a weight above 0)?", "dec", (), str(seen), 0,
        f"Row {step} of the decoder map: the mask sets the scores of later inputs to a large negative number.",
        f"Step {step} sees {', '.join(r.tgt_tokens[:seen])}: {seen} inputs, itself and those before it; the causal "
        "mask hides the rest, so their weights are exactly 0.", layer="1", head="mean")
    T = dec.shape[-1]
    zeros = sum(1 for q in range(T) for k in range(T) if float(dec[0, 0, q, k]) == 0.0)
    add("masks", f"Decoder self-attention, layer 1, head 1, for {quoted}: the map has {T} × {T} cells. How many of "
        "them are exactly 0?", "dec", (), str(zeros), 0, "Everything above the diagonal is masked.",
        f"The upper triangle: {T} × ({T} − 1) / 2 = {T * (T - 1) // 2} cells; counted in the map: {zeros}.",
        layer="1", head="1")

    # heads
    stats = read_json(folder, "head_stats.json")["stats"]
    prev = sorted(heads_of(stats["previous_share"]["dec"], "dec"), key=lambda hv: -hv[1])
    pair = (prev[0], prev[-1])
    add("heads", "Over the test set, which of these two decoder self-attention heads is the previous-token head "
        "(the most weight on the word just before)?", "stats", head_choices(list(pair), [pair[1]]),
        prev[0][0].label(), 0, "Head statistics, “on the previous token”: sort by it.",
        f"{prev[0][0].label()} puts {prev[0][1]:.2f} of its weight on the previous token on average, "
        f"{prev[-1][0].label()} {prev[-1][1]:.2f}.", stat="previous_share")
    focus = sorted(heads_of(stats["entropy"]["enc"], "enc"), key=lambda hv: hv[1])
    add("heads", "Over the test set, which encoder self-attention head is the most focused (the lowest entropy)?",
        "stats", head_choices(focus, focus[::-1]), focus[0][0].label(), 0,
        "Head statistics, entropy: 0 nats means all weight on one key.",
        f"{focus[0][0].label()}: {focus[0][1]:.2f} nats on average; the most spread, {focus[-1][0].label()}: "
        f"{focus[-1][1]:.2f}.", stat="entropy")

    # cross-attention and alignment
    t = next((i for i, tok in enumerate(out) if any(c.isalpha() for c in tok)), 0)
    L = cfg.n_dec_layers
    row = r.cross_attentions[L - 1].mean(0)[t]  # (S,) the mean of the last layer's heads
    read = max(range(len(src)), key=lambda k: float(row[k]))
    add("cross-attention and alignment", f"Translating {quoted}, the model writes “{out[t]}” at step {t + 1}. "
        f"Which German token does cross-attention layer {L} (the mean of its heads) read most there?", "cross",
        unique(src), src[read], 0, f"Cross-attention, layer {L}, mean: row “{out[t]}”, the darkest cell.",
        f"The mean of layer {L}'s heads gives “{src[read]}” {float(row[read]):.2f} of step {t + 1}'s weight.",
        layer=str(L), head="mean")
    aer = sorted(heads_of(read_json(folder, "alignment.json")["heads"]["cross"], "cross"), key=lambda hv: hv[1])
    add("cross-attention and alignment", "Which cross-attention head aligns best with the hand-checked word links "
        "(the lowest alignment error rate, AER)?", "align", head_choices(aer, aer[::-1]), aer[0][0].label(), 0,
        "The alignment page scores every head's argmax links against 101 hand-checked sentences.",
        f"{aer[0][0].label()}: AER {aer[0][1]:.2f}; the worst, {aer[-1][0].label()}: {aer[-1][1]:.2f}.")

    # decoding
    probs = [s.prob for s in r.steps]
    unsure = min(range(len(probs)), key=lambda i: probs[i])
    add("decoding", f"Translating {quoted}: at which step (from 1) is the model least sure of the token it picks "
        "(the lowest probability)?", "trace", (), str(unsure + 1), 0,
        "The decoding trace shows each step's probability; step through them.",
        f"Step {unsure + 1} picks “{out[unsure]}” with {probs[unsure]:.2f}; every other step is surer.", step="1")
    add("decoding", f"Translating {quoted}: what probability does the model give its first token, “{out[0]}”? "
        "Answer within 0.05.", "trace", (), number(probs[0]), 0.05, "Step 1 of the decoding trace: the top bar.",
        f"p(“{out[0]}”) = {probs[0]:.3f}; the runner-up, “{r.steps[0].runner_up[0]}”, {r.steps[0].runner_up[1]:.3f}.",
        step="1")

    # interventions
    cut = translator.translate(sentence, heads_off=f"cross.{L - 1}")
    said = [s.token for s in cut.steps]
    k = next((i for i, (a, b) in enumerate(zip(said, out)) if a != b), 0)  # the first step the switch changes
    others = [*(tok for tok, _ in cut.steps[k].top), *(tok for tok, _ in r.steps[min(k, len(out) - 1)].top)]
    if k < len(out):
        others.insert(0, out[k])  # the word the full model says there: the likeliest wrong answer
    add("interventions", f"Switch off every head of cross-attention layer {L} and translate {quoted} again. "
        f"Which token does step {k + 1} say now?", "ablate", choices(said[k], others, str), said[k], 0,
        "Ablate heads: the translation above the page changes as heads go off.",
        f"Without layer {L}'s cross-attention step {k + 1} says “{said[k]}” ({cut.steps[k].prob:.2f}); with it, "
        f"“{out[k] if k < len(out) else ''}”. The whole translation: “{cut.text}” instead of “{r.text}”.",
        off=f"cross.{L}")
    importance = read_json(folder, "head_importance.json")
    drops = sorted((hv for kind, table in importance["kinds"].items() for hv in heads_of(table["bleu"], kind)),
                   key=lambda hv: (hv[1], hv[0].order()))  # the lowest BLEU with the head off first
    base = importance["baseline"]["bleu"]
    add("interventions", "Over the test set, which head costs the most BLEU when it alone is switched off?",
        "importance", head_choices(drops, drops[::-1]), drops[0][0].label(), 0,
        "Head importance: the BLEU drop of each head switched off alone.",
        f"BLEU {base} with every head; {drops[0][1]} without {drops[0][0].label()} (a drop of "
        f"{base - drops[0][1]:.2f}), {drops[-1][1]} without {drops[-1][0].label()}.")
    gender = read_json(folder, "patching.json")["categories"]["gender"]["denoising"]["heads"]["cross"]["mean"]
    carried = sorted(heads_of(gender, "cross"), key=lambda hv: -hv[1])
    add("interventions", "Activation patching over the contrast set: a sentence's gender word changed (Mann ↔ Frau). "
        "Through which cross-attention head does the change travel most (denoising)?", "patch",
        head_choices(carried, carried[::-1]), carried[0][0].label(), 0,
        "Causes: patch one head at a time from the clean run into the changed one.",
        f"Patching {carried[0][0].label()} restores {carried[0][1]:.2f} of the difference on average, the most of "
        "any cross-attention head.", dir="denoising")

    # contributions
    share = float(contrib.source_share[0])
    add("contributions", f"ALTI+, translating {quoted}: what share of the first token “{out[0]}” comes from the "
        "German source (the rest from the English written before)? Answer within 0.05.", "contributions", (),
        number(share), 0.05, "Contributions: the source share of step 1.",
        f"The source tokens together contribute {share:.3f} to step 1; <sos>, the only English input then, "
        f"{1 - share:.3f}.")
    low = read_json(folder, "source_share.json")["low_share_threshold"]["per_step"]
    add("contributions", "Below which source share does the page flag a step as drawing little on the German (the "
        "lowest 5% of test-set steps)? Answer within 0.01.", "contributions", (), number(low, 4), 0.01,
        "Contributions: the note about steps that draw little on the source names the threshold.",
        f"5% of the test set's steps have a source share below {low:.4f}.")
    faith = read_json(folder, "faithfulness.json")
    names = faith.get("names", {})
    comp = sorted(((m, v["comprehensiveness"]["mean"]) for m, v in faith["source"].items() if m != "random"),
                  key=lambda mv: -mv[1])
    label = {m: names.get(m, m) for m, _ in comp}
    order = {label[m]: i for i, (m, _) in enumerate(sorted(comp))}
    add("contributions", "Which explanation method is the most faithful on the German side by comprehensiveness "
        "(its top-ranked source tokens removed, the chosen word's probability falls the most)?", "faithful",
        choices(label[comp[0][0]], [label[m] for m, _ in comp[::-1]], lambda s: order[s]), label[comp[0][0]], 0,
        "Faithfulness: the test set's table, comprehensiveness of the source side.",
        f"{label[comp[0][0]]}: {comp[0][1]:.3f}, the largest fall; {label[comp[-1][0]]} the smallest, "
        f"{comp[-1][1]:.3f}.", side="source")

    assert [TOPICS.index(f[0]) for f in found] == sorted(TOPICS.index(f[0]) for f in found), "out of the walk's order"
    return [Exercise(n, *f) for n, f in enumerate(found, 1)]
