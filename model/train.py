"""Train the reference model on Multi30k.

    python -m model.train --data-dir ../shared/data/multi30k [--out checkpoints] [--epochs 10] ...
    torchrun --nproc_per_node 2 -m model.train --data-dir ...   # DistributedDataParallel

Adam, batches of 128 pairs bucketed by length, gradient-norm clip 1.0, cross-entropy
that ignores padding (docs/contract.md); optionally word dropout on the inputs (--word-dropout).
The best-validation epoch is kept; --average K then tries the mean of the K best
epochs' weights and keeps it if its validation loss is lower. Every epoch saves a
resumable state in --work-dir; --resume continues from it. --snapshots also keeps the weights at chosen
steps (log-spaced by default) in --work-dir/snapshots for the training replay (model/replay.py).
"""

import json
import math
import os
import random
import re
import time
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from . import cli, files
from .checkpoint import save_checkpoint
from .config import ModelConfig
from .data import bucket_batches, encode_pairs, pad
from .device import describe, pick_device
from .extras import Extras
from .metrics import evaluate_loss, token_loss
from .transformer import Transformer
from .vocab import SPECIALS, UNK_ID, Vocab, tokenize


def lr_at(step: int, lr: float, warmup: int, decay: bool) -> float:
    """Linear warm-up over `warmup` steps, then constant or (decay) inverse-square-root."""
    if warmup and step < warmup:
        return lr * (step + 1) / warmup
    if decay and warmup:
        return lr * math.sqrt(warmup / (step + 1))
    return lr


def word_dropout(ids: torch.Tensor, p: float) -> torch.Tensor:
    """Each real token (no special, no padding) becomes <unk> with probability p (Gal & Ghahramani, 2016).

    p = 0 draws no random numbers, so runs without it stay bit-identical to before it existed.
    """
    if p <= 0:
        return ids
    drop = (torch.rand(ids.shape, device=ids.device) < p) & (ids >= len(SPECIALS))
    return ids.masked_fill(drop, UNK_ID)


DEFAULT_SNAPSHOTS = "0,25,50,100,200,400,800,e1,e2,e3,e5,e8,e12,last"
_STEP = re.compile(r"[0-9]{1,9}")  # ASCII digits, few of them: str.isdigit() takes "²", which int() refuses


def parse_snapshots(text: str) -> tuple[set[int], set[int], bool]:
    """'0,25,e1,last' -> steps {0, 25}, ends of epochs {1}, and whether the last epoch's end is kept.

    A step N is the weights after N updates (0: the initialisation); eN the weights at the end of epoch N.
    """
    steps, epochs, last = set(), set(), False
    for item in filter(None, (t.strip() for t in text.split(","))):
        if item == "last":
            last = True
        elif item[0] == "e" and _STEP.fullmatch(item[1:]) and int(item[1:]) > 0:
            epochs.add(int(item[1:]))
        elif _STEP.fullmatch(item):
            steps.add(int(item))
        else:
            raise ValueError(f"--snapshots: {item!r} is not a step (25), an epoch's end (e3) or 'last'")
    return steps, epochs, last


class Snapshots:
    """Writes the weights at the chosen points to DIR/stepNNNNNN.safetensors and lists them in DIR/snapshots.json.

    Reading the weights draws no random numbers and changes nothing, so a run with snapshots ends with exactly
    the weights of the same run without (tests/*/test_train.py). DIR also gets config.json and vocab.json, so a
    snapshot folder loads on its own (model/replay.py).
    """

    def __init__(self, folder: Path, spec: str, model, src_vocab, tgt_vocab, steps_per_epoch: int):
        self.dir = Path(folder)
        self.steps, self.epochs, self.last = parse_snapshots(spec)
        self.steps_per_epoch = steps_per_epoch
        self.dir.mkdir(parents=True, exist_ok=True)
        save_checkpoint(model, src_vocab, tgt_vocab, self.dir, {"snapshots": spec}, weights=False)
        manifest = self.dir / "snapshots.json"
        self.rows = json.loads(manifest.read_text()) if manifest.is_file() else []

    def at_step(self, model, step: int):
        """Before an update, and once more after an epoch's last (so that a step at an epoch's end is kept too)."""
        if step in self.steps:
            self.save(model, step, None)

    def at_epoch_end(self, model, step: int, epoch: int, last: bool):
        self.at_step(model, step)
        if epoch in self.epochs or (last and self.last):
            self.save(model, step, epoch)

    def save(self, model, step: int, epoch_end):
        """The weights after `step` updates, once: a step asked for twice (a step number that is also an
        epoch's end) is written once, its row keeping the epoch it ends."""
        old = next((r for r in self.rows if r["step"] == step), None)
        name = f"step{step:06d}.safetensors"
        if old is None or not (self.dir / name).is_file():
            with files.replacing(self.dir / name) as tmp:
                save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, tmp)
        epoch_end = epoch_end or (old or {}).get("epoch_end")
        row = {"step": step, "epoch": round(step / self.steps_per_epoch, 3), "epoch_end": epoch_end, "file": name}
        self.rows = sorted([r for r in self.rows if r["step"] != step] + [row], key=lambda r: r["step"])
        files.write_text(self.dir / "snapshots.json", files.dumps(self.rows, indent=1) + "\n")


def average_state(paths) -> dict:
    states = [load_file(p) for p in paths]
    return {k: sum(s[k].double() for s in states).div(len(states)).to(states[0][k].dtype) for k in states[0]}


def setup_distributed():
    """(rank, world) under torchrun; (0, 1) otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank = dist.get_rank()
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    return rank, world


def parse_args(argv=None):
    p = cli.Parser(description=__doc__)
    p.add_argument("--data-dir", required=True, help="folder with the Multi30k .gz files")
    p.add_argument("--out", default="checkpoints", help="checkpoint folder to write (default: checkpoints)")
    p.add_argument("--work-dir", default="runs/train", help="per-epoch snapshots and resume state")
    p.add_argument("--epochs", type=cli.whole, default=10)
    p.add_argument("--batch-size", type=cli.whole, default=128, help="global batch, in sentence pairs")
    p.add_argument("--lr", type=cli.real, default=5e-4)
    p.add_argument("--warmup", type=cli.whole, default=0, help="linear warm-up steps (0: constant lr, the reference)")
    p.add_argument("--decay", action="store_true", help="inverse-square-root decay after the warm-up")
    p.add_argument("--label-smoothing", type=cli.real, default=0.0)
    p.add_argument("--clip", type=cli.real, default=1.0)
    p.add_argument("--average", type=cli.whole, default=1, help="try averaging the K best epochs")
    p.add_argument("--positions", choices=["learned", "sinusoidal"], default="learned")
    p.add_argument("--dropout", type=cli.real, default=0.1)
    p.add_argument("--word-dropout", type=cli.real, default=0.0,
                   help="replace each real source and decoder-input token by <unk> with this probability")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the forward pass (fast on GPUs and on CPUs "
                   "with AVX-512 BF16 or AMX; on others 8x slower than fp32)")
    p.add_argument("--seed", type=cli.whole, default=1234)
    cli.add_device(p)
    p.add_argument("--limit", type=cli.whole, default=0, help="use only the first N training pairs (0: all; tests)")
    p.add_argument("--max-steps", type=cli.whole, default=0, help="stop each epoch after N steps (0: all; tests)")
    p.add_argument("--resume", action="store_true", help="continue from --work-dir/state.pt")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--snapshots", nargs="?", const=DEFAULT_SNAPSHOTS, metavar="STEPS",
                   help="keep the weights at these points in --work-dir/snapshots: steps (25), ends of epochs (e3) "
                   f"and 'last', comma-separated (alone: {DEFAULT_SNAPSHOTS})")
    args = p.parse_args(argv)
    cli.check(args, epochs=cli.COUNT, batch_size=cli.COUNT, lr=cli.Range(0, 1), warmup=cli.OPTIONAL_COUNT,
              label_smoothing=cli.SHARE, clip=cli.Range(0), average=cli.COUNT, dropout=cli.Range(0, 1, open=True),
              word_dropout=cli.SHARE, seed=cli.SEED, limit=cli.OPTIONAL_COUNT, max_steps=cli.OPTIONAL_COUNT)
    if args.snapshots is not None:
        try:
            parse_snapshots(args.snapshots)
        except ValueError as e:
            p.error(str(e))
    return args


@cli.entry_point
def main(argv=None):
    args = parse_args(argv)
    device = pick_device(args.device)
    rank, world = setup_distributed()
    is_main = rank == 0
    log = (lambda *a: print(*a, flush=True)) if is_main else (lambda *a: None)
    if world > 1 and torch.cuda.is_available():  # torchrun: each process on its own GPU
        device = torch.device("cuda", torch.cuda.current_device())
    random.seed(args.seed)
    torch.manual_seed(args.seed)

    train_src, train_tgt = cli.read_split(args.data_dir, "train")
    val_src, val_tgt = cli.read_split(args.data_dir, "val")
    if args.limit:
        train_src, train_tgt = train_src[:args.limit], train_tgt[:args.limit]
    t0 = time.time()
    # Vocabularies come from the training split only (docs/contract.md), whatever --limit says about what we train on.
    src_vocab = Vocab.build(tokenize(s, "de") for s in train_src)
    tgt_vocab = Vocab.build(tokenize(s, "en") for s in train_tgt)
    cfg = ModelConfig(len(src_vocab), len(tgt_vocab), positions=args.positions, dropout=args.dropout)
    tr_s, tr_t = encode_pairs(train_src, train_tgt, src_vocab, tgt_vocab, cfg.max_positions)
    va_s, va_t = encode_pairs(val_src, val_tgt, src_vocab, tgt_vocab, cfg.max_positions)
    log(f"vocab de {len(src_vocab)} en {len(tgt_vocab)}; {len(tr_s)} train / {len(va_s)} val pairs; "
        f"tokenized in {time.time() - t0:.1f}s; device {describe(device)}; processes {world}")

    model = Transformer(cfg).to(device)
    log(f"parameters {model.n_params():,}")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    work = Path(args.work_dir)
    if is_main:
        work.mkdir(parents=True, exist_ok=True)
    history, start_epoch, step = [], 0, 0
    if args.resume and (work / "state.pt").is_file():
        state = torch.load(work / "state.pt", weights_only=True)  # tensors and plain types only: no code runs
        model.load_state_dict(load_file(work / f"epoch{state['epoch']:02d}.safetensors"))
        opt.load_state_dict(state["optimizer"])
        history, start_epoch, step = json.loads(state["history"]), state["epoch"], state["step"]
        torch.set_rng_state(state["rng"])
        log(f"resumed after epoch {start_epoch}")
    train_model = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    snapshots = None
    if args.snapshots is not None and is_main:
        per_epoch = len(bucket_batches(tr_s, tr_t, args.batch_size, seed=args.seed * 1000 + 1))
        if args.max_steps:
            per_epoch = min(per_epoch, args.max_steps)
        snapshots = Snapshots(work / "snapshots", args.snapshots, model, src_vocab, tgt_vocab, per_epoch)

    for epoch in range(start_epoch + 1, args.epochs + 1):
        model.train()
        batches = bucket_batches(tr_s, tr_t, args.batch_size, seed=args.seed * 1000 + epoch)
        if args.max_steps:
            batches = batches[:args.max_steps]
        t_epoch, tokens, loss_sum = time.time(), 0, 0.0
        bar = tqdm(batches, desc=f"epoch {epoch}", disable=not is_main or args.no_progress, leave=False)
        for idx in bar:
            if snapshots:
                snapshots.at_step(model, step)
            # Each process takes its share of the same global batch; the loss is normalised by the
            # global token count so the summed gradients equal one process on the whole batch.
            mine = idx[rank::world]
            src = pad([tr_s[i] for i in mine]).to(device)
            tgt = pad([tr_t[i] for i in mine]).to(device)
            n_global = sum(len(tr_t[i]) - 1 for i in idx)
            src_in, tgt_in = word_dropout(src, args.word_dropout), word_dropout(tgt[:, :-1], args.word_dropout)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
                out = train_model(src_in, tgt_in, Extras(need_weights=False))
            loss, n = token_loss(out.logits, tgt[:, 1:], args.label_smoothing)
            for g in opt.param_groups:
                g["lr"] = lr_at(step, args.lr, args.warmup, args.decay)
            opt.zero_grad(set_to_none=True)
            (loss * world / n_global).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            step += 1
            tokens += n_global
            loss_sum += loss.item() * world  # this process's share, scaled; exact when world == 1
            bar.set_postfix(loss=f"{loss.item() / max(n, 1):.3f}")
        train_time = time.time() - t_epoch
        if not is_main:
            continue
        val_loss = evaluate_loss(model, va_s, va_t, device)
        train_loss = loss_sum / tokens
        rec = {"epoch": epoch, "train_loss": round(train_loss, 4), "val_loss": round(val_loss, 4),
               "val_ppl": round(math.exp(val_loss), 3), "tokens_per_s": round(tokens / train_time),
               "epoch_s": round(train_time, 1), "lr": opt.param_groups[0]["lr"]}
        history.append(rec)
        log(f"epoch {epoch:2d} | train loss {train_loss:.3f} ppl {math.exp(train_loss):7.3f} | "
            f"val loss {val_loss:.3f} ppl {math.exp(val_loss):7.3f} | {rec['tokens_per_s']:,} tok/s | "
            f"{train_time:.0f}s")
        snap = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        with files.replacing(work / f"epoch{epoch:02d}.safetensors") as tmp:
            save_file(snap, tmp)
        if snapshots:
            snapshots.at_epoch_end(model, step, epoch, epoch == args.epochs)
        with files.replacing(work / "state.pt") as tmp:
            torch.save({"optimizer": opt.state_dict(), "epoch": epoch, "step": step,
                        "history": files.dumps(history), "rng": torch.get_rng_state()}, tmp)
        if rec["val_loss"] <= min(h["val_loss"] for h in history):  # the same rounding on both sides
            save_checkpoint(model, src_vocab, tgt_vocab, args.out, {"args": vars(args), "history": history,
                                                                      "best_epoch": epoch})
            log(f"  saved best epoch {epoch} to {args.out}")

    if is_main and history:
        best = min(history, key=lambda h: h["val_loss"])
        chosen = {"best_epoch": best["epoch"], "val_loss": best["val_loss"]}
        # Written again from its snapshot: a run stopped and finished with --resume (or an older run whose
        # in-loop save missed the best epoch) still leaves the best epoch in --out.
        model.load_state_dict(load_file(work / f"epoch{best['epoch']:02d}.safetensors"))
        save_checkpoint(model, src_vocab, tgt_vocab, args.out, {"args": vars(args), "history": history, **chosen})
        if args.average > 1:
            top = sorted(history, key=lambda h: h["val_loss"])[:args.average]
            epochs = sorted(h["epoch"] for h in top)
            model.load_state_dict(average_state([work / f"epoch{e:02d}.safetensors" for e in epochs]))
            avg_loss = evaluate_loss(model, va_s, va_t, device)
            log(f"average of epochs {epochs}: val loss {avg_loss:.3f} ppl {math.exp(avg_loss):.3f} "
                f"(best single: epoch {best['epoch']}, {best['val_loss']:.3f})")
            if avg_loss < best["val_loss"]:
                chosen = {"averaged_epochs": epochs, "val_loss": round(avg_loss, 4)}
                save_checkpoint(model, src_vocab, tgt_vocab, args.out,
                                {"args": vars(args), "history": history, **chosen})
        log("result " + files.dumps(chosen))
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    cli.run(main)
