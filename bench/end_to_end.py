"""End to end: the shipped recipe's training time to its best validation loss, and a full test2016 evaluation.

    python bench/end_to_end.py [--checkpoint checkpoints] [--data-dir DIR]

The training figures come from the log stored in the checkpoint's config.json (what
model.train measured while it ran); the evaluation is timed here, and set against the
mean training epoch of the same log.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.data import SPLITS, default_data_dir  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints"))
    p.add_argument("--data-dir", default=None)
    args = p.parse_args()
    training = json.loads((Path(args.checkpoint) / "config.json").read_text()).get("training")
    if not training:
        sys.exit("the checkpoint's config.json has no training log")
    history = training["history"]
    best = min(history, key=lambda h: h["val_loss"])
    to_best = sum(h["epoch_s"] for h in history if h["epoch"] <= best["epoch"])
    total = sum(h["epoch_s"] for h in history)
    mean_epoch = total / len(history)
    print(f"training: {len(history)} epochs, {total / 60:.1f} min of training steps; best single epoch "
          f"{best['epoch']} (val loss {best['val_loss']}) after {to_best / 60:.1f} min; mean epoch {mean_epoch:.0f} s, "
          f"{sum(h['tokens_per_s'] for h in history) / len(history):,.0f} target tok/s")
    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    if data is None:
        print("test2016 not found: pass --data-dir to time the evaluation")
        return
    src, ref = (str(data / f) for f in SPLITS["test"])
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "model.evaluate", "--src", src, "--ref", ref, "--checkpoint",
                          args.checkpoint], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    if out.returncode:
        sys.exit(out.stderr)
    scores = json.loads(out.stdout)
    print(f"summary: train to best {to_best / 60:.1f} min ({best['epoch']} epochs); test2016 evaluation {wall:.1f} s "
          f"wall incl. start-up = {wall / mean_epoch:.2f} training epochs; BLEU {scores['bleu']}, "
          f"loss {scores['loss']}, PPL {scores['ppl']}")


if __name__ == "__main__":
    main()
