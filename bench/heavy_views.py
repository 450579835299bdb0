"""Each view's own computation on a worst-case sentence, next to a plain translation of it.

    python bench/heavy_views.py [--threads 1]

The page runs one CPU thread per model call (app.py), so this does too by default. The worst
case fills the model's 100 positions and makes it write the longest output the page allows
(50 tokens): a list of 90 nouns with commas (cut at 100 tokens, as the page cuts it); a plain
long sentence gets a short output (89 words of test2016: 93 tokens in, 28 out). Prints the seconds
of each computation the views start, and its ratio to the greedy translation measured in the same
run; the ones that hold a core longest go behind the page's server-wide limit (views/calls.py HEAVY).
"""

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.head_importance import head_importance_for_sentence  # noqa: E402
from model.head_stats import translation_stats  # noqa: E402
from model.translator import Translator  # noqa: E402

NOUNS = ["Mann", "Frau", "Kind", "Hund", "Katze", "Auto", "Haus", "Baum", "Ball", "Hut"]
WORST = ", ".join(NOUNS * 9)



def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr = Translator.load()
    sentence = WORST
    n_tokens = len(tr.source_ids(sentence)[0])
    greedy = tr.translate(sentence)
    out_ids = tr.tgt_vocab.encode([s.token for s in greedy.steps])
    reference = " ".join(s.token for s in greedy.steps[:-1])
    jobs = {
        "translate (greedy, every map)": lambda: tr.translate(sentence),
        "analyze (teacher-forced pass)": lambda: tr.analyze(sentence, out_ids),
        "reference score": lambda: tr.score_reference(sentence, reference),
        "inside (every intermediate)": lambda: tr.inside(sentence, [s.token for s in greedy.steps]),
        "logit lens": lambda: tr.logit_lens(sentence, [s.token for s in greedy.steps]),
        "head statistics of the sentence": lambda: translation_stats(greedy),
        "beam search, width 4": lambda: tr.beam(sentence, 4),
        "beam search, width 8": lambda: tr.beam(sentence, 8),
        "head importance, live (73 masks)": lambda: head_importance_for_sentence(tr, sentence),
    }
    if hasattr(tr, "contributions"):
        jobs["contributions (ALTI+)"] = lambda: tr.contributions(sentence)
    if hasattr(tr, "decoder_lens"):
        jobs["DecoderLens (a decoding per encoder layer)"] = lambda: tr.decoder_lens(sentence)
    for job in jobs.values():  # first calls warm up caches and allocators
        job()
    took = {name: min(seconds(job) for _ in range(3)) for name, job in jobs.items()}
    base = took["translate (greedy, every map)"]
    print(f"{n_tokens} source tokens, {len(greedy.steps)} output tokens, {args.threads} thread(s)")
    for name, s in took.items():
        print(f"{name:45s} {s:7.3f} s  {s / base:6.1f}x translate")

if __name__ == "__main__":
    main()
