"""Greedy decoding with a key/value cache, beam search, and teacher forcing.

Encode once; then feed one token a step, the decoder's earlier keys and values (and the
cross-attention keys and values of the encoder output) coming from a cache. Every step
records the chosen token's probability, the top-k alternatives and the entropy, and the
attention rows of that step, which together are exactly the maps of one teacher-forced
pass over the generated sequence (tests/unit/test_decoding.py proves it).
"""

from dataclasses import dataclass

import torch

from .extras import Extras


@dataclass
class Decoded:
    """Greedy output for a batch. Rows past a sentence's <eos> are junk; `lengths` says where each ends."""

    ids: torch.Tensor  # (B, N) generated tokens, <eos> included where produced
    lengths: torch.Tensor  # (B,) generated tokens per sentence, <eos> included
    probs: torch.Tensor  # (B, N) probability of each chosen token
    entropy: torch.Tensor  # (B, N) entropy of each step's distribution, nats
    top_ids: torch.Tensor  # (B, N, k)
    top_probs: torch.Tensor  # (B, N, k)
    encoder_attentions: torch.Tensor | None = None  # (L, B, H, S, S)
    decoder_attentions: torch.Tensor | None = None  # (L, B, H, N, N) lower triangle filled
    cross_attentions: torch.Tensor | None = None  # (L, B, H, N, S)


def step_stats(logits, top_k):
    """logits (..., V) -> log-probs (..., V), entropy (...,), top-k probs and ids (..., k)."""
    logp = logits.float().log_softmax(-1)
    p = logp.exp()
    entropy = -(p * logp).nan_to_num().sum(-1)  # 0 * -inf counts as 0
    top_p, top_i = p.topk(top_k, dim=-1)
    return logp, entropy, top_p, top_i


def argmax(model, logits):
    """The next token of greedy decoding from (B, V) logits or log-probabilities: the most likely one, never <pad>
    where decoding starts from <pad> (Marian, whose generation settings forbid it: Hugging Face's bad_words_ids)."""
    if model.cfg.sos_id == model.cfg.pad_id:
        logits = logits.clone()
        logits[:, model.cfg.pad_id] = float("-inf")
    return logits.argmax(-1)


@torch.no_grad()
def greedy_decode(model, src, max_len=50, top_k=5, head_mask=None, need_weights=True,
                  force: dict | None = None, pause=None, patch: dict | None = None) -> Decoded:
    """src (B, S) padded source ids -> Decoded.

    force: {step: token id} makes step `step` (0-based) emit that token instead of the argmax,
    and greedy decoding goes on from there (what-if decoding).
    pause: called before each step; a decoding that must give way to others waits there (model/batching.py).
    It changes when a step runs, never what it computes.
    patch: Extras.patch, for every step (a transcoder's features switched off or scaled, model/transcoders.py).
    """
    B = src.size(0)
    max_len = min(max_len, model.cfg.max_positions)  # the decoder input at step t sits at position t
    memory, enc_maps = model.encode(src, Extras(head_mask, need_weights=need_weights, patch=patch))
    src_mask = model.src_mask(src)
    extras = Extras(head_mask, model.new_cache(), need_weights=need_weights, patch=patch)  # fills step by step
    y = torch.full((B, 1), model.cfg.sos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    lengths = torch.full((B,), max_len, dtype=torch.long, device=src.device)
    ids, probs, ents, tps, tis, self_rows, cross_rows = [], [], [], [], [], [], []
    for t in range(max_len):
        if pause is not None:
            pause()
        logits, s_maps, c_maps = model.decode(y, memory, src_mask, t, extras)
        logp, entropy, top_p, top_i = step_stats(logits[:, -1], top_k)
        nxt = argmax(model, logp)  # (B,)
        if force and t in force:
            nxt = torch.full_like(nxt, force[t])
        nxt = nxt.masked_fill(done, model.cfg.pad_id)
        ids.append(nxt)
        probs.append(logp.gather(-1, nxt[:, None]).squeeze(-1).exp())
        ents.append(entropy)
        tps.append(top_p)
        tis.append(top_i)
        if need_weights:
            self_rows.append(torch.stack([m[:, :, 0] for m in s_maps]))  # (L, B, H, t+1)
            cross_rows.append(torch.stack([m[:, :, 0] for m in c_maps]))  # (L, B, H, S)
        newly = (nxt == model.cfg.eos_id) & ~done
        lengths[newly] = t + 1
        done |= newly
        if done.all():
            break
        y = nxt[:, None]
    out = Decoded(torch.stack(ids, 1), lengths, torch.stack(probs, 1), torch.stack(ents, 1),
                  torch.stack(tis, 1), torch.stack(tps, 1))
    if need_weights:
        N = len(self_rows)
        L, _, H, _ = self_rows[0].shape
        dec = self_rows[0].new_zeros(L, B, H, N, N)
        for t, row in enumerate(self_rows):
            dec[..., t, :t + 1] = row
        out.encoder_attentions = torch.stack(enc_maps)  # (L, B, H, S, S)
        out.decoder_attentions = dec
        out.cross_attentions = torch.stack(cross_rows, 3)  # (L, B, H, N, S)
    return out


@torch.no_grad()
def greedy_ids(model, memory, src_mask, max_len=50, head_mask=None) -> list[list[int]]:
    """Each row's greedy output ids (<eos> included where produced), the argmax chain of greedy_decode
    without its probabilities, alternatives and maps: for callers that need only the words, thousands
    of times (head importance).

    Takes the encoder output memory (B, S, D) and src_mask (B, 1, 1, S), so rows can share one
    encoding, and per-row head masks ({kind: (B, L, H)}) for the decoder kinds. A finished row
    leaves the batch once a quarter of the rows have finished, so one long output does not keep
    every finished row computing. Rows are independent, so what a row gets does not depend on
    the others.
    """
    B = memory.size(0)
    max_len = min(max_len, model.cfg.max_positions)
    out = [[] for _ in range(B)]
    rows = list(range(B))  # the original row of each row in the batch
    done = torch.zeros(B, dtype=torch.bool, device=memory.device)
    mask = {k: m for k, m in (head_mask or {}).items() if k != "enc"}
    cache = model.new_cache()
    y = torch.full((B, 1), model.cfg.sos_id, dtype=torch.long, device=memory.device)
    for t in range(max_len):
        logits, _, _ = model.decode(y, memory, src_mask, t, Extras(mask, cache, need_weights=False))
        nxt = argmax(model, logits[:, -1].float().log_softmax(-1))  # as greedy_decode picks it
        for r, tok, finished in zip(rows, nxt.tolist(), done.tolist()):
            if not finished:
                out[r].append(tok)
        done |= nxt == model.cfg.eos_id
        if done.all():
            break
        if 4 * int(done.sum()) >= len(rows):  # drop the finished rows from the batch and its cache
            keep = (~done).nonzero().squeeze(1)
            rows = [rows[i] for i in keep.tolist()]
            nxt, done, memory, src_mask = nxt[keep], done[keep], memory[keep], src_mask[keep]
            mask = {k: m[keep] if m.dim() == 3 else m for k, m in mask.items()}
            for layer in cache:
                for part in layer.values():
                    part["k"], part["v"] = part["k"][keep], part["v"][keep]
        y = nxt[:, None]
    return out


@dataclass
class Hypothesis:
    ids: list  # generated token ids, <eos> included when finished
    score: float  # summed log-probability
    normalized: float  # score / len ** alpha: what beams are ranked by (Hugging Face's sequences_scores)


@dataclass
class BeamResult:
    hypotheses: list  # the n-best Hypotheses, best first
    trace: list  # per step: the 2K candidates looked at, [{"ids", "score", "status"}] with status
    #              "kept" (stays in the beam), "finished" (ended with <eos>) or "pruned" (fell out)


EARLY_STOPPING = (False, True, "never")  # Hugging Face's generation setting of that name


@torch.no_grad()
def beam_search(model, src, beam=4, max_len=50, alpha=0.6, head_mask=None, early_stopping=False) -> BeamResult:
    """src (1, S) -> the n-best Hypotheses and the search trace, with beam width `beam`.

    Hugging Face's beam search (transformers' generate with num_beams, docs/contract.md "Beam search as Hugging
    Face ranks it"), whose settings keep their names there: `alpha` is its length_penalty, `early_stopping` its
    early_stopping. Scores are summed log-probabilities; a hypothesis that ends (with <eos>, or at max_len) among
    the top K candidates of a step is ranked by score / length ** alpha (GNMT's length normalisation, simplified).
    The search stops when every candidate of a step ends (max_len), or once `beam` hypotheses have ended and
    early_stopping is True; or, when it is False, once no live one can still beat them at its current length (at
    max_len where it is "never" and alpha > 0). Width 1 is exactly greedy decoding. A model that starts decoding
    from <pad> (Marian) never writes it: its log-probability is set to -inf after the softmax, without
    renormalising, as Hugging Face's bad_words_ids does.
    """
    assert src.size(0) == 1, "beam search takes one sentence at a time"
    assert early_stopping in EARLY_STOPPING, f"early_stopping is one of {EARLY_STOPPING}, got {early_stopping!r}"
    K = beam
    max_len = min(max_len, model.cfg.max_positions)
    no_pad = model.cfg.sos_id == model.cfg.pad_id
    memory, _ = model.encode(src, Extras(head_mask, need_weights=False))
    memory = memory.expand(K, -1, -1)  # (K, S, D)
    src_mask = model.src_mask(src).expand(K, -1, -1, -1)
    cache = model.new_cache()
    extras = Extras(head_mask, cache, need_weights=False)
    scores = torch.full((K,), float("-inf"), device=src.device)
    scores[0] = 0.0  # at the start only one live hypothesis
    seqs = [[] for _ in range(K)]
    y = torch.full((K, 1), model.cfg.sos_id, dtype=torch.long, device=src.device)
    finished: list[Hypothesis] = []
    trace = []
    for t in range(max_len):
        logits, _, _ = model.decode(y, memory, src_mask, t, extras)
        logp = logits[:, -1].float().log_softmax(-1)  # (K, V)
        if no_pad:
            logp[:, model.cfg.pad_id] = float("-inf")
        cand = scores[:, None] + logp  # (K, V)
        V = cand.size(1)
        top_s, top_i = cand.view(-1).topk(2 * K)
        keep_beams, keep_toks, keep_scores, step = [], [], [], []
        for rank, (s, i) in enumerate(zip(top_s.tolist(), top_i.tolist())):
            b, tok = divmod(i, V)
            if s == float("-inf"):
                break
            ids = seqs[b] + [tok]
            ends = tok == model.cfg.eos_id or t == max_len - 1
            if len(keep_beams) == K or (ends and rank >= K):  # an ending counts only among the top K
                step.append({"ids": ids, "score": s, "status": "pruned"})
            elif ends:
                finished.append(Hypothesis(ids, s, s / len(ids) ** alpha))
                step.append({"ids": ids, "score": s, "status": "finished"})
            else:
                keep_beams.append(b)
                keep_toks.append(tok)
                keep_scores.append(s)
                step.append({"ids": ids, "score": s, "status": "kept"})
        trace.append(step)
        if not keep_beams:
            break
        if len(finished) >= K:
            if early_stopping is True:
                break
            # Done when no live beam can still beat the K-th best finished one. A live beam's log-probability only
            # falls; Hugging Face compares it at its current length, or at max_len ("never", alpha > 0).
            best_len = max_len if early_stopping == "never" and alpha > 0 else t + 1
            kth = sorted((h.normalized for h in finished), reverse=True)[K - 1]
            if kth >= max(keep_scores) / best_len ** alpha:
                break
        while len(keep_beams) < K:  # fewer live candidates than beams: fill with dead copies
            keep_beams.append(keep_beams[0])
            keep_toks.append(keep_toks[0])
            keep_scores.append(float("-inf"))
        index = torch.tensor(keep_beams, device=src.device)
        for layer_cache in cache:  # cross-attention keys are the same for every beam: no reorder
            sc = layer_cache["self"]
            sc["k"], sc["v"] = sc["k"].index_select(0, index), sc["v"].index_select(0, index)
        seqs = [seqs[b] + [tok] for b, tok in zip(keep_beams, keep_toks)]
        scores = torch.tensor(keep_scores, device=src.device)
        y = torch.tensor(keep_toks, device=src.device)[:, None]
    finished.sort(key=lambda h: -h.normalized)
    return BeamResult(finished[:K], trace)
