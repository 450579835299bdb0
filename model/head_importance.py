"""How much each head matters: BLEU drop and loss rise when only that head is switched off.

    python -m model.head_importance --src test.de.gz --ref test.en.gz [--checkpoint PATH] [--out FILE]

After Michel, Levy and Neubig (2019), "Are Sixteen Heads Really Better than One?":
every head of every kind (encoder self, decoder self, cross) is masked alone, the
corpus is translated (greedy, batched) and scored. Each difference from the baseline
gets a 95% paired-bootstrap interval over sentences (Koehn, 2004), so a drop that one
resample of the test set would erase shows as an interval around zero. Writes JSON
(default: CHECKPOINT/head_importance.json, which the app shows):
    {"baseline": {bleu, loss, ppl, n},
     "kinds": {kind: {"bleu": L x H, "loss": L x H,
                      "bleu_drop_ci": L x H x (low, high), "loss_rise_ci": L x H x (low, high)}},
     "bootstrap": {"resamples", "seed", "level"}, ...}

The 72 masked variants do not cost a pass each: every (sentence, mask) pair is a row, and
rows with different per-row head masks (model/transformer.py) share one batch, for greedy
decoding and for teacher forcing alike (`--batch-rows`). What the rows have in common is
computed once: the encoder per (sentence, encoder mask), so the 48 variants that switch off a
decoder head share the unmasked encoding; a sentence's reference is scored for all its rows
in one teacher-forced pass; n-grams are counted once per distinct output. `--one-at-a-time`
runs the old loop (one corpus score per head); both give the same table.
"""

import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from . import files
from .data import encode_pairs, pad
from .decoding import greedy_ids
from .extras import KINDS, Extras
from .heads import n_layers
from .metrics import (BOOTSTRAP_SEED, CorpusScore, bleu_stats, corpus_score, mean_loss, paired_bootstraps,
                      sentence_losses)
from .translator import MAX_OUTPUT

BATCH_ROWS = 512  # (sentence, mask) rows per forward pass: 7 sentences x 73 variants
MAX_RESAMPLES = 10_000  # bootstrap draws at most: 1,000 give the intervals to two digits; each holds N counts


def single_head_masks(cfg) -> tuple[list, dict]:
    """The baseline and every head masked alone, as per-row masks.

    Returns jobs [(kind, layer, head)] (J = 72 for the reference model) and a HeadMask
    {kind: (1 + J, L, H)}: row 0 keeps every head, row 1 + j switches off job j's head only.
    """
    jobs = [(k, layer, head) for k in KINDS for layer in range(n_layers(cfg, k)) for head in range(cfg.n_heads)]
    masks = {k: torch.ones(1 + len(jobs), n_layers(cfg, k), cfg.n_heads) for k in KINDS}
    for j, (k, layer, head) in enumerate(jobs):
        masks[k][1 + j, layer, head] = 0.0
    return jobs, masks


def head_importance(translator, src, ref, progress=True, resamples=1000, seed=BOOTSTRAP_SEED,
                    level=0.95, batch_rows=BATCH_ROWS) -> dict:
    """The importance table, every masked variant computed as rows of shared batches."""
    jobs, masks = single_head_masks(translator.cfg)
    runs = batched_corpus_scores(translator, src, ref, masks, batch_rows, progress)
    return _table(translator.cfg, jobs, runs[0], runs[1:], resamples, seed, level)


def head_importance_one_at_a_time(translator, src, ref, progress=True, resamples=1000, seed=BOOTSTRAP_SEED,
                                  level=0.95) -> dict:
    """The same table the slow way: one corpus score per masked head (the reference for the batched one)."""
    jobs, _ = single_head_masks(translator.cfg)
    base = corpus_score(translator, src, ref)
    masked = [corpus_score(translator, src, ref, heads_off=f"{k}.{layer}.{head}")
              for k, layer, head in tqdm(jobs, desc="heads", disable=not progress)]
    return _table(translator.cfg, jobs, base, masked, resamples, seed, level)


def _table(cfg, jobs, base: CorpusScore, masked: list, resamples, seed, level) -> dict:
    kinds = {k: {name: [[None] * cfg.n_heads for _ in range(n_layers(cfg, k))]
                 for name in ("bleu", "loss", "bleu_drop_ci", "loss_rise_ci")} for k in KINDS}
    intervals = paired_bootstraps(base, masked, resamples, seed, level)
    for (k, layer, head), run, ci in zip(jobs, masked, intervals, strict=True):
        s = run.summary()
        kinds[k]["bleu"][layer][head] = s["bleu"]
        kinds[k]["loss"][layer][head] = s["loss"]
        kinds[k]["bleu_drop_ci"][layer][head] = [round(x, 2) for x in ci["bleu_drop"]]
        kinds[k]["loss_rise_ci"][layer][head] = [round(x, 4) for x in ci["loss_rise"]]
    return {"baseline": base.summary(), "kinds": kinds,
            "bootstrap": {"resamples": resamples, "seed": seed, "level": level},
            "note": "bleu/loss with only that head masked; layers and heads 0-based; greedy decoding; "
                    "*_ci: paired-bootstrap percentile interval over sentences of baseline bleu - bleu "
                    "and loss - baseline loss"}


@torch.no_grad()
def batched_corpus_scores(translator, src: list, ref: list, masks: dict, batch_rows=BATCH_ROWS,
                          progress=False) -> list:
    """One CorpusScore per mask row of `masks` ({kind: (M, L, H)}), as corpus_score with that mask
    would give: greedy outputs ('' for an empty source line) and reference losses.

    Every (sentence, mask) pair is a batch row, sentences of similar length together. Per batch,
    the encoder runs once per (sentence, encoder mask) (shared_encoding); on that, greedy_ids
    decodes the outputs and one teacher-forced pass per sentence scores its reference.
    """
    M, N = next(iter(masks.values())).shape[0], len(src)
    model, device, itos = translator.model, translator.device, translator.tgt_vocab.itos
    s_ids, t_ids = encode_pairs(src, ref, translator.src_vocab, translator.tgt_vocab, translator.cfg.max_positions,
                                translator.cfg.source_start)
    usable = {i for i, s in enumerate(src) if s.strip()}  # what translate_all translates (the rest: '')
    order = sorted(range(N), key=lambda i: (len(s_ids[i]), len(t_ids[i])))
    rows = [(i, v) for i in order for v in range(M)]
    hyps = [[""] * N for _ in range(M)]
    sums, counts = np.zeros((M, N)), np.zeros((M, N), dtype=np.int64)
    for start in tqdm(range(0, len(rows), batch_rows), desc="rows", disable=not progress):
        chunk = rows[start:start + batch_rows]
        sent, variant = [i for i, _ in chunk], [v for _, v in chunk]
        memory, src_mask = shared_encoding(model, [s_ids[i] for i in sent], masks, variant, device)
        mask = {k: m[variant].to(device) for k, m in masks.items()}  # (B, L, H); decoding reads dec and cross
        for (i, v), out in zip(chunk, greedy_ids(model, memory, src_mask, MAX_OUTPUT, mask)):
            if i in usable:
                hyps[v][i] = translator.tgt_vocab.join([itos[t] for t in (out[:-1] if out and out[-1] ==
                                                                          model.cfg.eos_id else out)])
        for i in dict.fromkeys(sent):  # a sentence's rows share its reference: no padding
            b = torch.tensor([n for n, j in enumerate(sent) if j == i], device=device)
            tgt = torch.tensor([t_ids[i]], device=device).expand(len(b), -1)
            logits, _, _ = model.decode(tgt[:, :-1], memory[b], src_mask[b],
                                        extras=Extras({k: m[b] for k, m in mask.items()}, need_weights=False))
            v = [variant[n] for n in b.tolist()]
            sums[v, i], counts[v, i] = sentence_losses(logits, tgt[:, 1:], model.cfg.pad_id)
    # most masks leave a sentence's output as it was: count n-grams once per distinct (output, sentence)
    pairs = list(dict.fromkeys((hyps[v][i], i) for v in range(M) for i in range(N)))
    index = {p: n for n, p in enumerate(pairs)}
    stats = bleu_stats([h for h, _ in pairs], [ref[i] for _, i in pairs],
                       translator.tgt_vocab.pieces is not None)  # (distinct pairs, 10)
    return [CorpusScore(hyps[v], stats[[index[(hyps[v][i], i)] for i in range(N)]], mean_loss(sums[v], counts[v]),
                        sums[v], counts[v]) for v in range(M)]


@torch.no_grad()
def shared_encoding(model, ids: list, masks: dict, variant: list, device) -> tuple:
    """Encoder output (B, S, D) and source mask (B, 1, 1, S) of rows (ids[b], mask row variant[b]).

    The encoder runs once per distinct (source, encoder mask): rows whose masks switch off only
    decoder heads share the unmasked encoding, which is the same tensor the encoder gives each
    of them alone (the encoder never sees the decoder's masks).
    """
    enc = masks.get("enc")
    own = set() if enc is None else set((enc.flatten(1) != 1).any(1).nonzero().flatten().tolist())  # masked encoders
    keys = [(tuple(x), v if v in own else -1) for x, v in zip(ids, variant)]
    index = {k: u for u, k in enumerate(dict.fromkeys(keys))}  # distinct keys, in order
    distinct = list(index)
    where = torch.tensor([index[k] for k in keys], device=device)
    src = pad([list(x) for x, _ in distinct], model.cfg.pad_id).to(device)
    head_mask = None
    if enc is not None:
        head_mask = {"enc": torch.stack([torch.ones_like(enc[0]) if v < 0 else enc[v] for _, v in distinct]).to(device)}
    memory, _ = model.encode(src, Extras(head_mask, need_weights=False))
    return memory[where], model.src_mask(src)[where]


@torch.no_grad()
def head_importance_for_sentence(translator, sentence: str) -> dict:
    """Loss rise of one sentence's own greedy output, teacher-forced, with each head masked alone.

    One forward pass of 1 + J rows (baseline and every single-head mask), the encoder run once
    per encoder mask. The loss is the mean -log p of the output's steps (<eos> included), as
    Translator.analyze's step probabilities give it. Returns {kind: (L, H) numpy array}: masked
    loss - baseline loss.
    """
    _, src_ids, _ = translator.source_ids(sentence)
    model, device = translator.model, translator.device
    jobs, masks = single_head_masks(translator.cfg)
    M = 1 + len(jobs)
    memory, src_mask = shared_encoding(model, [src_ids] * M, masks, list(range(M)), device)
    out = torch.tensor(greedy_ids(model, memory[:1], src_mask[:1], MAX_OUTPUT)[0], device=device)  # (T,)
    tgt_in = torch.cat([torch.tensor([model.cfg.sos_id], device=device), out[:-1]])[None].expand(M, -1)  # (M, T)
    mask = {k: m.to(device) for k, m in masks.items()}
    logits, _, _ = model.decode(tgt_in, memory, src_mask, extras=Extras(mask, need_weights=False))  # (M, T, V)
    logp = logits.float().log_softmax(-1).gather(-1, out.expand(M, -1)[..., None]).squeeze(-1)  # (M, T)
    loss = -logp.mean(-1).cpu().numpy()  # (M,)
    rise = {k: np.zeros((n_layers(translator.cfg, k), translator.cfg.n_heads)) for k in KINDS}
    for j, (k, layer, head) in enumerate(jobs):
        rise[k][layer, head] = loss[1 + j] - loss[0]
    return rise


def main(argv=None):
    """`python -m model.head_importance`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    cli.add_corpus(p)
    p.add_argument("--out", default=None, help="JSON file to write (default: CHECKPOINT/head_importance.json)")
    p.add_argument("--limit", type=cli.whole, default=0, help="only the first N sentences (0: all)")
    p.add_argument("--resamples", type=cli.whole, default=1000,
                   help=f"bootstrap resamples for the intervals (at most {MAX_RESAMPLES:,})")
    p.add_argument("--seed", type=cli.whole, default=BOOTSTRAP_SEED, help="bootstrap seed")
    p.add_argument("--batch-rows", type=cli.whole, default=BATCH_ROWS,
                   help="(sentence, masked head) rows per forward pass (more: faster, more memory)")
    p.add_argument("--one-at-a-time", action="store_true",
                   help="the old loop, one corpus pass per masked head (same numbers, much slower)")
    args = p.parse_args(argv)
    cli.check(args, limit=cli.OPTIONAL_COUNT, resamples=cli.Range(1, MAX_RESAMPLES), seed=cli.SEED,
              batch_rows=cli.COUNT)
    translator = cli.load_translator(args)
    src, ref = cli.read_corpus(args.src, args.ref)
    out = cli.output_file(args.out, args.checkpoint, "head_importance.json")
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    t0 = time.time()
    progress = not args.limit or sys.stderr.isatty()
    if args.one_at_a_time:
        result = head_importance_one_at_a_time(translator, src, ref, progress, args.resamples, args.seed)
    else:
        result = head_importance(translator, src, ref, progress, args.resamples, args.seed,
                                 batch_rows=args.batch_rows)
    result["data"] = {"src": Path(args.src).name, "ref": Path(args.ref).name, "n": len(src),
                      "seconds": round(time.time() - t0, 1), "device": translator.device_name}
    files.write_text(out, files.dumps(result, indent=1))
    worst = min(((k, i, j, b) for k, v in result["kinds"].items() for i, row in enumerate(v["bleu"])
                 for j, b in enumerate(row)), key=lambda x: x[3])
    print(files.dumps({"out": str(out), "baseline_bleu": result["baseline"]["bleu"],
                      "most_important": f"{worst[0]}.{worst[1]}.{worst[2]}", "bleu_without_it": worst[3],
                      "seconds": result["data"]["seconds"]}))
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
