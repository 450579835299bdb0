"""The plain results of the model: the only thing viz/ and the app see of it.

No torch here: tokens are strings, maps are numpy arrays shaped layers x heads x query x key.
"""

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError
from .vocab import join_pieces
from .i18n import N_

# The three kinds of attention map a Translation holds (encoder self, decoder self, cross), by their names on the
# page (each kind's attention view) and in the HTML report (viz/report.py).
KIND_NAMES = {"enc": N_("Encoder self-attention"), "dec": N_("Decoder self-attention"), "cross": N_("Cross-attention")}


def plain(value, digits: int | None = None):
    """A result as JSON holds it, the one way every result is written: a dataclass becomes a dict of its fields in
    order, a tuple or an array a list, a numpy number a Python one; a float is rounded to `digits` (Python's round)
    and a NaN or infinity becomes None. Strings, ints, bools and None stay."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), digits) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: plain(v, digits) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v, digits) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return None if not math.isfinite(x) else x if digits is None else round(x, digits)
    return value


@dataclass(frozen=True)
class Step:
    """One generated token: what was chosen, how sure the model was, and what else it considered."""

    token: str
    prob: float  # probability of the chosen token
    entropy: float  # entropy of the whole next-token distribution, in nats
    top: tuple  # ((token, prob), ...) the k most likely tokens, most likely first

    @property
    def runner_up(self) -> tuple:
        """The most likely token other than the chosen one, and its probability."""
        return next(((t, p) for t, p in self.top if t != self.token), ("", 0.0))

    @property
    def margin(self) -> float:
        return self.prob - self.runner_up[1]


@dataclass(frozen=True)
class Forced:
    """One sentence forced through one output, made by `Translator.force`: what every analysis of that output
    starts from (one teacher-forced pass, `Translator.capture`, serves them all).

    The output is the greedy translation, a given list of tokens, or a reference (its words as typed, a word the
    model lacks read as <unk>: `output_ids` holds what the model reads)."""

    source: str  # the sentence as typed
    src_tokens: tuple  # S labels: <sos> tokens <eos>, cut to the model's positions
    src_ids: tuple  # (S,)
    cut: int  # source tokens cut to fit the positions
    output_tokens: tuple  # T: the steps' tokens, <eos> last when the output ends
    output_ids: tuple  # (T,)
    sos_id: int  # the decoder's first input
    sos: str = "<sos>"  # its token (the vocabulary's name for it)

    @property
    def tgt_tokens(self) -> list:
        """The decoder's T inputs: <sos> and the output shifted by one."""
        return [self.sos, *self.output_tokens[:-1]]

    @property
    def tgt_ids(self) -> tuple:
        return (self.sos_id, *self.output_ids[:-1])


@dataclass(frozen=True)
class Translation:
    source: str  # the sentence as typed
    src_tokens: list  # S key labels of the source: <sos> tokens <eos>
    tgt_tokens: list  # T decoder inputs: <sos> then every generated token but the last
    output_tokens: list  # the translation's tokens, no specials
    encoder_attentions: np.ndarray  # (L, H, S, S)
    decoder_attentions: np.ndarray  # (L, H, T, T), zero above the diagonal
    cross_attentions: np.ndarray  # (L, H, T, S)
    steps: list  # T Steps, one per generated token (the last is <eos> unless cut at max length)
    src_unknown: list = field(default_factory=list)  # S flags: True where the source token is <unk> to the model
    truncated: int = 0  # how many source tokens were cut to fit the model's positions
    device: str = "cpu"
    pieces: bool = False  # the tokens are SentencePiece pieces (a Marian model's), "▁" starting each word

    @property
    def text(self) -> str:
        """The translation as model.translate prints it: output tokens joined by single spaces, or pieces joined
        at their word starts."""
        return join_pieces(self.output_tokens) if self.pieces else " ".join(self.output_tokens)

    def maps(self, kind: str) -> np.ndarray:
        """The attention maps of one kind (KIND_NAMES), every layer and head: "enc" (L, H, S, S), "dec" (L, H, T, T),
        "cross" (L, H, T, S)."""
        maps = {"enc": self.encoder_attentions, "dec": self.decoder_attentions, "cross": self.cross_attentions}
        if kind not in maps:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(maps)}")
        return maps[kind]

    def to_json(self) -> dict:
        """The `--json` line of model.translate (docs/contract.md)."""
        return {
            "source": self.source,
            "translation": self.text,
            "src_tokens": self.src_tokens,
            "tgt_tokens": self.tgt_tokens,
            "output_tokens": self.output_tokens,
            "src_unknown": self.src_unknown,
            "truncated": self.truncated,
            "encoder_attentions": self.encoder_attentions.tolist(),
            "decoder_attentions": self.decoder_attentions.tolist(),
            "cross_attentions": self.cross_attentions.tolist(),
            "steps": [{"token": s.token, "prob": s.prob, "entropy": s.entropy, "top": [list(t) for t in s.top]}
                      for s in self.steps],
        }


@dataclass(frozen=True)
class Candidate:
    """One finished hypothesis of a beam search."""

    tokens: list  # generated tokens, <eos> included when it ended with one
    score: float  # summed log-probability of the tokens
    normalized: float  # score / len(tokens) ** alpha: what the beams are ranked by


@dataclass(frozen=True)
class BeamSearch:
    """What a beam search found and how: the best translation, the n-best list and every step's candidates."""

    width: int  # beam width K
    best: Translation  # the top candidate, with maps and steps from one teacher-forced pass
    nbest: list  # Candidates, best first (at most K)
    trace: list  # per step, the 2K candidates looked at:
    #              [{"tokens": [...], "score": float, "status": "kept" | "finished" | "pruned"}]


@dataclass(frozen=True)
class ReferenceScore:
    """A given English reference, teacher-forced: its per-token probabilities and maps, and its loss."""

    translation: Translation  # the reference as output: steps hold each reference token's probability
    loss: float  # mean cross-entropy per reference token, <eos> included (nats)

    @property
    def ppl(self) -> float:
        return math.exp(self.loss)


@dataclass(frozen=True)
class HeadTrace:
    """One query token through one head and out of its layer, with the model's real numbers.

    K keys (S for enc and cross, T for dec). The path: q . k -> scores; / sqrt(hs) -> scaled;
    softmax over the keys `mask` allows -> weights; weights x v -> weighted_v, summed ->
    head_output; every head's output side by side (all_heads.reshape(-1)) through W_O ->
    attn_out; LayerNorm(x + attn_out) -> normed; on through the rest of the layer -> layer_output.
    """

    kind: str  # "enc" (encoder self), "dec" (decoder masked self) or "cross"
    layer: int  # 0-based
    head: int  # 0-based
    query: int  # 0-based position of the query token
    query_token: str
    key_tokens: list  # K labels
    x: np.ndarray  # (D,) the sublayer's input at the query (the residual stream)
    q: np.ndarray  # (hs,) this head's query
    k: np.ndarray  # (K, hs) this head's keys
    v: np.ndarray  # (K, hs) this head's values
    scores: np.ndarray  # (K,) q . k, before scaling
    scaled: np.ndarray  # (K,) scores / sqrt(hs)
    mask: np.ndarray  # (K,) bool, True where the query may look
    weights: np.ndarray  # (K,) softmax of `scaled` over the allowed keys: the row of the attention map
    weighted_v: np.ndarray  # (K, hs) weights[:, None] * v
    head_output: np.ndarray  # (hs,) weighted_v summed over keys (zero if the head is switched off)
    all_heads: np.ndarray  # (H, hs) every head's output at this query; reshape(-1) goes into W_O
    attn_out: np.ndarray  # (D,) after W_O (and its bias)
    residual: np.ndarray  # (D,) x + attn_out
    normed: np.ndarray  # (D,) LayerNorm(residual): the next sublayer's input
    layer_output: np.ndarray  # (D,) the whole layer's output at the query, after the feed-forward block

    def to_json(self) -> dict:
        """The `python -m model.inspect head` object: ints, strings and lists of floats (mask: bools)."""
        return {name: value.tolist() if isinstance(value, np.ndarray) else value
                for name, value in vars(self).items()}


@dataclass(frozen=True)
class Inside:
    """Everything one teacher-forced pass computed inside the attention sublayers of one sentence.

    `sublayers[kind][name]` stacks one array over the layers of that kind (batch dropped;
    Tq = S for enc, T for dec and cross; Tk = S for enc and cross, T for dec):
        x, residual, normed, attn_out, layer_output (L, Tq, D); kv (L, Tk, D);
        q, heads (L, H, Tq, hs); k, v (L, H, Tk, hs);
        scores, scaled, weights (L, H, Tq, Tk); mask (L, H, Tq, Tk) bool, True = may look.
    `weights` are the attention maps of a Translation of the same output. Use `head()` to
    follow one query through one head.
    `embedding[side]` ("src", "tgt"): tokens (n, D), the token embeddings times sqrt(D), and positions (n, D); their
    sum is the first layer's x. `ffn[stack]` ("encoder", "decoder"): hidden (L, n, d_ff) after the ReLU and
    residual (L, n, D) = the sublayer's input + FFN(input); LayerNorm(residual) is the layer_output.
    """

    source: str  # the sentence as typed
    src_tokens: list  # S labels: <sos> tokens <eos>
    tgt_tokens: list  # T decoder inputs: <sos> then every output token but the last
    output_tokens: list  # T tokens the steps chose, <eos> included when produced
    sublayers: dict  # {"enc" | "dec" | "cross": {name: array, stacked over layers}}
    embedding: dict  # {"src" | "tgt": {"tokens", "positions": (n, D)}}
    ffn: dict  # {"encoder" | "decoder": {"hidden": (L, n, d_ff), "residual": (L, n, D)}}

    def head(self, kind: str, layer: int, head: int, query: int) -> HeadTrace:
        """One query through one head, 0-based; InputError naming the valid range for anything else."""
        if kind not in self.sublayers:
            raise InputError(f"kind {kind!r} is not one of {', '.join(self.sublayers)}")
        a = self.sublayers[kind]
        L, H, Tq = a["weights"].shape[:3]
        queries = self.src_tokens if kind == "enc" else self.tgt_tokens
        keys = self.tgt_tokens if kind == "dec" else self.src_tokens
        for name, value, n, what in (("layer", layer, L, f"{kind} layers"), ("head", head, H, "heads"),
                                     ("query", query, Tq, "query tokens")):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 0 <= value < n:
                raise InputError(f"{name} {value!r} is outside 0 to {n - 1} (there are {n} {what})")
        v, w = a["v"][layer, head], a["weights"][layer, head, query]  # (K, hs), (K,)
        return HeadTrace(
            kind=kind, layer=int(layer), head=int(head), query=int(query), query_token=queries[query],
            key_tokens=list(keys), x=a["x"][layer, query], q=a["q"][layer, head, query], k=a["k"][layer, head],
            v=v, scores=a["scores"][layer, head, query], scaled=a["scaled"][layer, head, query],
            mask=a["mask"][layer, head, query], weights=w, weighted_v=w[:, None] * v,
            head_output=a["heads"][layer, head, query], all_heads=a["heads"][layer, :, query],
            attn_out=a["attn_out"][layer, query], residual=a["residual"][layer, query],
            normed=a["normed"][layer, query], layer_output=a["layer_output"][layer, query])


@dataclass(frozen=True)
class LogitLens:
    """The output layer applied to the state after each decoder layer (nostalgebraist, 2020).

    Post-LN: every layer's output is already normalised, so the generator reads it as it
    reads the last one; the last layer's row is the model's real next-token distribution.
    """

    tgt_tokens: list  # T decoder inputs (the queries)
    output_tokens: list  # T tokens the steps chose, <eos> included when produced
    top_tokens: np.ndarray  # (L, T, k) str, most likely first
    top_probs: np.ndarray  # (L, T, k)
    chosen_prob: np.ndarray  # (L, T) probability of the finally chosen token after each layer

    def to_json(self) -> dict:
        """The `python -m model.inspect lens` object."""
        return {"tgt_tokens": self.tgt_tokens, "output_tokens": self.output_tokens,
                "top_tokens": self.top_tokens.tolist(), "top_probs": self.top_probs.tolist(),
                "chosen_prob": self.chosen_prob.tolist()}


@dataclass(frozen=True)
class AttentionNorms:
    """Norm-based attention (Kobayashi et al., 2020): ||alpha_ij (x_j W_V^h + b_V^h) W_O^h|| per head.

    `norms[kind]` is (L, H, Tq, Tk) like the attention maps (enc S x S, dec T x T, cross T x S): how far key j
    moved query i through head h, the weight times the length of what it weighs (b_O left out: it is added
    once per query, not per key). model/contributions.py, docs/contract.md.
    """

    src_tokens: list  # S labels: <sos> tokens <eos>
    tgt_tokens: list  # T decoder inputs
    output_tokens: list  # T tokens the steps chose, <eos> included when produced
    norms: dict  # {"enc" | "dec" | "cross": (L, H, Tq, Tk)}


@dataclass(frozen=True)
class Contributions:
    """ALTI+ (Ferrando et al., 2022): how much each source token and each target-prefix token contributed to
    each generated token's prediction, through every layer (model/contributions.py, docs/contract.md).

    Row t is step t, which predicts output_tokens[t] from the decoder inputs tgt_tokens[:t+1]. Each row of
    [source | prefix] sums to 1; prefix is zero above the diagonal.
    """

    src_tokens: list  # S labels: <sos> tokens <eos>
    tgt_tokens: list  # T decoder inputs: <sos> then every output token but the last
    output_tokens: list  # T tokens the steps chose, <eos> included when produced
    source: np.ndarray  # (T, S) contribution of each source token to step t
    prefix: np.ndarray  # (T, T) contribution of each decoder input (prefix token) to step t
    source_share: np.ndarray  # (T,) source.sum(-1)
    layers: dict  # per-block contributions: {"enc": (L, S, S), "dec": (L, T, T), "cross": (L, T, S + 1), the
    #               last column of cross the residual (the decoder's own stream)}
    rollout: np.ndarray  # (L_dec, T, S + T) the rollout after each decoder layer; rollout[-1] = [source | prefix]

    def to_json(self, digits: int = 6) -> dict:
        """The `python -m model.inspect contributions` object: one entry per generated token."""
        def r(values):
            return [round(float(x), digits) for x in values]

        return {"src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens,
                "steps": [{"token": token, "source_share": round(float(self.source_share[t]), digits),
                           "source": r(self.source[t]), "prefix": r(self.prefix[t, :t + 1])}
                          for t, token in enumerate(self.output_tokens)]}


@dataclass(frozen=True)
class DecoderLens:
    """DecoderLens (Langedijk et al., 2024): the greedy output when the decoder cross-attends to the output of
    encoder layer k instead of the last one; the last layer's row is the real translation."""

    source: str  # the sentence as typed
    src_tokens: list  # S labels: <sos> tokens <eos>
    layers: list  # one list of output tokens (no specials) per encoder layer, first layer first
    finished: list  # per layer: True where the output ended with <eos> (False: cut at the maximum length)

    def to_json(self) -> dict:
        """The `python -m model.inspect decoderlens` object; encoder layers count from 1."""
        return {"layers": [{"encoder_layer": k, "tokens": tokens, "text": " ".join(tokens)}
                           for k, tokens in enumerate(self.layers, start=1)]}
