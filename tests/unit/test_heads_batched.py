"""Per-row head masks are exact, so masked variants can share a batch: each row is what its own call gives."""

import copy
import random

import numpy as np
import pytest
import torch

from conftest import GERMAN, random_batch, seeded_translator, tiny_config
from model.data import encode_pairs
from model.decoding import greedy_decode, greedy_ids
from model.extras import Extras
from model.head_importance import head_importance_for_sentence, shared_encoding, single_head_masks
from model.metrics import loss_stats
from model.vocab import EOS_ID

SENT = "Ein Hund läuft im Park."


@pytest.fixture(scope="module")
def tr():
    return seeded_translator()


@pytest.fixture(scope="module")
def corpus(tr):
    """8 German lines of tiny-vocabulary words and an empty one; references are the unmasked outputs."""
    rng = random.Random(0)
    src = [" ".join(rng.choice(GERMAN[4:]) for _ in range(rng.randint(2, 8))) for _ in range(8)]
    src.insert(5, "")
    ref = [tr.translate(s).text if s else "" for s in src]
    return src, ref


def some_masks(cfg, K=6, seed=0):
    """K random (L, H) masks per kind, row 0 keeping every head: {kind: (K, L, H)}."""
    g = torch.Generator().manual_seed(seed)
    masks = {k: (torch.rand(K, cfg.n_enc_layers, cfg.n_heads, generator=g) > 0.4).float()
             for k in ("enc", "dec", "cross")}
    for m in masks.values():
        m[0] = 1.0
    return masks


def row(masks, i):
    return {k: m[i] for k, m in masks.items()}  # the (L, H) mask of row i


def test_per_row_masks_equal_separate_calls_teacher_forced(tiny_model):
    cfg, K = tiny_model.cfg, 6
    src, tgt = random_batch(cfg, B=1)
    masks = some_masks(cfg, K)
    together = tiny_model(src.expand(K, -1), tgt.expand(K, -1), Extras(masks)).logits  # (K, T, V)
    for i in range(K):
        alone = tiny_model(src, tgt, Extras(row(masks, i))).logits[0]
        torch.testing.assert_close(together[i], alone, atol=1e-5, rtol=0)
    assert not torch.allclose(together[1], together[0], atol=1e-3)  # the masks really change something


def test_per_row_masks_equal_separate_calls_greedy_with_cache(tiny_model):
    cfg, K = tiny_model.cfg, 6
    src, _ = random_batch(cfg, B=1)
    masks = some_masks(cfg, K)
    together = greedy_decode(tiny_model, src.expand(K, -1), max_len=12, head_mask=masks)
    outputs = set()
    for i in range(K):
        alone = greedy_decode(tiny_model, src, max_len=12, head_mask=row(masks, i))
        n = int(alone.lengths[0])
        assert int(together.lengths[i]) == n
        assert together.ids[i, :n].tolist() == alone.ids[0, :n].tolist()
        torch.testing.assert_close(together.probs[i, :n], alone.probs[0, :n], atol=1e-5, rtol=0)
        torch.testing.assert_close(together.cross_attentions[:, i, :, :n], alone.cross_attentions[:, 0], atol=1e-5,
                                   rtol=0)
        outputs.add(tuple(alone.ids[0, :n].tolist()))
    assert len(outputs) > 1  # different masks, different translations: the rows did not share one mask


def test_all_ones_per_row_mask_is_no_mask_bit_for_bit(tiny_model):
    cfg = tiny_model.cfg
    src, tgt = random_batch(cfg, B=3)
    ones = {k: torch.ones(3, cfg.n_enc_layers, cfg.n_heads) for k in ("enc", "dec", "cross")}
    assert torch.equal(tiny_model(src, tgt, Extras(ones)).logits, tiny_model(src, tgt).logits)
    a, b = greedy_decode(tiny_model, src, 10, head_mask=ones), greedy_decode(tiny_model, src, 10)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.probs, b.probs)


def test_greedy_ids_equal_greedy_decode_row_by_row(tiny_model):
    """The lean argmax chain (finished rows leave the batch) gives each row what greedy_decode gives it alone."""
    model = copy.deepcopy(tiny_model)
    with torch.no_grad():
        model.generator.bias[EOS_ID] += 1.0  # outputs of many lengths, so rows leave the batch at different steps
    cfg, K, B = model.cfg, 6, 8
    src, _ = random_batch(cfg, B=B)
    masks = some_masks(cfg, K, seed=2)
    rows = [(b, k) for b in range(B) for k in range(K)]
    src_rows = src[[b for b, _ in rows]]
    per_row = {kind: m[[k for _, k in rows]] for kind, m in masks.items()}  # (B*K, L, H)
    memory, _ = model.encode(src_rows, Extras(per_row, need_weights=False))
    got = greedy_ids(model, memory, model.src_mask(src_rows), 12, per_row)
    lengths = set()
    for (b, k), ids in zip(rows, got):
        alone = greedy_decode(model, src[b:b + 1], max_len=12, head_mask=row(masks, k), need_weights=False)
        assert ids == alone.ids[0, :int(alone.lengths[0])].tolist()
        lengths.add((len(ids), ids[-1] == EOS_ID))
    assert len(lengths) > 3 and (12, False) in lengths and any(end for _, end in lengths)  # rows left early


def test_shared_encoding_runs_the_encoder_once_per_source_and_encoder_mask(tiny_model):
    cfg, K = tiny_model.cfg, 6
    src, _ = random_batch(cfg, B=2)
    masks = some_masks(cfg, K, seed=3)
    masks["enc"][[2, 4]] = 1.0  # rows 2 and 4 switch off decoder heads only: they share row 0's encoding
    ids = [[t for t in src[b].tolist() if t != cfg.pad_id] for b in range(2)]
    rows = [(b, k) for b in range(2) for k in range(K)]
    seen = []
    hook = tiny_model.encoder[0].register_forward_hook(lambda mod, args, out: seen.append(args[0].shape[0]))
    memory, src_mask = shared_encoding(tiny_model, [ids[b] for b, _ in rows], masks, [k for _, k in rows], "cpu")
    hook.remove()
    assert seen == [2 * (K - 2)]  # 12 rows, 8 encodings
    for n, (b, k) in enumerate(rows):
        alone, _ = tiny_model.encode(torch.tensor([ids[b]]), Extras(row(masks, k), need_weights=False))
        torch.testing.assert_close(memory[n, :len(ids[b])], alone[0], atol=1e-6, rtol=0)
        assert src_mask[n, 0, 0].tolist() == [True] * len(ids[b]) + [False] * (memory.shape[1] - len(ids[b]))


def test_a_per_row_mask_of_the_wrong_size_is_refused(tiny_model):
    cfg = tiny_model.cfg
    src, tgt = random_batch(cfg, B=3)
    with pytest.raises(AssertionError, match="head mask"):
        tiny_model(src, tgt, Extras({"enc": torch.ones(2, cfg.n_enc_layers, cfg.n_heads)}))


def test_loss_stats_with_one_mask_per_sentence(tr, corpus):
    src, ref = corpus
    s_ids, t_ids = encode_pairs(src, ref, tr.src_vocab, tr.tgt_vocab, tr.cfg.max_positions)
    N, K = len(s_ids), 4
    masks = some_masks(tr.cfg, K, seed=1)
    per_row = {k: m.repeat_interleave(N, 0) for k, m in masks.items()}  # (K*N, L, H)
    mean, sums, counts = loss_stats(tr.model, s_ids * K, t_ids * K, tr.device, batch_size=9, head_mask=per_row)
    for i in range(K):
        m_i, s_i, c_i = loss_stats(tr.model, s_ids, t_ids, tr.device, head_mask=row(masks, i))
        np.testing.assert_allclose(sums[i * N:(i + 1) * N], s_i, rtol=1e-6)
        assert counts[i * N:(i + 1) * N].tolist() == c_i.tolist()


def test_single_head_masks():
    cfg = tiny_config()
    jobs, masks = single_head_masks(cfg)
    assert len(jobs) == 3 * 2 * 4 and jobs[0] == ("enc", 0, 0) and jobs[-1] == ("cross", 1, 3)
    assert all(m.shape == (1 + len(jobs), 2, 4) for m in masks.values())
    off = sum((1 - m).flatten(1).sum(1) for m in masks.values())  # heads off per row
    assert off.tolist() == [0] + [1] * len(jobs)
    assert masks["dec"][1 + jobs.index(("dec", 1, 2)), 1, 2] == 0


def test_sentence_importance_equals_separate_analyze_calls(tr):
    rise = head_importance_for_sentence(tr, SENT)
    base = tr.translate(SENT)
    ids = tr.tgt_vocab.encode([s.token for s in base.steps])

    def loss(heads_off):
        return -np.mean(np.log([s.prob for s in tr.analyze(SENT, ids, heads_off=heads_off).steps]))

    jobs, _ = single_head_masks(tr.cfg)
    assert set(rise) == {"enc", "dec", "cross"} and rise["enc"].shape == (2, 4)
    base_loss = loss(None)
    for k, layer, head in jobs:
        assert rise[k][layer, head] == pytest.approx(loss(f"{k}.{layer}.{head}") - base_loss, abs=1e-5)
    assert np.abs(np.concatenate([r.ravel() for r in rise.values()])).max() > 1e-3  # masking matters
