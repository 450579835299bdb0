"""Write CHECKPOINT/source_share.json: the test set's distribution of the ALTI+ source share, which the page
reads a sentence's shares against (low shares flag possible hallucinations: Dale et al., ACL 2023).

    python -m model.source_share --src test_2016_flickr.de.gz [--checkpoint PATH] [--device D] [--out FILE]
                                 [--no-progress]

Greedy translations in batches, then each output's contributions from one teacher-forced pass
(model/contributions.py, docs/contract.md "Contributions").
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .errors import InputError

QUANTILES = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
LOW_SHARE_QUANTILE = 0.05  # a step whose source share is below the test set's 5th percentile counts as low
BINS = 20  # histogram of the share over [0, 1]


# a corpus: the distribution of the source share -----------------------------------------------------
def corpus_source_shares(translator, sentences: list, batch_size: int = 64, progress: bool = False) -> tuple:
    """(per-step source shares: one array per usable sentence, the usable sentences' indices).

    Greedy translations in batches (as model.translate), then one teacher-forced capture per sentence.
    Sentences the translator refuses (empty lines) are left out.
    """
    usable = []
    for i, s in enumerate(sentences):
        try:
            translator.source_ids(s)
        except InputError:
            continue
        usable.append(i)
    shares = []
    with tqdm(total=len(usable), desc="sentences", unit="sent", disable=not progress) as bar:
        for start in range(0, len(usable), batch_size):
            chunk = usable[start:start + batch_size]
            results = translator.translate_batch([sentences[i] for i in chunk], top_k=1, with_maps=False)
            for i, r in zip(chunk, results, strict=True):
                c = translator.contributions(sentences[i], [s.token for s in r.steps])
                shares.append(c.source_share)
                bar.update(1)
    return shares, usable


def distribution(values: np.ndarray, digits: int = 4) -> dict:
    """Quantiles, mean, std and a histogram over [0, 1] of some source shares."""
    counts, edges = np.histogram(values, bins=BINS, range=(0.0, 1.0))
    return {"n": int(values.size), "mean": round(float(values.mean()), digits),
            "std": round(float(values.std()), digits),
            "quantiles": {f"{q:g}": round(float(np.quantile(values, q)), digits) for q in QUANTILES},
            "histogram": {"edges": [round(float(e), 3) for e in edges], "counts": counts.tolist()}}


def main(argv=None):
    """`python -m model.source_share`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    cli.add_corpus(p, ref=False)
    p.add_argument("--out", default=None, help="JSON file to write (default: CHECKPOINT/source_share.json)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)

    from .data import read_lines
    from .translator import MAX_OUTPUT

    translator = cli.load_translator(args)
    src = read_lines(args.src)
    out = cli.output_file(args.out, args.checkpoint, "source_share.json")
    t0 = time.time()
    shares, used = corpus_source_shares(translator, src, progress=not args.no_progress)
    if not shares:
        raise InputError(f"{args.src} has no sentence to translate ({len(src)} empty lines)")
    seconds = time.time() - t0
    per_step = np.concatenate(shares)
    words = np.concatenate([s[:-1] for s in shares])  # steps that emit a word, the <eos> step left out
    per_sentence = np.array([s.mean() for s in shares])
    result = {
        "checkpoint": translator.checkpoint_id,
        "method": "ALTI+ (Ferrando et al., EMNLP 2022): source share = summed contribution of the source tokens "
                  "to each generated token's prediction (model/contributions.py, docs/contract.md Contributions)",
        "low_share_threshold": {"quantile": LOW_SHARE_QUANTILE,
                                "per_step": round(float(np.quantile(per_step, LOW_SHARE_QUANTILE)), 4),
                                "per_sentence": round(float(np.quantile(per_sentence, LOW_SHARE_QUANTILE)), 4)},
        "per_step": distribution(per_step),
        "per_step_words": distribution(words),
        "per_sentence": distribution(per_sentence),
        "note": f"per_step: every generated token of every greedy translation (<eos> included; at most {MAX_OUTPUT} "
                f"tokens); per_step_words: the same without the <eos> step; per_sentence: each sentence's mean over "
                f"its steps (Dale et al., ACL 2023, flag hallucinations by a low sentence-level source "
                f"contribution). low_share_threshold: the {LOW_SHARE_QUANTILE:g} quantile of per_step and of "
                f"per_sentence.",
        "data": {"src": Path(args.src).name, "lines": len(src), "n": len(used), "steps": int(per_step.size),
                 "seconds": round(seconds, 1), "device": translator.device_name,
                 "command": "python -m model.source_share --src " + Path(args.src).name
                            + ("" if args.checkpoint is None else f" --checkpoint {args.checkpoint}")},
    }
    return cli.write_corpus_result(out, result, len(used), len(src))


if __name__ == "__main__":
    from . import cli

    cli.run(main)
