"""Loss, perplexity and BLEU (docs/contract.md, Metrics), and scoring a translator on a corpus.

A library module, not a command: model.evaluate, model.train, model.translate and
model.head_importance all take their metrics from here, so each number is computed one way.
"""

import math

import sacrebleu
import torch
import torch.nn.functional as F
from tqdm import tqdm

from .data import bucket_batches, encode_pairs, pad
from .vocab import PAD_ID, tokenize


def token_loss(logits, target, label_smoothing=0.0):
    """Summed cross-entropy over non-padding target tokens, and their count."""
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                           ignore_index=PAD_ID, reduction="sum", label_smoothing=label_smoothing)
    return loss, int((target != PAD_ID).sum())


@torch.no_grad()
def evaluate_loss(model, src_ids, tgt_ids, device, batch_size=256, head_mask=None) -> float:
    """Mean cross-entropy per non-padding target token, teacher forcing, dropout off, no smoothing."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for idx in bucket_batches(src_ids, tgt_ids, batch_size):
        src, tgt = pad([src_ids[i] for i in idx]).to(device), pad([tgt_ids[i] for i in idx]).to(device)
        out = model(src, tgt[:, :-1], head_mask=head_mask, need_weights=False)
        loss, n = token_loss(out.logits, tgt[:, 1:])
        total, count = total + float(loss), count + n
    model.train(was_training)
    return total / count


def bleu(hyps: list[str], refs: list[str]) -> float:
    """Corpus BLEU on lower-cased spaCy tokens joined by spaces (= torchtext bleu_score x 100)."""
    refs = [" ".join(tokenize(r, "en")) for r in refs]
    return sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score


def sentence_bleu(hyp_tokens: list[str], reference: str) -> float:
    """BLEU of one output against one reference, tokenized as for corpus BLEU (sacrebleu's smoothing)."""
    ref = " ".join(tokenize(reference, "en"))
    return sacrebleu.sentence_bleu(" ".join(hyp_tokens), [ref], tokenize="none").score


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


def score(translator, src: list, ref: list, beam=1, heads_off=None, progress=False) -> dict:
    """BLEU, loss and perplexity of the translator on a parallel corpus."""
    hyps = translate_all(translator, src, beam, heads_off, progress)
    s_ids, t_ids = encode_pairs(src, ref, translator.src_vocab, translator.tgt_vocab, translator.cfg.max_positions)
    loss = evaluate_loss(translator.model, s_ids, t_ids, translator.device, head_mask=translator.head_mask(heads_off))
    return {"n": len(src), "bleu": round(bleu(hyps, ref), 2), "loss": round(loss, 4), "ppl": round(math.exp(loss), 3)}
