"""The plain results of the model: the only thing viz/ and the app see of it.

No torch here: tokens are strings, maps are numpy arrays shaped layers x heads x query x key.
"""

import math
from dataclasses import dataclass, field

import numpy as np


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

    @property
    def text(self) -> str:
        """The translation as model.translate prints it: output tokens joined by single spaces."""
        return " ".join(self.output_tokens)

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
