"""What the Faithfulness view costs for one step, every method, on a 20-token sentence, next to the bare greedy
translation of the same run.

    python bench/faithfulness_speed.py [--threads 2] [--repeat 3]

Bar: one step, every method, at most 1 s on 2 cores, the sentence's gradient scores reused (the page
caches them per sentence; only integrated gradients is computed per step) and the removals batched. The first
visit to a sentence also computes every other explanation once: shown as "cold".
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_speed import median_ms  # noqa: E402
from bench.familiarity_speed import SENTENCE, start  # noqa: E402
from model import faithfulness as F  # noqa: E402


def main():
    args, tr = start(__doc__, repeat=3)
    r = tr.translate(SENTENCE)
    out = [s.token for s in r.steps]
    t = len(out) // 2
    head = F.aligning_head(ROOT / "checkpoints")
    print(f"sentence: {len(r.src_tokens) - 2} tokens, {len(out)} steps, step {t + 1} measured; {args.threads} "
          "thread(s)")
    bare = median_ms(lambda: tr.translate(SENTENCE), args.repeat)
    print(f"bare greedy translation:                     {bare:8.1f} ms")
    cold = median_ms(lambda: F.measure(tr, SENTENCE, out, steps=[t], heads=(head,)), args.repeat)
    print(f"cold: every explanation + one step measured: {cold:8.1f} ms  {cold / bare:5.1f}x")
    scores = F.explanations(tr, SENTENCE, out, ig_steps=[], heads=(head,))
    # measure fills the step's integrated gradients into a copy: the cached scores need it again every time
    warm = median_ms(lambda: F.measure(tr, SENTENCE, out, steps=[t], scores=scores), args.repeat)
    print(f"one step (explanations cached):              {warm:8.1f} ms  {warm / bare:5.1f}x  (bar 1000 ms)")


if __name__ == "__main__":
    main()
