"""The Features view's work against the page's translation, measured in the same run.

    python bench/features_speed.py [--threads 1] [--repeat 7]

On the shipped model and its transcoders, for a 20-token sentence (SENTENCE, tests/page/test_cache_plain.py's; the
page runs one torch thread per call, app.py), the median of --repeat runs each, after a warm-up:

1. reference: the page's translation (Translator.translate: greedy, every map and the step trace);
2. the view's first drawing: the forced pass over that output and every block's features (transcoders.
   sentence_features) with their labels from the index, as views/features.py computes them -- bar: at most 1.3x
   the reference;
3. a feature switched off, redrawn: what views/features.py `edited` computes, the greedy translation with the edit
   (translate_batch with edit_patch) and the original output's probabilities, teacher-forced, with it -- bar: at
   most 1 s;
4. a feature's page read from the index (the index's first read, once per process, said beside it) -- bar: 1 s.
"""

import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_speed import median_ms  # noqa: E402
from bench.familiarity_speed import start  # noqa: E402
from model import transcoders as T  # noqa: E402
from model.extras import Extras  # noqa: E402

SENTENCE = ("Ein kleines Mädchen in einem rosa Kleid klettert mit ihrem alten Vater heute auf einen großen Baum im "
            "Park .")
EDITED = "dec.1"  # the block whose feature is switched off: its strongest feature at the second step


def main():
    args, tr = start(__doc__, repeat=7)
    folder = ROOT / "checkpoints"
    dicts, _ = T.load(folder)
    t0 = time.perf_counter()
    index = T.read_index(folder)
    first_index = (time.perf_counter() - t0) * 1000
    r = tr.translate(SENTENCE)
    tokens = [s.token for s in r.steps]
    assert len(r.src_tokens) - 2 == 20, f"the sentence has {len(r.src_tokens) - 2} tokens, not 20"
    print(f"sentence: {len(r.src_tokens) - 2} tokens, {len(r.steps)} steps; {args.threads} thread(s), "
          f"median of {args.repeat}")

    def features():
        found = T.sentence_features(tr, dicts, tr.force(SENTENCE, tokens))
        return [[index["labels"][b.block][f] for top in b.top for f, _ in top] for b in found]

    f = {b.block: b for b in T.sentence_features(tr, dicts, tr.force(SENTENCE, tokens))}[EDITED].top[1][0][0]
    name = f"{EDITED}.{f}"

    def switched_off():
        patch = T.edit_patch(dicts, T.parse_edits(f"{name}=0", dicts))
        after = tr.translate_batch([SENTENCE], patch=patch)[0]
        src, tgt, out = tr.inputs(tr.force(SENTENCE, tokens))
        with torch.no_grad():
            logp = tr.model(src, tgt, Extras(patch=patch, need_weights=False)).logits[0].float().log_softmax(-1)
        return after, logp.gather(-1, out[:, None]).squeeze(-1).exp().tolist()

    translate = median_ms(lambda: tr.translate(SENTENCE), args.repeat)
    draw = median_ms(features, args.repeat)
    redraw = median_ms(switched_off, args.repeat)
    page = median_ms(lambda: T.feature_page(tr, index, name, dicts), args.repeat)
    print(f"translation (the reference):        {translate:8.1f} ms")
    print(f"features, first drawing:            {draw:8.1f} ms  {draw / translate:5.2f}x  (bar 1.3x)")
    print(f"{name + ' off, redrawn:':35} {redraw:8.1f} ms  {redraw / translate:5.2f}x  (bar 1000 ms)")
    print(f"a feature's page from the index:    {page:8.1f} ms           (bar 1000 ms; the index's first read "
          f"{first_index:.0f} ms, once per process)")


if __name__ == "__main__":
    main()
