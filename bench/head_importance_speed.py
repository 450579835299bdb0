"""Head importance: masked variants as rows of one batch vs one corpus pass per head, in the same run.

    python bench/head_importance_speed.py [--n 100] [--rounds 1] [--batch-rows 512] [--threads 2] [--device cpu]

1. the first N test2016 sentences, the whole table (72 heads, bootstrap included) computed by
   the old loop (head_importance_one_at_a_time, the reference) and by the batched one,
   alternating, `--rounds` times each: both times, the speed-up (bar >= 5x), and whether
   the two tables are identical;
2. head_importance_for_sentence on one sentence (all 73 masks in one pass), median of 5
   (bar <= 1 s), next to one plain greedy translation of it.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.data import default_data_dir, load_split  # noqa: E402
from model.head_importance import (BATCH_ROWS, head_importance, head_importance_for_sentence,  # noqa: E402
                                   head_importance_one_at_a_time)
from model.translator import Translator  # noqa: E402

SENTENCE = "Ein kleines Mädchen in einem rosa Kleid klettert auf einen großen Baum im Park."  # 15 tokens + 2


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def differences(a: dict, b: dict, path="") -> list:
    """Paths where two tables differ (empty: identical)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a} vs {b}"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default=None)
    p.add_argument("--n", type=int, default=100, help="first N test2016 sentences")
    p.add_argument("--rounds", type=int, default=1, help="old/batched pairs, alternating")
    p.add_argument("--batch-rows", type=int, default=BATCH_ROWS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N, mps or auto (both loops run on it)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    data_dir = args.data_dir or default_data_dir()
    if data_dir is None:
        sys.exit("error: Multi30k not found: pass --data-dir or set MULTI30K_DIR")
    src, ref = load_split(data_dir, "test")
    src, ref = src[:args.n], ref[:args.n]
    tr = Translator.load(ROOT / "checkpoints", args.device)
    print(f"head importance, first {len(src)} test2016 sentences, {tr.device_name}, "
          f"batch rows {args.batch_rows}")

    old_times, new_times, diffs = [], [], []
    for r in range(args.rounds):
        t_old, old = timed(lambda: head_importance_one_at_a_time(tr, src, ref, progress=False))
        t_new, new = timed(lambda: head_importance(tr, src, ref, progress=False, batch_rows=args.batch_rows))
        old_times.append(t_old)
        new_times.append(t_new)
        diffs = differences(old, new)
        print(f"  round {r + 1}: one at a time {t_old:.1f} s, batched {t_new:.1f} s, "
              f"speed-up {t_old / t_new:.1f}x")
    t_old, t_new = statistics.median(old_times), statistics.median(new_times)
    print(f"one at a time (reference): {t_old:.1f} s   batched: {t_new:.1f} s   "
          f"speed-up: {t_old / t_new:.1f}x (bar >= 5x)")
    print(f"tables identical: {not diffs}" + "".join(f"\n  {d}" for d in diffs[:20]))

    greedy = [timed(lambda: tr.translate_batch([SENTENCE], with_maps=False))[0] for _ in range(5)]
    head_importance_for_sentence(tr, SENTENCE)  # warm-up
    one = [timed(lambda: head_importance_for_sentence(tr, SENTENCE))[0] for _ in range(5)]
    print(f"one sentence, 73 masks in one pass: median {statistics.median(one) * 1000:.0f} ms (bar <= 1000 ms); "
          f"its plain greedy translation (reference): {statistics.median(greedy) * 1000:.0f} ms, "
          f"ratio {statistics.median(one) / statistics.median(greedy):.1f}x")
    assert not diffs, "the batched table differs from the one-at-a-time loop"


if __name__ == "__main__":
    main()
