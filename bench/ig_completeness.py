"""How far integrated gradients' scores are from completeness, at the page's 64 Gauss-Legendre nodes and at 256.

    python bench/ig_completeness.py [--checkpoint checkpoints/sinusoidal] [--sentences 10] [--threads 2]

For every step of the greedy translations of the first test sentences: gap_t = |sum_i score_i - (F_t(x) - F_t(x'))|
relative to |F_t(x) - F_t(x')| (docs/contract.md, Attributions). Prints, per node count, the steps measured, how
many are over 1%, the median and the largest relative gap, and the time against the 64-node run of the same steps.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.attribute import IG_STEPS, Attributor  # noqa: E402
from model.data import default_data_dir, load_split  # noqa: E402
from model.translator import Translator  # noqa: E402

NODES = (IG_STEPS, 4 * IG_STEPS)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints"))
    p.add_argument("--sentences", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr = Translator.load(args.checkpoint, "cpu")
    sentences = load_split(default_data_dir(), "test")[0][:args.sentences]
    attributors = [Attributor(tr, tr.force(s)) for s in sentences]
    print(f"{args.checkpoint}: {len(sentences)} test sentences, {sum(a.T for a in attributors)} steps")
    first = None
    for n in NODES:
        start, gaps = time.perf_counter(), []
        for a in attributors:
            source, prefix, fx, fb, gap = a.integrated_gradients(n_steps=n)
            gaps.append(gap / np.maximum(np.abs(fx - fb), 1e-12))
        seconds = time.perf_counter() - start
        first = first or seconds
        rel = np.concatenate(gaps)
        print(f"{n:4d} nodes: {len(rel)} steps, {int((rel > 0.01).sum())} over 1%, median {np.median(rel):.4%}, "
              f"largest {rel.max():.4%}; {seconds:.0f} s ({seconds / first:.2f}x the {NODES[0]}-node run)")


if __name__ == "__main__":
    main()
