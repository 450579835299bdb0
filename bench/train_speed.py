"""Training throughput: our Transformer against one built on torch.nn.Transformer, same work, same run.

    python bench/train_speed.py [--batches 12] [--rounds 3] [--threads 2]

Both models get the same embeddings, positions and output layer (ours), the same
length-bucketed batches of 128 Multi30k pairs (or synthetic ones when the data is not
found), and Adam. Rounds alternate between the two so that noise on a shared machine
hits both alike. Prints target tokens per second for each, in fp32 and with bf16
autocast, and the ratios.
"""

import argparse
import random
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.config import ModelConfig  # noqa: E402
from model.data import bucket_batches, default_data_dir, encode_pairs, load_split, pad  # noqa: E402
from model.extras import Extras  # noqa: E402
from model.metrics import token_loss  # noqa: E402
from model.transformer import Embedding, Transformer  # noqa: E402
from model.vocab import Vocab, tokenize  # noqa: E402


class TorchReference(nn.Module):
    """The same model on nn.Transformer (which adds a final LayerNorm to encoder and decoder: +1,024 weights)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(cfg.src_vocab_size, cfg)
        self.tgt_embed = Embedding(cfg.tgt_vocab_size, cfg)
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_enc_layers, cfg.n_dec_layers, cfg.d_ff,
                                   cfg.dropout, batch_first=True)
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)

    def forward(self, src, tgt, extras=None):  # takes (and ignores) our model's extras: one call for both
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        src_pad, tgt_pad = src == self.cfg.pad_id, tgt == self.cfg.pad_id
        h = self.core(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=causal, src_key_padding_mask=src_pad,
                      tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.generator(h)


def batches(n: int):
    data = default_data_dir()
    if data is None:  # synthetic pairs of Multi30k-like lengths
        rng = random.Random(0)
        src = [[2] + [rng.randrange(4, 7853) for _ in range(rng.randint(8, 20))] + [3] for _ in range(128 * n)]
        tgt = [[2] + [rng.randrange(4, 5893) for _ in range(rng.randint(8, 20))] + [3] for _ in range(128 * n)]
        return (7853, 5893), [(pad(src[i:i + 128]), pad(tgt[i:i + 128])) for i in range(0, 128 * n, 128)]
    de, en = load_split(data, "train")
    sv, tv = Vocab.build(tokenize(s, "de") for s in de), Vocab.build(tokenize(s, "en") for s in en)
    s_ids, t_ids = encode_pairs(de, en, sv, tv, 100)
    chosen = bucket_batches(s_ids, t_ids, 128, seed=1)[:n]
    return (len(sv), len(tv)), [(pad([s_ids[i] for i in b]), pad([t_ids[i] for i in b])) for b in chosen]


def run(model, opt, data, bf16: bool) -> tuple[int, float]:
    tokens, t0 = 0, time.perf_counter()
    for src, tgt in data:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(src, tgt[:, :-1], Extras(need_weights=False))
        logits = out.logits if hasattr(out, "logits") else out
        loss, n = token_loss(logits, tgt[:, 1:])
        opt.zero_grad(set_to_none=True)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += n
    return tokens, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    (V_src, V_tgt), data = batches(args.batches)
    cfg = ModelConfig(V_src, V_tgt)
    results = {}
    for bf16 in (False, True):
        torch.manual_seed(0)
        models = {"ours": Transformer(cfg).train(), "nn.Transformer": TorchReference(cfg).train()}
        opts = {k: torch.optim.Adam(m.parameters(), lr=5e-4) for k, m in models.items()}
        for k in models:  # warm-up
            run(models[k], opts[k], data[:2], bf16)
        totals = {k: [0, 0.0] for k in models}
        for r in range(args.rounds):
            for k in (list(models) if r % 2 == 0 else list(models)[::-1]):
                n, s = run(models[k], opts[k], data, bf16)
                totals[k][0] += n
                totals[k][1] += s
        for k, (n, s) in totals.items():
            results[(k, bf16)] = n / s
        name = "bf16" if bf16 else "fp32"
        print(f"{name}: ours {results[('ours', bf16)]:,.0f} tok/s, nn.Transformer "
              f"{results[('nn.Transformer', bf16)]:,.0f} tok/s -> ours/reference "
              f"{results[('ours', bf16)] / results[('nn.Transformer', bf16)]:.2f}x")
    print(f"summary: ours/nn.Transformer fp32 {results[('ours', False)] / results[('nn.Transformer', False)]:.2f}x, "
          f"bf16 {results[('ours', True)] / results[('nn.Transformer', True)]:.2f}x; "
          f"ours bf16/fp32 {results[('ours', True)] / results[('ours', False)]:.2f}x "
          f"({args.threads} threads, {args.batches} batches x {args.rounds} rounds)")


if __name__ == "__main__":
    main()
