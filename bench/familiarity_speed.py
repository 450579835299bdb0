"""What knowing what the model knows costs an Enter, next to the bare model call measured in the same run.

    python bench/familiarity_speed.py [--threads 1] [--repeat 20]

On a 20-token sentence (the page runs one torch thread per call, app.py): the bare greedy translation with its
maps, then the familiarity measures and three nearest training sentences (model/familiarity.py), then the training
evidence of one step (model/evidence.py: a teacher-forced pass and the step index). Bar: familiarity
adds at most 50 ms.
"""

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_speed import median_ms  # noqa: E402
from model.evidence import Lexicon, StepIndex, step_state  # noqa: E402
from model.familiarity import Index, measure  # noqa: E402
from model.translator import Translator  # noqa: E402

SENTENCE = "Ein älterer Mann mit einem roten Hut und einer blauen Jacke verkauft am Rand des Marktes frisches Obst."


def start(doc: str, repeat: int):
    """A bench's command line (--threads, --repeat) and the shipped model on the CPU with that many threads."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=repeat)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    return args, Translator.load(None, "cpu")


def main():
    args, tr = start(__doc__, repeat=20)
    index, steps, texts = Index(ROOT / "checkpoints"), StepIndex(ROOT / "checkpoints"), Lexicon().texts()
    result = tr.translate(SENTENCE)
    print(f"sentence: {len(result.src_tokens) - 2} tokens, {len(result.steps)} steps; {args.threads} thread(s)")
    bare = median_ms(lambda: tr.translate(SENTENCE), args.repeat)
    fam = median_ms(lambda: measure(tr, result, index), args.repeat)
    ev = median_ms(lambda: steps.nearest(step_state(tr, result, 3), texts), args.repeat)
    print(f"bare model call (greedy, every map):  {bare:7.1f} ms")
    print(f"familiarity + 3 neighbours:           {fam:7.1f} ms  ({fam / bare:.2f}x the model call; bar 50 ms)")
    print(f"training evidence of one step:        {ev:7.1f} ms  ({ev / bare:.2f}x)")


if __name__ == "__main__":
    main()
