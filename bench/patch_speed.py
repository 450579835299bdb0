"""What activation patching costs for one pair, next to the bare greedy translation of the same run.

    python bench/patch_speed.py [--threads 2] [--repeat 3]

Bars: every residual and head site of one pair patched exactly, both directions, at most 3 s on 2
cores; every cross-attention edge by attribution patching at most 0.1 s; the 12 strongest confirmed exactly.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_speed import median_ms  # noqa: E402
from bench.familiarity_speed import start  # noqa: E402
from model import patch as P  # noqa: E402

CLEAN = "Ein Mann in einem roten Hemd sitzt mit seinem Hund auf einer Bank vor dem großen Bahnhof."
CORRUPT = "Eine Frau in einem roten Hemd sitzt mit seinem Hund auf einer Bank vor dem großen Bahnhof."


def main():
    args, tr = start(__doc__, repeat=3)
    s = P.setup(tr, CLEAN, CORRUPT)
    rows = len(P.sites(s, tr.cfg.n_enc_layers, tr.cfg.n_dec_layers, tr.cfg.n_heads))
    print(f"pair: {s.src['clean'].size(1) - 2} tokens, first difference at step {s.step + 1} "
          f"({s.word_tokens[0]} / {s.word_tokens[1]}); {args.threads} thread(s)")
    bare = median_ms(lambda: tr.translate(CLEAN), args.repeat)
    print(f"bare greedy translation:                         {bare:8.1f} ms")
    both = median_ms(lambda: [P.patch_sites(tr, s, d) for d in P.DIRECTIONS], args.repeat)
    print(f"{2 * rows} sites patched exactly (both directions):      {both:8.1f} ms  {both / bare:5.1f}x  (bar 3000 ms)")
    atp = median_ms(lambda: P.attribution_patching(tr, s), args.repeat)
    print(f"every edge, attribution patching:                {atp:8.1f} ms  {atp / bare:5.1f}x  (bar 100 ms)")
    est = P.attribution_patching(tr, s)
    top = [tuple(int(i) for i in np.unravel_index(f, est.shape)) for f in (-abs(est)).argsort(axis=None)[:P.EDGES]]
    exact = median_ms(lambda: P.exact_edges(tr, s, top), args.repeat)
    print(f"{P.EDGES} strongest edges patched exactly:            {exact:8.1f} ms  {exact / bare:5.1f}x")
    whole = median_ms(lambda: P.patch(tr, CLEAN, CORRUPT), args.repeat)
    print(f"the whole pair as the page computes it:          {whole:8.1f} ms  {whole / bare:5.1f}x")


if __name__ == "__main__":
    main()
