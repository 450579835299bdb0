"""Exercises in the walk's order, each answered by the model itself (docs/contract.md, "Exercises and the worksheet").

No answer is written here: every one is computed from the model (a translation of a fixed example sentence, its
maps, one head's arithmetic, ALTI+, the position tables, the config, the vocabulary) or from the measurements shipped
beside its checkpoint (head_stats.json, alignment.json, head_importance.json, source_share.json, faithfulness.json,
patching.json). A retrained checkpoint, or the sinusoidal one, gets its own answers; only the questions stay.

Each exercise carries the link parameters that open the page where its answer can be found (views/state.py reads
them: layers, heads and steps from 1, Inside a head's query from 0). The page (views/exercises.py) and the worksheet
(lesson/worksheet.py) show them; `check` judges an answer.

Each exercise is one small function registered with `@question(topic, title, reads)` in QUESTIONS, in the walk's
order: it reads what it needs of a Sheet (the sentence's translation, one head's arithmetic, ALTI+, the shipped
tables) and returns Sheet.ask(question, view, options, answer, tolerance, hint, why, **link parameters), or raises
NotAsked when the sentence cannot carry its question (too few steps, say). `reads` names what an exercise reads
instead of the sentence (a shipped table, the config): its answer is the same for every sentence. A new exercise is
one more such function in its topic's place.
"""

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from model.checkpoint import DEFAULT_CHECKPOINT
from model.errors import InputError
from model.faithfulness import Table
from model.heads import Head
from model.i18n import N_, SOURCE, _, language
from model.languages import language_names

TOPICS = (N_("tokens and embeddings"), N_("positions"), N_("scaled dot-product"), N_("masks"), N_("heads"),
          N_("cross-attention and alignment"), N_("decoding"), N_("interventions"),
          N_("contributions"))  # the walk's order, in English (each shown as _(topic))

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
    title: str = ""  # a few words that name it in a list ("The least sure step")
    reads: str = ""  # what it reads instead of the sentence ("the test set's ..."); "" when it asks of the sentence


@dataclass(frozen=True)
class Skipped:
    """An exercise that this sentence cannot carry, and why: the page and the command say so."""

    number: int
    title: str
    reason: str  # plain text: what the sentence lacks


@dataclass(frozen=True)
class Lesson:
    """The exercises asked of one sentence, and those left out for it; numbers are places in QUESTIONS, so that an
    exercise keeps its number whatever the sentence."""

    sentence: str
    exercises: list  # Exercise, by number
    skipped: list  # Skipped, by number


class NotAsked(Exception):
    """Raised by a question function whose question this sentence cannot carry; the message says why."""


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


def in_language(params: dict) -> dict:
    """A link's parameters with the language they are read in (lang=, not written for English, the page's own)."""
    return params | ({"lang": language()} if language() != SOURCE else {})


def link(ex: Exercise, server: str = "") -> str:
    """The exercise's page: server (or nothing, for this page) + "/?" + its parameters, in this language."""
    return server.rstrip("/") + "/?" + urlencode(in_language(ex.params))


def lesson_params(sentence: str, model_slug: str | None) -> dict:
    """The lesson link's parameters: the walk from stop 1 with this sentence, guess first, in this language."""
    params = {"s": sentence, "view": "walk", "stop": "1", "guess": "1"}
    return in_language(params | ({"model": model_slug} if model_slug else {}))


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
    order = {h.label(): h.order() for h, _v in ranked}
    return choices(ranked[0][0].label(), [h.label() for h, _v in worst_first], lambda s: order[s])


def read_json(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def model_slug(folder: Path) -> str | None:
    """How the page's link names this checkpoint: "sinusoidal" for the second model, nothing for the default."""
    return "sinusoidal" if folder.resolve() == SINUSOIDAL.resolve() else None


def cosine(a, b) -> float:
    return float(a @ b / (math.sqrt(float(a @ a) * float(b @ b)) or 1.0))


# --- what every question reads ---------------------------------------------------------------------------------------


class Sheet:
    """One model's sentence and what the questions read of it: its translation, one head's arithmetic and ALTI+
    (each computed once, when a question first asks), the config, and the tables shipped beside the checkpoint."""

    def __init__(self, translator, folder: Path, sentence: str):
        self.translator, self.folder, self.sentence = translator, folder, sentence
        self.slug, self.cfg = model_slug(folder), translator.cfg
        self.quoted = f"“{sentence}”"
        self.source, self.target = language_names(translator.origin["languages"])  # "German", or "source (ko)"
        self.first = int(self.cfg.source_start)  # the first real source token: after <sos>, where there is one
        self.marian = translator.origin["family"] == "marian"  # trained by its makers, on a corpus not known here

    @functools.cached_property
    def r(self):
        return self.translator.translate(self.sentence)

    @functools.cached_property
    def inside(self):
        return self.translator.inside(self.sentence)

    @functools.cached_property
    def contrib(self):
        return self.translator.contributions(self.sentence)

    @property
    def src(self) -> list[str]:
        return self.r.src_tokens

    @property
    def out(self) -> list[str]:
        return [s.token for s in self.r.steps]

    def table(self, name: str) -> dict:
        """A table beside the checkpoint; NotAsked naming it (and the command that builds it) when it is not there."""
        if not (self.folder / name).is_file():
            raise NotAsked(_("it reads {name}, which is not beside this checkpoint (python -m model.tables builds it)")
                           .format(name=name))
        return read_json(self.folder, name)

    def ask(self, question, view, options, answer, tolerance, hint, why, **params) -> tuple:
        """One question's fields after its topic: the page link opens `view` on this sentence (and model)."""
        page = {"s": self.sentence, "view": view, **params} | ({"model": self.slug} if self.slug else {})
        return question, page, tuple(options), answer, float(tolerance), hint, why


# --- the exercises, one small function each, in the walk's order ------------------------------------------------------

QUESTIONS: list[tuple[str, Callable[[Sheet], tuple]]] = []  # (topic, question function), in the order asked
TITLES: dict[Callable, tuple[str, str]] = {}  # question function -> (title, reads), in English (translated when asked)

# What the exercises that do not ask of the sentence read instead (Exercise.reads)
TRAIN = N_("the lengths of the training sentences (assets/train_lengths.json)")
POSTABLE = N_("the model's table of source positions")
CONFIG = N_("the model's configuration")
HEADSTATS = N_("the test set's head statistics (head_stats.json)")
ALIGN = N_("the hand-checked alignments (alignment.json)")
IMPORTANCE = N_("the test set's head importance (head_importance.json)")
PATCHING = N_("the contrast set's activation patching (patching.json)")
SHARE = N_("the test set's source shares (source_share.json)")
FAITH = N_("the test set's faithfulness table (faithfulness.json)")


def question(topic: str, title: str, reads: str = ""):
    """Register a question function of `topic` (one of TOPICS), named `title` in lists: it takes a Sheet and
    returns Sheet.ask(...). `reads`: what it reads instead of the sentence, when its answer is not the sentence's."""
    assert topic in TOPICS, topic

    def register(fn):
        QUESTIONS.append((topic, fn))
        TITLES[fn] = title, reads
        return fn

    return register


@question("tokens and embeddings", N_("Tokens the encoder reads"))
def token_count(c: Sheet) -> tuple:
    src = c.src
    if c.first:
        return c.ask(_("How many tokens does the encoder read for {sentence}, <sos> and <eos> included?").format(
                         sentence=c.quoted), "walk", (), str(len(src)), 0,
                     _("Stop 1 shows the sentence as tokens; count the chips, the two specials too."),
                     _("The tokenizer makes {k} tokens of it ({tokens}); with <sos> and <eos>: {n}.").format(
                         k=len(src) - 2, tokens=" ".join(src[1:-1]), n=len(src)), stop="1")
    return c.ask(_("How many tokens does the encoder read for {sentence}, the end token {end} included?").format(
                     sentence=c.quoted, end=src[-1]), "walk", (), str(len(src)), 0,
                 _("Stop 1 shows the sentence as pieces; count the chips, the end token too."),
                 _("SentencePiece makes {k} pieces of it ({tokens}); with {end}: {n}.").format(
                     k=len(src) - 1, tokens=" ".join(src[:-1]), end=src[-1], n=len(src)), stop="1")


@question("tokens and embeddings", N_("The first token's id"))
def token_id(c: Sheet) -> tuple:
    word, vocab = c.src[c.first], c.translator.src_vocab
    word_id = vocab.stoi.get(word, vocab.unk_id)
    order = (_("0 to 3 are the specials; the rest by how often the training data has them") if vocab.ours else
             _("in the order of the model's own vocabulary file"))
    size = f"{c.cfg.src_vocab_size:,}"
    why = (_("“{word}” is entry {id} of the {source} vocabulary of {size} entries ({order}).")
           if word in vocab.stoi else
           _("“{word}” is not in the {source} vocabulary of {size} entries: the model reads it as {unk}, entry "
             "{id}.")).format(word=word, id=word_id, source=c.source, size=size, order=order, unk=vocab.unk)
    return c.ask(_("Which id does the model's {source} vocabulary give the first token of {sentence}, “{word}”?")
                 .format(source=c.source, sentence=c.quoted, word=word),
                 "walk", (), str(word_id), 0, _("Stop 1 puts each token's id under it."), why, stop="1")


def longest_training_source() -> tuple[int, dict]:
    """The most source positions a German training sentence used, and the table of lengths it comes from."""
    lengths = json.loads(TRAIN_LENGTHS.read_text(encoding="utf-8"))["source"]
    return max(int(n) for n in lengths), lengths


@question("positions", N_("The longest training source"), TRAIN)
def longest_position(c: Sheet) -> tuple:
    if c.marian:
        raise NotAsked(_("it reads the lengths of the model's training sentences, and this model's makers' corpus is "
                         "not known here"))
    longest, lengths = longest_training_source()
    return c.ask(_("How many source positions (with <sos> and <eos>) did the longest German training sentence use?"),
                 "positions", (), str(longest), 0,
                 _("The positional encodings page marks the lengths the training data had."),
                 _("Of {n:,} training sentences the longest used {longest} of the model's {max} positions; the "
                   "positions after it were never seen in training.").format(n=sum(lengths.values()), longest=longest,
                                                                            max=c.cfg.max_positions))


@question("positions", N_("The last two positions' cosine"), POSTABLE)
def last_positions_cosine(c: Sheet) -> tuple:
    longest = longest_training_source()[0]
    table = c.translator.position_tables()["source"]  # (P, D)
    P = table.shape[0]
    last = cosine(table[P - 2], table[P - 1])
    hint = _("The cosine similarity picture of the model's source table: its bottom right corner.")
    if not c.marian:
        hint += " " + _("No training sentence reached past position {p}.").format(p=longest - 1)
    return c.ask(_("What is the cosine similarity of the last two source positions, {a} and {b} (counted from 0), in "
                   "this model's position table? Answer within 0.05.").format(a=P - 2, b=P - 1), "positions", (),
                 number(last), 0.05, hint,
                 _("cos(p{a}, p{b}) = {cos:.3f}. This model's positions are {positions}: learned rows that no training "
                   "sentence reached keep their random start (a similarity near 0), sinusoids stay smooth (neighbours "
                   "alike) however far they go.").format(a=P - 2, b=P - 1, cos=last, positions=c.cfg.positions))


def d_k(c: Sheet) -> int:
    return c.cfg.d_model // c.cfg.n_heads


@question("scaled dot-product", N_("The length d_k"), CONFIG)
def key_length(c: Sheet) -> tuple:
    cfg, dk = c.cfg, d_k(c)
    return c.ask(_("Each head compares a query with a key by their dot product, divided by √d_k. What is d_k, the "
                   "length of one head's query and key vectors?"), "inside", (), str(dk), 0,
                 _("Inside a head shows q and k as strips of numbers: count them, or divide d_model by the number of "
                   "heads."),
                 _("d_k = d_model / heads = {d} / {h} = {dk}: the scores are divided by √{dk} = {root:.2f}.").format(
                     d=cfg.d_model, h=cfg.n_heads, dk=dk, root=math.sqrt(dk)),
                 kind="enc", layer="1", head="1", query="1")


def first_query(c: Sheet):
    """Encoder layer 1, head 1, query 1: its trace and the key it weighs most."""
    trace = c.inside.head("enc", 0, 0, 1)
    return trace, max(range(len(c.src)), key=lambda k: float(trace.weights[k]))


@question("scaled dot-product", N_("The key a query weighs most"))
def heaviest_key(c: Sheet) -> tuple:
    src, (trace, best) = c.src, first_query(c)
    return c.ask(_("In encoder layer 1, head 1, the query “{token}” (position 1) of {sentence}: which key gets the "
                   "largest attention weight?").format(token=src[1], sentence=c.quoted), "inside", unique(src),
                 src[best], 0, _("Inside a head: the softmax row of this query; the tallest bar."),
                 _("softmax(q·k/√{dk}) puts {w:.3f} on “{token}” (position {k}), more than on any other key.").format(
                     dk=d_k(c), w=float(trace.weights[best]), token=src[best], k=best),
                 kind="enc", layer="1", head="1", query="1")


@question("scaled dot-product", N_("That key's weight"))
def heaviest_weight(c: Sheet) -> tuple:
    src, (trace, best) = c.src, first_query(c)
    return c.ask(_("Same query, same head: how large is that largest weight? Answer within 0.05."), "inside", (),
                 number(float(trace.weights[best])), 0.05,
                 _("The softmax row of Inside a head; each weight is a share of 1."),
                 _("The weights of the row sum to 1; “{token}” takes {w:.3f} of it (scaled score {score:.2f}).")
                 .format(token=src[best], w=float(trace.weights[best]), score=float(trace.scaled[best])),
                 kind="enc", layer="1", head="1", query="1")


@question("masks", N_("Inputs a decoder step sees"))
def visible_inputs(c: Sheet) -> tuple:
    r = c.r
    dec = r.decoder_attentions  # (L, H, T, T)
    step = 3
    if len(c.out) < step:
        raise NotAsked(_("the translation has {n} steps, and the question asks about step {step}").format(
            n=len(c.out), step=step))
    seen = sum(1 for k in range(dec.shape[-1]) if float(dec[0, :, step - 1, k].max()) > 0)
    return c.ask(_("Decoder self-attention, layer 1, translating {sentence}: how many decoder inputs can step {step} "
                   "look at (keys with a weight above 0)?").format(sentence=c.quoted, step=step), "dec", (),
                 str(seen), 0,
                 _("Row {step} of the decoder map: the mask sets the scores of later inputs to a large negative "
                   "number.").format(step=step),
                 _("Step {step} sees {tokens}: {n} inputs, itself and those before it; the causal mask hides the "
                   "rest, so their weights are exactly 0.").format(step=step, tokens=", ".join(r.tgt_tokens[:seen]),
                                                                   n=seen), layer="1", head="mean")


@question("masks", N_("Masked cells"))
def masked_cells(c: Sheet) -> tuple:
    dec = c.r.decoder_attentions
    T = dec.shape[-1]
    zeros = sum(1 for q in range(T) for k in range(T) if float(dec[0, 0, q, k]) == 0.0)
    return c.ask(_("Decoder self-attention, layer 1, head 1, for {sentence}: the map has {T} × {T} cells. How many of "
                   "them are exactly 0?").format(sentence=c.quoted, T=T), "dec", (), str(zeros), 0,
                 _("Everything above the diagonal is masked."),
                 _("The upper triangle: {T} × ({T} − 1) / 2 = {upper} cells; counted in the map: {zeros}.").format(
                     T=T, upper=T * (T - 1) // 2, zeros=zeros), layer="1", head="1")


@question("heads", N_("The previous-token head"), HEADSTATS)
def previous_token_head(c: Sheet) -> tuple:
    stats = c.table("head_stats.json")["stats"]
    prev = sorted(heads_of(stats["previous_share"]["dec"], "dec"), key=lambda hv: -hv[1])
    pair = (prev[0], prev[-1])
    return c.ask(_("Over the test set, which of these two decoder self-attention heads is the previous-token head "
                   "(the most weight on the word just before)?"), "stats", head_choices(list(pair), [pair[1]]),
                 prev[0][0].label(), 0, _("Head statistics, “on the previous token”: sort by it."),
                 _("{head} puts {w:.2f} of its weight on the previous token on average, {other} {other_w:.2f}.")
                 .format(head=prev[0][0].label(), w=prev[0][1], other=prev[-1][0].label(), other_w=prev[-1][1]),
                 stat="previous_share")


@question("heads", N_("The most focused head"), HEADSTATS)
def most_focused_head(c: Sheet) -> tuple:
    focus = sorted(heads_of(c.table("head_stats.json")["stats"]["entropy"]["enc"], "enc"), key=lambda hv: hv[1])
    return c.ask(_("Over the test set, which encoder self-attention head is the most focused (the lowest entropy)?"),
                 "stats", head_choices(focus, focus[::-1]), focus[0][0].label(), 0,
                 _("Head statistics, entropy: 0 nats means all weight on one key."),
                 _("{head}: {e:.2f} nats on average; the most spread, {other}: {other_e:.2f}.").format(
                     head=focus[0][0].label(), e=focus[0][1], other=focus[-1][0].label(), other_e=focus[-1][1]),
                 stat="entropy")


@question("cross-attention and alignment", N_("The German token read most"))
def token_read_most(c: Sheet) -> tuple:
    src, out = c.src, c.out
    t = next((i for i, tok in enumerate(out) if any(ch.isalpha() for ch in tok)), 0)
    L = c.cfg.n_dec_layers
    row = c.r.cross_attentions[L - 1].mean(0)[t]  # (S,) the mean of the last layer's heads
    read = max(range(len(src)), key=lambda k: float(row[k]))
    return c.ask(_("Translating {sentence}, the model writes “{word}” at step {step}. Which {source} token does "
                   "cross-attention layer {L} (the mean of its heads) read most there?").format(
                     sentence=c.quoted, word=out[t], step=t + 1, source=c.source, L=L), "cross", unique(src),
                 src[read], 0, _("Cross-attention, layer {L}, mean: row “{word}”, the darkest cell.").format(
                     L=L, word=out[t]),
                 _("The mean of layer {L}'s heads gives “{token}” {w:.2f} of step {step}'s weight.").format(
                     L=L, token=src[read], w=float(row[read]), step=t + 1), layer=str(L), head="mean")


@question("cross-attention and alignment", N_("The best-aligning head"), ALIGN)
def best_aligning_head(c: Sheet) -> tuple:
    aer = sorted(heads_of(c.table("alignment.json")["heads"]["cross"], "cross"), key=lambda hv: hv[1])
    return c.ask(_("Which cross-attention head aligns best with the hand-checked word links (the lowest alignment "
                   "error rate, AER)?"), "align", head_choices(aer, aer[::-1]), aer[0][0].label(), 0,
                 _("The alignment page scores every head's argmax links against 101 hand-checked sentences."),
                 _("{head}: AER {aer:.2f}; the worst, {other}: {other_aer:.2f}.").format(
                     head=aer[0][0].label(), aer=aer[0][1], other=aer[-1][0].label(), other_aer=aer[-1][1]))


@question("decoding", N_("The least sure step"))
def least_sure_step(c: Sheet) -> tuple:
    probs, out = [s.prob for s in c.r.steps], c.out
    if len(probs) < 2:
        raise NotAsked(_("the translation has {n} step, and the question compares steps").format(n=len(probs)))
    unsure = min(range(len(probs)), key=lambda i: probs[i])
    return c.ask(_("Translating {sentence}: at which step (from 1) is the model least sure of the token it picks (the "
                   "lowest probability)?").format(sentence=c.quoted), "trace", (), str(unsure + 1), 0,
                 _("The decoding trace shows each step's probability; step through them."),
                 _("Step {step} picks “{word}” with {p:.2f}; every other step is surer.").format(
                     step=unsure + 1, word=out[unsure], p=probs[unsure]), step="1")


@question("decoding", N_("The first token's probability"))
def first_token_probability(c: Sheet) -> tuple:
    first = c.r.steps[0]
    return c.ask(_("Translating {sentence}: what probability does the model give its first token, “{word}”? Answer "
                   "within 0.05.").format(sentence=c.quoted, word=c.out[0]), "trace", (), number(first.prob), 0.05,
                 _("Step 1 of the decoding trace: the top bar."),
                 _("p(“{word}”) = {p:.3f}; the runner-up, “{runner}”, {q:.3f}.").format(
                     word=c.out[0], p=first.prob, runner=first.runner_up[0], q=first.runner_up[1]), step="1")


@question("interventions", N_("A cross layer switched off"))
def last_cross_layer_off(c: Sheet) -> tuple:
    r, out, L = c.r, c.out, c.cfg.n_dec_layers
    cut = c.translator.translate(c.sentence, heads_off=f"cross.{L - 1}")
    said = [s.token for s in cut.steps]
    k = next((i for i, (a, b) in enumerate(zip(said, out)) if a != b), min(len(said), len(out)))  # the first change
    if k >= len(said):
        raise NotAsked(_("switching off cross-attention layer {L} changes no step of its translation").format(L=L))
    others = [*(tok for tok, _p in cut.steps[k].top), *(tok for tok, _p in r.steps[min(k, len(out) - 1)].top)]
    if k < len(out):
        others.insert(0, out[k])  # the word the full model says there: the likeliest wrong answer
    return c.ask(_("Switch off every head of cross-attention layer {L} and translate {sentence} again. Which token "
                   "does step {step} say now?").format(L=L, sentence=c.quoted, step=k + 1), "ablate",
                 choices(said[k], others, str), said[k], 0,
                 _("Ablate heads: the translation above the page changes as heads go off."),
                 _("Without layer {L}'s cross-attention step {step} says “{word}” ({p:.2f}); with it, “{full}”. The "
                   "whole translation: “{cut}” instead of “{text}”.").format(
                     L=L, step=k + 1, word=said[k], p=cut.steps[k].prob, full=out[k] if k < len(out) else "",
                     cut=cut.text, text=r.text), off=f"cross.{L}")


@question("interventions", N_("The costliest head"), IMPORTANCE)
def costliest_head(c: Sheet) -> tuple:
    importance = c.table("head_importance.json")
    drops = sorted((hv for kind, table in importance["kinds"].items() for hv in heads_of(table["bleu"], kind)),
                   key=lambda hv: (hv[1], hv[0].order()))  # the lowest BLEU with the head off first
    base = importance["baseline"]["bleu"]
    return c.ask(_("Over the test set, which head costs the most BLEU when it alone is switched off?"), "importance",
                 head_choices(drops, drops[::-1]), drops[0][0].label(), 0,
                 _("Head importance: the BLEU drop of each head switched off alone."),
                 _("BLEU {base} with every head; {bleu} without {head} (a drop of {drop:.2f}), {other_bleu} without "
                   "{other}.").format(base=base, bleu=drops[0][1], head=drops[0][0].label(),
                                      drop=base - drops[0][1], other_bleu=drops[-1][1], other=drops[-1][0].label()))


@question("interventions", N_("The head a gender change travels through"), PATCHING)
def gender_carrying_head(c: Sheet) -> tuple:
    categories = c.table("patching.json")["categories"]
    if "gender" not in categories:
        raise NotAsked(_("no gender pair of the contrast set changes this model's translation (patching.json)"))
    gender = categories["gender"]["denoising"]["heads"]["cross"]["mean"]
    carried = sorted(heads_of(gender, "cross"), key=lambda hv: -hv[1])
    return c.ask(_("Activation patching over the contrast set: a sentence's gender word changed (Mann ↔ Frau). "
                   "Through which cross-attention head does the change travel most (denoising)?"), "patch",
                 head_choices(carried, carried[::-1]), carried[0][0].label(), 0,
                 _("Causes: patch one head at a time from the clean run into the changed one."),
                 _("Patching {head} restores {share:.2f} of the difference on average, the most of any "
                   "cross-attention head.").format(head=carried[0][0].label(), share=carried[0][1]), dir="denoising")


@question("contributions", N_("The first step's source share"))
def first_step_source_share(c: Sheet) -> tuple:
    share = float(c.contrib.source_share[0])
    return c.ask(_("ALTI+, translating {sentence}: what share of the first token “{word}” comes from the {source} "
                   "source (the rest from the {target} written before)? Answer within 0.05.").format(
                     sentence=c.quoted, word=c.out[0], source=c.source, target=c.target),
                 "contributions", (), number(share), 0.05, _("Contributions: the source share of step 1."),
                 _("The source tokens together contribute {share:.3f} to step 1; {start}, the only {target} input "
                   "then, {rest:.3f}.").format(share=share, start=c.r.tgt_tokens[0], target=c.target,
                                               rest=1 - share))


@question("contributions", N_("The low source-share threshold"), SHARE)
def low_share_threshold(c: Sheet) -> tuple:
    low = c.table("source_share.json")["low_share_threshold"]["per_step"]
    return c.ask(_("Below which source share does the page flag a step as drawing little on the {source} (the "
                   "lowest 5% of test-set steps)? Answer within 0.01.").format(source=c.source),
                 "contributions", (), number(low, 4), 0.01,
                 _("Contributions: the note about steps that draw little on the source names the threshold."),
                 _("5% of the test set's steps have a source share below {low:.4f}.").format(low=low))


@question("contributions", N_("The most faithful method"), FAITH)
def most_faithful_method(c: Sheet) -> tuple:
    faith = Table.from_json(c.table("faithfulness.json"))
    names = faith.names
    comp = sorted(((m, v.comprehensiveness.mean) for m, v in faith.source.rows.items()), key=lambda mv: -mv[1])
    label = {m: names.get(m, m) for m, _v in comp}
    order = {label[m]: i for i, (m, _v) in enumerate(sorted(comp))}
    return c.ask(_("Which explanation method is the most faithful on the {source} side by comprehensiveness (its "
                   "top-ranked source tokens removed, the chosen word's probability falls the most)?").format(
                     source=c.source), "faithful",
                 choices(label[comp[0][0]], [label[m] for m, _v in comp[::-1]], lambda s: order[s]),
                 label[comp[0][0]], 0, _("Faithfulness: the test set's table, comprehensiveness of the source side."),
                 _("{best}: {best_v:.3f}, the largest fall; {worst} the smallest, {worst_v:.3f}.").format(
                     best=label[comp[0][0]], best_v=comp[0][1], worst=label[comp[-1][0]], worst_v=comp[-1][1]),
                 side="source")


def lesson_sentence() -> str:
    """The sentence the exercises are about: the page's example number SENTENCE_INDEX."""
    return json.loads(EXAMPLES.read_text(encoding="utf-8"))["examples"][SENTENCE_INDEX]["de"]


def lesson_of(translator, checkpoint_dir, sentence: str | None = None) -> Lesson:
    """Every registered question asked of `sentence` (default: lesson_sentence()) on one model, in TOPICS order:
    those this sentence can carry as Exercises, the rest as Skipped with the reason. Exercise n is QUESTIONS[n - 1]
    for every sentence. checkpoint_dir: the folder holding the measurements shipped beside the checkpoint
    (head_stats.json, ...)."""
    folder = Path(checkpoint_dir)
    folder = folder.parent if folder.suffix == ".safetensors" else folder
    sheet = Sheet(translator, folder, lesson_sentence() if sentence is None else sentence)
    topics = [topic for topic, _fn in QUESTIONS]
    assert [TOPICS.index(t) for t in topics] == sorted(TOPICS.index(t) for t in topics), "out of the walk's order"
    asked, skipped = [], []
    for n, (topic, ask) in enumerate(QUESTIONS, 1):
        title, reads = _(TITLES[ask][0]), _(TITLES[ask][1]) if TITLES[ask][1] else ""
        try:
            asked.append(Exercise(n, topic, *ask(sheet), title=title, reads=reads))
        except NotAsked as e:
            skipped.append(Skipped(n, title, str(e)))
    return Lesson(sheet.sentence, asked, skipped)


def exercises(translator, checkpoint_dir, sentence: str | None = None) -> list[Exercise]:
    """The exercises `sentence` (default: lesson_sentence()) can carry on one model: lesson_of(...).exercises."""
    return lesson_of(translator, checkpoint_dir, sentence).exercises


def chosen(lesson: Lesson, numbers) -> list[Exercise]:
    """The lesson's exercises of these numbers (as the page shows them, from 1), in the walk's order; InputError
    naming a number that is no exercise, or one this sentence cannot carry, and why."""
    by_number = {ex.number: ex for ex in lesson.exercises}
    left_out = {sk.number: sk for sk in lesson.skipped}
    for n in numbers:
        if n in left_out:
            raise InputError(_("exercise {n} ({title}) is left out for “{sentence}”: {reason}").format(
                n=n, title=left_out[n].title, sentence=lesson.sentence, reason=left_out[n].reason))
        if n not in by_number:
            raise InputError(_("there is no exercise {n}: the exercises are 1 to {total}").format(
                n=n, total=len(QUESTIONS)))
    return [by_number[n] for n in sorted(set(numbers))]
