"""Decoding speed of the shipped model, each figure next to a reference measured in the same run.

    python bench/decode_speed.py [--data-dir ../shared/data/multi30k] [--threads 2]

1. one 15-token sentence translated with every map and the step trace (median ms; bar 30 ms);
2. cached incremental greedy decoding vs re-running the whole prefix each step, for
   10-, 20- and 40-token outputs (ratio; bar >= 3x at 40);
3. test2016 batched vs one sentence at a time (ratio), and `python -m model.translate`
   on all 1,000 sentences, wall time including start-up (bar 30 s);
4. a class's Enter as the page's batcher decodes it (model/batching.py), on one thread as the server runs: 40
   test2016 sentences, every other with one of 8 sets of heads switched off (bench/load_test.py's), as one batch
   with a head mask per row vs one batch per set (as the batcher did before), with all maps (ratio).
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load_test import SPECS  # noqa: E402
from model.data import default_data_dir, load_split  # noqa: E402
from model.extras import Extras  # noqa: E402
from model.translator import Translator  # noqa: E402
from model.vocab import SOS_ID  # noqa: E402

SENTENCE = "Ein kleines Mädchen in einem rosa Kleid klettert auf einen großen Baum im Park."  # 15 tokens + 2


def median_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


@torch.no_grad()
def cached(model, src, n):
    """n decoding steps with the key/value cache (what model.decoding does), maps kept."""
    memory, _ = model.encode(src)
    mask, cache = model.src_mask(src), model.new_cache()
    y = torch.full((1, 1), SOS_ID)
    for t in range(n):
        logits, _, _ = model.decode(y, memory, mask, t, Extras(cache=cache))
        y = logits[:, -1].argmax(-1, keepdim=True)


@torch.no_grad()
def uncached(model, src, n):
    """The reference: n steps, each re-running the decoder over the whole prefix."""
    memory, _ = model.encode(src)
    mask = model.src_mask(src)
    ys = torch.full((1, 1), SOS_ID)
    for _ in range(n):
        logits, _, _ = model.decode(ys, memory, mask)
        ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default=None)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr = Translator.load(device="cpu")
    model = tr.model
    n_tok = len(tr.source_ids(SENTENCE)[0]) - 2
    one = median_ms(lambda: tr.translate(SENTENCE), 30)
    print(f"one sentence ({n_tok} tokens, all maps + trace): median {one:.1f} ms (bar 30 ms: {one / 30:.2f}x of bar)")

    src = torch.tensor([tr.source_ids(SENTENCE)[1]])
    for n in (10, 20, 40):
        a, b = median_ms(lambda: cached(model, src, n), 10), median_ms(lambda: uncached(model, src, n), 10)
        print(f"{n}-token output: cached {a:.1f} ms, re-running the prefix {b:.1f} ms -> {b / a:.2f}x faster")

    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    if data is None:
        print("test2016 not found: pass --data-dir to time the corpus figures")
        return
    de, _ = load_split(data, "test")
    t = time.perf_counter()
    tr.translate_batch(de, with_maps=False)
    batched = time.perf_counter() - t
    sample = de[:200]
    t = time.perf_counter()
    for s in sample:
        tr.translate_batch([s], with_maps=False)
    single = (time.perf_counter() - t) * len(de) / len(sample)
    print(f"test2016 ({len(de)} sentences): batched {batched:.1f} s, one at a time {single:.1f} s "
          f"(from 200) -> batched {single / batched:.2f}x faster")
    torch.set_num_threads(1)
    class_ = de[:40]
    specs = ["" if i % 2 == 0 else SPECS[i // 2 % len(SPECS)] for i in range(len(class_))]
    per_row = median_ms(lambda: tr.translate_batch(class_, heads_off=specs), 5)
    per_set = median_ms(lambda: [tr.translate_batch([x for x, h in zip(class_, specs) if h == spec], heads_off=spec)
                                 for spec in dict.fromkeys(specs)], 5)
    print(f"a class's Enter, {len(class_)} sentences with {len(set(specs))} head masks, one thread: one batch with a "
          f"mask per row {per_row:.0f} ms, one batch per mask {per_set:.0f} ms -> {per_set / per_row:.2f}x faster")
    torch.set_num_threads(args.threads)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "model.translate", "--input", str(data / "test_2016_flickr.de.gz")],
                         cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    assert out.returncode == 0 and len(out.stdout.splitlines()) == len(de), out.stderr[-500:]
    print(f"summary: one sentence {one:.1f} ms; cached decoding {b / a:.2f}x at 40 tokens; "
          f"model.translate on test2016 {wall:.1f} s wall incl. start-up (bar 30 s); batched {single / batched:.1f}x; "
          f"a class's mixed head masks in one batch {per_set / per_row:.2f}x")


if __name__ == "__main__":
    main()
