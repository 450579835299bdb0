"""How much each head matters: BLEU drop and loss rise when only that head is switched off.

    python -m model.head_importance --src test.de.gz --ref test.en.gz [--checkpoint PATH] [--out FILE]

After Michel, Levy and Neubig (2019), "Are Sixteen Heads Really Better than One?":
every head of every kind (encoder self, decoder self, cross) is masked alone, the
corpus is translated (greedy, batched) and scored. Each difference from the baseline
gets a 95% paired-bootstrap interval over sentences (Koehn, 2004), so a drop that one
resample of the test set would erase shows as an interval around zero. Writes JSON
(default: CHECKPOINT/head_importance.json, which the app shows):
    {"baseline": {bleu, loss, ppl, n},
     "kinds": {kind: {"bleu": L x H, "loss": L x H,
                      "bleu_drop_ci": L x H x (low, high), "loss_rise_ci": L x H x (low, high)}},
     "bootstrap": {"resamples", "seed", "level"}, ...}
"""

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .checkpoint import DEFAULT_CHECKPOINT
from .evaluate import corpus_parser, load_corpus
from .heads import n_layers
from .metrics import BOOTSTRAP_SEED, corpus_score, paired_bootstrap
from .transformer import KINDS


def head_importance(translator, src, ref, progress=True, resamples=1000, seed=BOOTSTRAP_SEED,
                    level=0.95) -> dict:
    base = corpus_score(translator, src, ref)
    cfg = translator.cfg
    jobs = [(k, layer, head) for k in KINDS for layer in range(n_layers(cfg, k)) for head in range(cfg.n_heads)]
    kinds = {k: {name: [[None] * cfg.n_heads for _ in range(n_layers(cfg, k))]
                 for name in ("bleu", "loss", "bleu_drop_ci", "loss_rise_ci")} for k in KINDS}
    for k, layer, head in tqdm(jobs, desc="heads", disable=not progress):
        masked = corpus_score(translator, src, ref, heads_off=f"{k}.{layer}.{head}")
        s = masked.summary()
        ci = paired_bootstrap(base, masked, resamples, seed, level)
        kinds[k]["bleu"][layer][head] = s["bleu"]
        kinds[k]["loss"][layer][head] = s["loss"]
        kinds[k]["bleu_drop_ci"][layer][head] = [round(x, 2) for x in ci["bleu_drop"]]
        kinds[k]["loss_rise_ci"][layer][head] = [round(x, 4) for x in ci["loss_rise"]]
    return {"baseline": base.summary(), "kinds": kinds,
            "bootstrap": {"resamples": resamples, "seed": seed, "level": level},
            "note": "bleu/loss with only that head masked; layers and heads 0-based; greedy decoding; "
                    "*_ci: paired-bootstrap percentile interval over sentences of baseline bleu - bleu "
                    "and loss - baseline loss"}


def main(argv=None):
    p = corpus_parser(__doc__)
    p.add_argument("--out", default=None, help="JSON file to write (default: CHECKPOINT/head_importance.json)")
    p.add_argument("--limit", type=int, default=0, help="only the first N sentences")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the intervals")
    p.add_argument("--seed", type=int, default=BOOTSTRAP_SEED, help="bootstrap seed")
    args = p.parse_args(argv)
    if args.resamples < 1:
        print(f"error: --resamples must be at least 1, got {args.resamples}", file=sys.stderr)
        return 2
    loaded = load_corpus(args)
    if loaded is None:
        return 2
    translator, src, ref = loaded
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    t0 = time.time()
    result = head_importance(translator, src, ref, progress=not args.limit or sys.stderr.isatty(),
                             resamples=args.resamples, seed=args.seed)
    result["data"] = {"src": Path(args.src).name, "ref": Path(args.ref).name, "n": len(src),
                      "seconds": round(time.time() - t0, 1), "device": translator.device_name}
    out = Path(args.out) if args.out else Path(args.checkpoint or DEFAULT_CHECKPOINT) / "head_importance.json"
    out.write_text(json.dumps(result, indent=1))
    worst = min(((k, i, j, b) for k, v in result["kinds"].items() for i, row in enumerate(v["bleu"])
                 for j, b in enumerate(row)), key=lambda x: x[3])
    print(json.dumps({"out": str(out), "baseline_bleu": result["baseline"]["bleu"],
                      "most_important": f"{worst[0]}.{worst[1]}.{worst[2]}", "bleu_without_it": worst[3],
                      "seconds": result["data"]["seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
