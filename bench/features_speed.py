"""The Feed-forward features view's work against the page's translation, measured in the same run.

    python bench/features_speed.py [--threads 2] [--runs 7]

On the shipped model and its transcoders, for a 20-token German sentence (SENTENCE), the median of --runs runs each:

1. reference: the page's translation (Translator.translate: greedy, every map and the step trace);
2. the view's first drawing: the forced pass over that output and every block's features (transcoders.
   sentence_features), plus the feature labels read from the index (cached after its first read, as the page
   caches it) -- bar: at most 1.3x the reference;
3. a feature switched off, redrawn: the greedy translation with the edit (translate_batch with edit_patch) and the
   teacher-forced probabilities with it -- bar: at most 1 s;
4. a feature page read from the index (the index's first load counted separately) -- bar: at most 1 s.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model import transcoders as T  # noqa: E402
from model.extras import Extras  # noqa: E402
from model.translator import Translator  # noqa: E402

SENTENCE = "Ein kleines Mädchen in einem rosa Kleid klettert auf einen großen Baum im Park neben dem Fluss ."


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr = Translator.load(ROOT / "checkpoints", "cpu")
    dicts, _ = T.load(ROOT / "checkpoints")
    t0 = time.perf_counter()
    index = T.read_index(ROOT / "checkpoints")
    first_index = time.perf_counter() - t0
    n = len(tr.source_ids(SENTENCE)[0])
    result = tr.translate(SENTENCE)
    tokens = [s.token for s in result.steps]

    def features():
        forced = tr.force(SENTENCE, tokens)
        found = T.sentence_features(tr, dicts, forced)
        return [[index["labels"][b.block][f] for top in b.top for f, _ in top] for b in found]

    f = T.sentence_features(tr, dicts, tr.force(SENTENCE, tokens))[4].top[1][0][0]
    patch = T.edit_patch(dicts, {("dec.1", f): 0.0})

    def switched_off():
        tr.translate_batch([SENTENCE], patch=patch)
        forced = tr.force(SENTENCE, tokens)
        src, tgt, _ = tr.inputs(forced)
        with torch.no_grad():
            tr.model(src, tgt, Extras(patch=patch, need_weights=False))

    translate = median_time(lambda: tr.translate(SENTENCE), args.runs)
    draw = median_time(features, args.runs)
    redraw = median_time(switched_off, args.runs)
    page = median_time(lambda: T.feature_page(tr, index, f"dec.1.{f}", dicts), args.runs)
    print(f"sentence: {n} source tokens, {len(tokens)} output tokens; {args.threads} threads, median of {args.runs}")
    print(f"translation (reference)            {translate * 1000:8.1f} ms")
    print(f"features, first drawing            {draw * 1000:8.1f} ms   {draw / translate:5.2f}x the translation "
          f"(bar 1.3x)")
    print(f"feature dec.1.{f} off, redrawn     {redraw * 1000:8.1f} ms   (bar 1000 ms)")
    print(f"a feature page from the index      {page * 1000:8.1f} ms   (bar 1000 ms); the index's first read "
          f"{first_index * 1000:.0f} ms")


if __name__ == "__main__":
    main()
