"""Beyond attention: gradient and perturbation attributions of every output word to the source and the prefix.

For each generated word y_t (the model's own prefix y_<t, or a reference's, teacher-forced) and the target
F_t = log p(y_t | y_<t, x) -- or, contrastive, F_t = log p(y_t | ...) - log p(y'_t | ...) for a foil y'_t --
every source token x_i and every decoder input (prefix token, <sos> included) gets a score
(docs/contract.md, "Attributions"):

- gradient (saliency; Simonyan et al., 2014; Ding, Xu and Koehn, WMT 2019): ||dF_t/de_i||_2, e_i the token's
  embedding row (the nn.Embedding output, before x sqrt(d) and the position are added);
- input_x_gradient (Shrikumar et al., 2016): e_i . dF_t/de_i, signed;
- integrated_gradients (Sundararajan, Taly and Yan, ICML 2017): (e_i - e'_i) . integral_0^1 dF_t/de_i at
  e' + a (e - e') da, on both token-embedding layers at once; the baseline e' puts <unk> at every content
  position and keeps <sos>, <eos> (and padding) as they are (the model builds its masks from the ids, so a
  <pad> baseline would change what attends to what); Gauss-Legendre quadrature, 64 points (Captum's default
  rule); the completeness gap |sum_i score_i - (F_t(x) - F_t(x'))| is reported per step;
- leave_one_out (Li, Monroe and Jurafsky, 2016): F_t(x) - F_t(x with token i replaced by <unk>), the prefix
  kept; one teacher-forced pass per replaced token gives every step at once (a prefix token j is an input of
  steps t >= j only: it scores 0 for the steps before it);
- value_zeroing (Mohebbi et al., EACL 2023): model/value_zeroing.py, rolled out as ALTI+ is;
- contrastive (Yin and Neubig, EMNLP 2022): input x gradient of the contrastive target, the foil at each step
  its runner-up, or one word the person picks ("why this word and not that one").

The gradient methods are Captum's (the PyTorch team's attribution library): LayerGradientXActivation and
LayerIntegratedGradients on the two token-embedding layers. Where this differs from inseq: inseq attributes
Hugging Face models only and aggregates by default with the L2 norm over the embedding for every gradient
method; here input x gradient and integrated gradients keep their signed dot product (their sum is what
completeness speaks of), and the gradient source share (`source_share`) takes inseq's convention: the L2 norms
of the gradients, L1-normalised over source and prefix together.
"""

import copy
import threading
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from .errors import InputError
from .extras import Extras
from .methods import ATTRIBUTIONS
from .methods import METHODS as TABLE
from .result import plain

METHODS = ATTRIBUTIONS  # model/methods.py: the one table of methods
SIGNED = {m for m in METHODS if TABLE[m].signed}
IG_STEPS = 64  # Gauss-Legendre points of integrated gradients
IG_CHUNK = 4  # steps attributed in one pass of integrated gradients (IG_STEPS x IG_CHUNK rows)
# A pass's memory grows with its rows times the square of the tokens it reads (the attention maps kept for the
# gradient): IG_STEPS x IG_CHUNK rows of a 16-token sentence and a 16-token output are the most one pass may cost.
# A longer sentence gets fewer steps per pass, then fewer points per batch (Captum's internal_batch_size): a 98-token
# sentence with a 50-token output took 3.3 GB at one pass of 256 rows (bench/load_test.py --heavy), 0.5 GB bounded.
IG_BUDGET = IG_STEPS * IG_CHUNK * 32 ** 2
LOGIT_BYTES = 64_000_000  # the float32 logits one pass of leave-one-out may hold (a 98-token sentence: 360 MB in one)


def rows_per_pass(tokens: int) -> int:
    """The most rows a pass with gradients may take over `tokens` source and output tokens (IG_BUDGET)."""
    return max(1, IG_BUDGET // tokens ** 2)


def ig_batches(n_steps: int, chunk: int, tokens: int) -> tuple[int, int | None]:
    """(steps per pass, points per batch or None for all n_steps) for integrated gradients over `tokens` source and
    output tokens: at most rows_per_pass rows, at least one step and one point."""
    rows = rows_per_pass(tokens)
    if rows >= n_steps:
        return max(1, min(chunk, rows // n_steps)), None
    return 1, rows


@dataclass(frozen=True)
class Attribution:
    """One method's scores for every step of an output (row t: the step that chose output_tokens[t])."""

    method: str
    src_tokens: list  # S: <sos> tokens <eos>
    tgt_tokens: list  # T decoder inputs: <sos> then every output token but the last
    output_tokens: list  # T: the steps' words, <eos> included when produced
    f: np.ndarray  # (T,) the target F_t at the input
    source: np.ndarray  # (T, S)
    prefix: np.ndarray  # (T, T), zero above the diagonal
    completeness_gap: np.ndarray | None = None  # (T,) integrated gradients only: |sum of scores - (F - F')|
    baseline_f: np.ndarray | None = None  # (T,) integrated gradients only: F_t at the baseline, F'_t
    foils: list | None = None  # T foil words, contrastive only

    @property
    def source_share(self) -> np.ndarray:
        """(T,) the share of |score| that lies on the source, of source and prefix together (for the gradient
        method, inseq's convention: L2 norms, L1-normalised)."""
        s, p = np.abs(self.source).sum(1), np.abs(self.prefix).sum(1)
        return s / np.maximum(s + p, 1e-30)

    def to_json(self, digits: int = 6) -> dict:
        """The `python -m model.inspect attribute` object."""
        steps = []
        for t, token in enumerate(self.output_tokens):
            step = {"token": token, "f": self.f[t], "source": self.source[t], "prefix": self.prefix[t, :t + 1],
                    "source_share": self.source_share[t]}
            if self.completeness_gap is not None:
                step["completeness_gap"], step["baseline_f"] = self.completeness_gap[t], self.baseline_f[t]
            if self.foils is not None:
                step["foil"] = self.foils[t]
            steps.append(plain(step, digits))
        return {"src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens, "method": self.method, "steps": steps}


def step_targets(model, src, tgt, steps, words, foils=None):
    """F of each row b: log p(words[b]) at decoder position steps[b] (minus log p(foils[b]): contrastive).
    src (B, S), tgt (B, T) ids; steps, words, foils (B,) long tensors."""
    logits = model(src, tgt, Extras(need_weights=False)).logits  # (B, T, V)
    logp = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
    rows = torch.arange(src.size(0), device=src.device)
    f = logp[rows, steps, words]
    return f if foils is None else f - logp[rows, steps, foils]


def baseline(ids: torch.Tensor, cfg) -> torch.Tensor:
    """The integrated-gradients baseline: <unk> at every content position, the specials (<sos>, <eos>, <pad>: the
    model config's ids) as they are."""
    keep = torch.zeros_like(ids, dtype=torch.bool)
    for special in (cfg.sos_id, cfg.eos_id, cfg.pad_id):
        keep |= ids == special
    return torch.where(keep, ids, torch.full_like(ids, cfg.unk_id))


_HOOKED = threading.Lock()
_COPIES = weakref.WeakKeyDictionary()  # a translator's model -> the copy captum's layer methods hook


@contextmanager
def hooked_model(translator):
    """The model captum's layer methods run on: a copy of the translator's (made once, kept here while the model
    lives; neither the model nor the translator is changed), one such method at a time. They put forward hooks on
    its embedding layers for the length of a call, and a forward pass of another thread through the same modules
    (another session's translation) was caught by them: "The differentiated Tensor at index 1 appears to not have
    been used in the graph"."""
    with _HOOKED:
        if translator.model not in _COPIES:
            _COPIES[translator.model] = copy.deepcopy(translator.model)
        yield _COPIES[translator.model]


class Attributor:
    """Attributions of one forced output (`Translator.force`: the greedy translation, a given output or a
    reference)."""

    def __init__(self, translator, forced):
        self.tr, self.model, self.forced = translator, translator.model, forced
        self.src_tokens, self.output_tokens = list(forced.src_tokens), list(forced.output_tokens)
        self.src, self.tgt, self.out = translator.inputs(forced)
        self.tgt_tokens = forced.tgt_tokens
        self.T = len(forced.output_ids)

    # targets ------------------------------------------------------------------------------------
    def foils(self, contrast: str | None) -> torch.Tensor:
        """The foil of each step: the given word, or the step's most likely word other than its own."""
        if contrast is not None:
            return torch.full((self.T,), foil_id(self.tr.tgt_vocab, contrast), device=self.out.device)
        with torch.no_grad():
            logits = self.model(self.src, self.tgt, Extras(need_weights=False)).logits[0].float()  # (T, V)
        logits[torch.arange(self.T), self.out] = -float("inf")
        return logits.argmax(-1)

    def rows(self, steps=None):
        """Inputs repeated once per step, with each row's step and word: one backward gives every step."""
        steps = torch.arange(self.T, device=self.out.device) if steps is None else torch.as_tensor(steps)
        n = len(steps)
        return self.src.expand(n, -1), self.tgt.expand(n, -1), steps, self.out[steps]

    def f(self, foils=None) -> np.ndarray:
        src, tgt, steps, words = self.rows()
        with torch.no_grad():
            return step_targets(self.model, src, tgt, steps, words, foils).cpu().numpy()

    # methods ------------------------------------------------------------------------------------
    def gradients(self, multiply: bool, foils=None) -> tuple[np.ndarray, np.ndarray]:
        """(T, S, D), (T, T, D): dF_t/de_i (multiply=False) or e_i * dF_t/de_i per dimension, every step in one pass
        (in a few on a long sentence: IG_BUDGET)."""
        from captum.attr import LayerGradientXActivation

        per_pass = rows_per_pass(self.src.size(1) + self.tgt.size(1))  # every step at once unless long
        parts = []
        with hooked_model(self.tr) as model, torch.enable_grad():
            method = LayerGradientXActivation(lambda s, t, st, w, fo: step_targets(model, s, t, st, w, fo),
                                              [model.src_embed.tok, model.tgt_embed.tok], multiply_by_inputs=multiply)
            for start in range(0, self.T, per_pass):
                some = list(range(start, min(self.T, start + per_pass)))
                src, tgt, steps, words = self.rows(some)
                fo = None if foils is None else foils[some]
                parts.append([g.detach().float().cpu() for g in
                              method.attribute((src, tgt), additional_forward_args=(steps, words, fo))])
        return tuple(torch.cat([p[i] for p in parts]).numpy() for i in range(2))

    def integrated_gradients(self, n_steps: int = IG_STEPS, steps=None, foils=None, progress=None,
                             rule: str = "gausslegendre", chunk: int = IG_CHUNK):
        """(source (n, S), prefix (n, T), F at the input (n,), F at the baseline (n,), completeness gap (n,)) for the
        given steps (default: all), `chunk` steps per pass (n_steps x chunk rows; fewer on a long sentence: ig_batches;
        progress(done, total) after each).
        rule: Captum's quadrature (the tests compare "riemann_middle" with a hand-written midpoint sum)."""
        from captum.attr import LayerIntegratedGradients

        steps = list(range(self.T)) if steps is None else list(steps)
        cfg = self.model.cfg
        chunk, points = ig_batches(n_steps, chunk, self.src.size(1) + self.tgt.size(1))
        parts = []
        for start in range(0, len(steps), chunk):
            some = steps[start:start + chunk]
            src, tgt, st, w = self.rows(some)
            fo = None if foils is None else foils[some]
            with hooked_model(self.tr) as model, torch.enable_grad():
                with warnings.catch_warnings():  # "Multiple layers provided": the two embedding layers do not feed
                    warnings.simplefilter("ignore", UserWarning)  # each other
                    method = LayerIntegratedGradients(lambda s, t, st, w, fo: step_targets(model, s, t, st, w, fo),
                                                      [model.src_embed.tok, model.tgt_embed.tok])
                (a_src, a_tgt), delta = method.attribute(
                    (src, tgt), baselines=(baseline(src, cfg), baseline(tgt, cfg)), additional_forward_args=(st, w, fo),
                    n_steps=n_steps, method=rule, internal_batch_size=points, return_convergence_delta=True)
            with torch.no_grad():
                fx = step_targets(self.model, src, tgt, st, w, fo)
                fb = step_targets(self.model, baseline(src, cfg), baseline(tgt, cfg), st, w, fo)
            parts.append([a_src.sum(-1).detach(), a_tgt.sum(-1).detach(), fx, fb, delta.abs().detach()])
            if progress:
                progress(start + len(some), len(steps))
        return tuple(torch.cat([p[i] for p in parts]).double().cpu().numpy() for i in range(5))

    def leave_one_out(self, foils=None) -> tuple[np.ndarray, np.ndarray]:
        """F_t(x) - F_t(x with one token replaced by <unk>): every source token and every decoder input, as rows of
        one batch (each row gives every step; a few batches when their logits would pass LOGIT_BYTES)."""
        S, T = self.src.size(1), self.T
        src = self.src.repeat(1 + S + T, 1)
        tgt = self.tgt.repeat(1 + S + T, 1)
        src[1 + torch.arange(S), torch.arange(S)] = self.model.cfg.unk_id
        tgt[1 + S + torch.arange(T), torch.arange(T)] = self.model.cfg.unk_id
        per_pass = max(1, LOGIT_BYTES // (4 * T * len(self.tr.tgt_vocab.itos)))  # one pass unless long
        parts = []
        for start in range(0, 1 + S + T, per_pass):
            with torch.no_grad():
                logp = torch.log_softmax(self.model(src[start:start + per_pass], tgt[start:start + per_pass],
                                                    Extras(need_weights=False)).logits.float(), -1)
            part = logp[:, torch.arange(T), self.out]
            parts.append(part if foils is None else part - logp[:, torch.arange(T), foils])
        f = torch.cat(parts)  # (1 + S + T, T)
        drop = (f[:1] - f[1:]).T.cpu().numpy()  # (T, S + T)
        prefix = np.tril(drop[:, S:])  # a prefix token j is an input of steps t >= j only
        return drop[:, :S], prefix


def attribute(translator, forced, method: str, contrast: str | None = None, n_steps: int = IG_STEPS,
              progress=None) -> Attribution:
    """One method's Attribution of a forced output (`Translator.force`: the greedy translation, a given output or a
    reference's tokens, teacher-forced)."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    a = Attributor(translator, forced)
    base = dict(method=method, src_tokens=a.src_tokens, tgt_tokens=a.tgt_tokens, output_tokens=a.output_tokens)
    foils = a.foils(contrast) if method == "contrastive" or contrast is not None else None
    if method in ("gradient", "input_x_gradient", "contrastive"):
        g_src, g_tgt = a.gradients(method != "gradient", foils)
        if method == "gradient":
            source, prefix = np.linalg.norm(g_src, axis=-1), np.linalg.norm(g_tgt, axis=-1)
        else:
            source, prefix = g_src.sum(-1), g_tgt.sum(-1)
        f = a.f(foils)
    elif method == "integrated_gradients":
        source, prefix, f, fb, gap = a.integrated_gradients(n_steps, foils=foils, progress=progress)
        return Attribution(**base, f=f, source=source, prefix=prefix, completeness_gap=gap, baseline_f=fb,
                           foils=None if foils is None else words(translator, foils))
    elif method == "leave_one_out":
        source, prefix = a.leave_one_out(foils)
        f = a.f(foils)
    else:
        from .value_zeroing import value_zeroing
        vz = value_zeroing(translator.capture(a.forced), translator.model)
        source, prefix, f = vz["source"], vz["prefix"], a.f()
    return Attribution(**base, f=f, source=np.asarray(source), prefix=np.asarray(prefix),
                       foils=None if foils is None else words(translator, foils))


def foil_id(vocab, word: str) -> int:
    """The English id of a foil: the one rule for the CLI and the page. InputError unless the model can write the
    word: a word of its English vocabulary, and not one it never writes (Vocab.never_written)."""
    if word in vocab.never_written or word not in vocab.stoi:
        raise InputError(f"the foil {word[:40]!r} is not a word the model writes: use a word of its English "
                         f"vocabulary other than {' and '.join(vocab.never_written)}")
    return vocab.stoi[word]


def words(translator, ids) -> list:
    return [translator.tgt_vocab.itos[int(i)] for i in ids]
