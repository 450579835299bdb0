"""What each attribution method costs on a 20-token sentence, next to the bare greedy translation of the same run.

    python bench/attribute_speed.py [--threads 1] [--repeat 5]

Bars: gradient and input x gradient for every step at most 10x the bare translation, leave-one-out
at most 10x, value zeroing at most 15x, integrated gradients for one step at most 15x.
"""

import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_speed import median_ms  # noqa: E402
from bench.familiarity_speed import SENTENCE, start  # noqa: E402
from model.attribute import Attributor, attribute  # noqa: E402

BARS = {"gradient": 10, "input_x_gradient": 10, "leave_one_out": 10, "contrastive": 10, "value_zeroing": 15}


def main():
    args, tr = start(__doc__, repeat=5)
    r = tr.translate(SENTENCE)
    print(f"sentence: {len(r.src_tokens) - 2} tokens, {len(r.steps)} steps; {args.threads} thread(s)")
    bare = median_ms(lambda: tr.translate(SENTENCE), args.repeat)
    print(f"bare greedy translation:          {bare:8.1f} ms")
    out = [s.token for s in r.steps]
    forced = tr.force(SENTENCE, out)
    for method, bar in BARS.items():
        ms = median_ms(lambda: attribute(tr, forced, method), args.repeat)
        print(f"{method + ', every step:':33} {ms:8.1f} ms  {ms / bare:5.1f}x  (bar {bar}x)")
    a = Attributor(tr, forced)
    ms = median_ms(lambda: a.integrated_gradients(steps=[len(out) // 2]), args.repeat)
    print(f"{'integrated gradients, one step:':33} {ms:8.1f} ms  {ms / bare:5.1f}x  (bar 15x; every step: "
          f"{len(out)} of these, with progress)")


if __name__ == "__main__":
    main()
