"""Cost of looking inside, next to a plain translation of the same sentence measured in the same run.

    python bench/inspect_speed.py [--threads 2] [--device cpu]

Median ms of: `Translator.translate` (the reference: every map and the step trace);
`Translator.inside` (greedy translation, then one teacher-forced pass with every
intermediate captured); `inside` given the output tokens (the captured pass alone);
`.head(...)` for every head of every layer of every kind at one query (the whole sweep);
`Translator.logit_lens`. Each is printed with its ratio to `translate`.
"""

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_speed import SENTENCE, median_ms  # noqa: E402
from model.extras import KINDS  # noqa: E402
from model.translator import Translator  # noqa: E402

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr = Translator.load(device=args.device)
    inside = tr.inside(SENTENCE)
    tokens = inside.output_tokens
    heads = [(k, layer, h) for k in KINDS for layer in range(inside.sublayers[k]["x"].shape[0])
             for h in range(tr.cfg.n_heads)]
    query = 1

    def sweep():
        for k, layer, h in heads:
            inside.head(k, layer, h, query)

    n = args.repeat
    base = median_ms(lambda: tr.translate(SENTENCE), n)
    rows = [("Translator.translate (reference)", base),
            ("Translator.inside (translate + captured pass)", median_ms(lambda: tr.inside(SENTENCE), n)),
            ("Translator.inside, output given (captured pass)", median_ms(lambda: tr.inside(SENTENCE, tokens), n)),
            (f".head() x {len(heads)} (every kind, layer, head; query {query})", median_ms(sweep, n)),
            ("Translator.logit_lens (translate + captured pass)", median_ms(lambda: tr.logit_lens(SENTENCE), n))]
    print(f"{tr.device_name}; {len(tr.source_ids(SENTENCE)[0]) - 2} source tokens, {len(tokens)} output steps; "
          f"median of {n}")
    for name, ms in rows:
        print(f"{name:<58} {ms:8.2f} ms  {ms / base:6.2f}x translate")


if __name__ == "__main__":
    main()
