"""Loss, perplexity and BLEU (docs/contract.md, Metrics), and scoring a translator on a corpus.

A library module, not a command: model.evaluate, model.train, model.translate and
model.head_importance all take their metrics from here, so each number is computed one way.

Both corpus metrics are functions of per-sentence sums (BLEU of n-gram counts, loss of
summed cross-entropy and token counts), which is what makes the paired bootstrap cheap:
resample sentences, add up their statistics, recompute.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np
import sacrebleu
import torch
import torch.nn.functional as F
from tqdm import tqdm

from .data import bucket_batches, encode_pairs, pad
from .extras import Extras
from .vocab import PAD_ID, join_pieces, tokenize


def token_loss(logits, target, label_smoothing=0.0, pad_id: int = PAD_ID):
    """Summed cross-entropy over non-padding target tokens, and their count."""
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                           ignore_index=pad_id, reduction="sum", label_smoothing=label_smoothing)
    return loss, int((target != pad_id).sum())


def sentence_losses(logits, target, pad_id: int = PAD_ID) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forced logits (B, T, V) and targets (B, T) -> each row's summed cross-entropy (float64
    over float32 token losses) and its count of non-padding targets, (B,) and (B,)."""
    per_token = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), target.reshape(-1),
                                ignore_index=pad_id, reduction="none").view(target.shape)  # 0 at padding
    return per_token.double().sum(1).cpu().numpy(), (target != pad_id).sum(1).cpu().numpy()


def mean_loss(sums: np.ndarray, counts: np.ndarray) -> float:
    """Mean loss per target token from per-sentence sums (N,) and token counts (N,)."""
    return float(sums.sum() / counts.sum())


@torch.no_grad()
def loss_stats(model, src_ids, tgt_ids, device, batch_size=256, head_mask=None):
    """Mean loss per target token (as evaluate_loss), and each sentence's summed loss and token count (N,), (N,).

    head_mask: a HeadMask for every sentence, or with (N, L, H) values one mask per
    sentence (model/transformer.py), so many masked variants can share the batches.
    The mean is mean_loss of the per-sentence sums (float64 over float32 token losses), so
    it does not depend on how the sentences were batched, only on each sentence's numbers.
    """
    was_training = model.training
    model.eval()
    sums, counts = np.zeros(len(src_ids)), np.zeros(len(src_ids), dtype=np.int64)
    assert all(m.dim() == 2 or m.shape[0] == len(src_ids) for m in (head_mask or {}).values()), \
        f"a per-sentence head mask needs {len(src_ids)} rows"
    for idx in bucket_batches(src_ids, tgt_ids, batch_size):
        p = model.cfg.pad_id
        src, tgt = pad([src_ids[i] for i in idx], p).to(device), pad([tgt_ids[i] for i in idx], p).to(device)
        mask = head_mask and {k: m[torch.tensor(idx, device=m.device)] if m.dim() == 3 else m
                              for k, m in head_mask.items()}  # per-sentence masks: (B, L, H), this batch's rows
        out = model(src, tgt[:, :-1], Extras(mask, need_weights=False))
        sums[idx], counts[idx] = sentence_losses(out.logits, tgt[:, 1:], p)
    model.train(was_training)
    return mean_loss(sums, counts), sums, counts


def evaluate_loss(model, src_ids, tgt_ids, device, batch_size=256, head_mask=None) -> float:
    """Mean cross-entropy per non-padding target token, teacher forcing, dropout off, no smoothing."""
    return loss_stats(model, src_ids, tgt_ids, device, batch_size, head_mask)[0]


def bleu(hyps: list[str], refs: list[str], pieces: bool = False) -> float:
    """Corpus BLEU on lower-cased spaCy tokens joined by spaces (= torchtext bleu_score x 100); with pieces (a
    model whose tokens are SentencePiece pieces: hyps are its joined text), sacrebleu's own BLEU, cased, on its 13a
    tokens of the text as written (Post, 2018), as Marian models' scores are reported."""
    if pieces:
        return sacrebleu.corpus_bleu(hyps, [refs]).score
    return sacrebleu.corpus_bleu(hyps, [[bleu_reference(r) for r in refs]], tokenize="none", force=True).score


@functools.lru_cache(maxsize=1 << 16)
def bleu_reference(reference: str) -> str:
    """A reference as BLEU sees it: its lower-cased spaCy tokens joined by spaces. Cached: a
    head-importance run scores the same references 73 times."""
    return " ".join(tokenize(reference, "en"))


# corpus_bleu's settings as an object, for the per-sentence statistics corpus BLEU is computed from; and
# sacrebleu's own (13a tokens, cased), for a model whose tokens are pieces
_BLEU = sacrebleu.BLEU(tokenize="none", force=True)
_BLEU_TEXT = sacrebleu.BLEU()


def bleu_stats(hyps: list[str], refs: list[str], pieces: bool = False) -> np.ndarray:
    """BLEU's sufficient statistics per sentence, (N, 10): output length, reference length, matched
    1- to 4-grams, output 1- to 4-grams. Corpus BLEU is bleu_from_stats of their column sums. With pieces: of
    the joined text and the references as written, sacrebleu's 13a tokens (`bleu`)."""
    if pieces:
        return np.array(_BLEU_TEXT._extract_corpus_statistics(hyps, [refs]), dtype=np.int64).reshape(len(hyps), 10)
    refs = [bleu_reference(r) for r in refs]
    return np.array(_BLEU._extract_corpus_statistics(hyps, [refs]), dtype=np.int64).reshape(len(hyps), 10)


def bleu_from_stats(totals) -> float:
    """Corpus BLEU from summed statistics (10,): the last step of sacrebleu's corpus_bleu."""
    return _BLEU._compute_score_from_stats([int(x) for x in totals]).score


def sentence_bleu(hyp_tokens: list[str], reference: str, pieces: bool = False) -> float:
    """BLEU of one output against one reference, tokenized as for corpus BLEU (sacrebleu's smoothing); with
    pieces, the pieces joined into text and scored as `bleu` does."""
    if pieces:
        return sacrebleu.sentence_bleu(join_pieces(hyp_tokens), [reference]).score
    return sacrebleu.sentence_bleu(" ".join(hyp_tokens), [bleu_reference(reference)], tokenize="none").score


def translate_all(translator, sentences, beam=1, heads_off=None, progress=False) -> list[str]:
    """Output token strings for every sentence ('' for an empty one), greedy batched or beam."""
    out = [""] * len(sentences)
    usable = [i for i, s in enumerate(sentences) if s.strip()]
    if beam == 1:
        results = translator.translate_batch([sentences[i] for i in usable], with_maps=False, heads_off=heads_off)
        for i, r in zip(usable, results):
            out[i] = r.text
    else:
        for i in tqdm(usable, desc=f"beam {beam}", disable=not progress):
            out[i] = translator.translate(sentences[i], beam=beam, heads_off=heads_off).text
    return out


BOOTSTRAP_SEED = 1234  # fixed, so an importance table can be recomputed exactly


@dataclass(frozen=True)
class CorpusScore:
    """One run over a parallel corpus: its metrics and the per-sentence statistics they are sums of."""

    hyps: list  # N output token strings ('' for an empty source line)
    bleu_stats: np.ndarray  # (N, 10) BLEU's sufficient statistics per sentence (bleu_stats)
    loss: float  # mean cross-entropy per target token, summed as evaluate_loss does
    loss_sums: np.ndarray  # (N,) summed cross-entropy of each reference
    token_counts: np.ndarray  # (N,) target tokens of each reference, <eos> included

    @property
    def bleu(self) -> float:
        return bleu_from_stats(self.bleu_stats.sum(0))

    def summary(self) -> dict:
        """The numbers model.evaluate prints: n, bleu, loss, ppl."""
        return {"n": len(self.hyps), "bleu": round(self.bleu, 2), "loss": round(self.loss, 4),
                "ppl": round(math.exp(self.loss), 3)}


def corpus_score(translator, src: list, ref: list, beam=1, heads_off=None, progress=False) -> CorpusScore:
    """Translate and teacher-force a parallel corpus: metrics with their per-sentence statistics."""
    hyps = translate_all(translator, src, beam, heads_off, progress)
    s_ids, t_ids = encode_pairs(src, ref, translator.src_vocab, translator.tgt_vocab, translator.cfg.max_positions,
                                translator.cfg.source_start)
    loss, sums, counts = loss_stats(translator.model, s_ids, t_ids, translator.device,
                                    head_mask=translator.head_mask(heads_off))
    return CorpusScore(hyps, bleu_stats(hyps, ref, translator.tgt_vocab.pieces is not None), loss, sums, counts)


def score(translator, src: list, ref: list, beam=1, heads_off=None, progress=False) -> dict:
    """BLEU, loss and perplexity of the translator on a parallel corpus."""
    return corpus_score(translator, src, ref, beam, heads_off, progress).summary()


def paired_bootstraps(base: CorpusScore, others: list, resamples: int = 1000, seed: int = BOOTSTRAP_SEED,
                      level: float = 0.95) -> list:
    """Percentile intervals for the BLEU drop (base - other) and the loss rise (other - base) of each run.

    Paired bootstrap over sentences (Koehn, 2004): each resample draws N sentences with
    replacement and scores both runs on the same draw, from summed per-sentence statistics.
    The same seed gives the same draws, so every run (every head of a table) is judged on the
    same ones, and the base's resampled scores are computed once for all of them.
    Returns one {"bleu_drop": (low, high), "loss_rise": (low, high)} per run of `others`.
    """
    n = len(base.hyps)
    if any(len(o.hyps) != n or not np.array_equal(base.token_counts, o.token_counts) for o in others):
        raise ValueError("a paired bootstrap needs two runs over the same sentences and references")
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, np.full(n, 1 / n), size=resamples)  # (R, N): how often each sentence is drawn
    tokens = draws @ base.token_counts  # (R,)

    def bleus(run):
        return np.array([bleu_from_stats(t) for t in draws @ run.bleu_stats])  # (R, 10) -> (R,)

    base_bleus, base_loss = bleus(base), draws @ base.loss_sums
    tail = (1 - level) / 2
    out = []
    for other in others:
        bleu_drop = base_bleus - bleus(other)
        loss_rise = (draws @ other.loss_sums - base_loss) / tokens
        out.append({"bleu_drop": tuple(np.quantile(bleu_drop, [tail, 1 - tail]).tolist()),
                    "loss_rise": tuple(np.quantile(loss_rise, [tail, 1 - tail]).tolist())})
    return out


def mean_interval(values, resamples: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean over the first axis and its 95% percentile-bootstrap interval: resamples of the N rows drawn with
    replacement (seeded), each resample's mean, their 2.5th and 97.5th percentiles. values (N, ...)."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (resamples, len(values)))].mean(1)  # (resamples, ...)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return values.mean(0), low, high
