"""Translate German sentences, one per line, to English.

    python -m model.translate [--checkpoint PATH] [--input FILE] [--beam K] [--json]

Reads stdin by default (or --input, plain or .gz); writes exactly one line per input
line, in order: the output tokens joined by spaces, or with --json one object with
tokens, every attention map and the step trace. An empty or unusable line gives an
empty output line and its reason on stderr; a sentence longer than the model's
positions is cut to fit, and stderr says so.
"""

import argparse
import io
import json
import sys

from .data import read_lines
from .errors import CheckpointError, InputError


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: checkpoints/)")
    p.add_argument("--input", default=None, help="file of German sentences (default: stdin)")
    p.add_argument("--beam", type=int, default=1, help="beam width (1: greedy, batched)")
    p.add_argument("--json", action="store_true", help="one JSON object per line with maps and steps")
    p.add_argument("--top-k", type=int, default=5, help="alternatives recorded per step (--json)")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: best available)")
    args = p.parse_args(argv)
    if args.beam < 1 or args.top_k < 1:
        print("error: --beam and --top-k must be at least 1", file=sys.stderr)
        return 2

    from .translator import Translator  # after argument parsing: --help stays fast

    try:
        translator = Translator.load(args.checkpoint, args.device)
        if args.input:
            lines = read_lines(args.input)
        else:
            lines = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace").read().splitlines()
    except (CheckpointError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    usable = []
    for n, line in enumerate(lines, 1):
        try:
            _, _, cut = translator.source_ids(line)
        except InputError as e:
            print(f"line {n}: {e}; wrote an empty line", file=sys.stderr)
            continue
        if cut:
            print(f"line {n}: {cut} tokens cut: the model has {translator.cfg.max_positions} positions",
                  file=sys.stderr)
        usable.append(n - 1)

    if args.beam == 1:
        done = translator.translate_batch([lines[i] for i in usable], top_k=args.top_k, with_maps=args.json)
    else:
        done = [translator.translate(lines[i], beam=args.beam, top_k=args.top_k) for i in usable]
    results = dict(zip(usable, done))
    out = sys.stdout
    for i in range(len(lines)):
        r = results.get(i)
        if r is None:
            out.write("\n")
        elif args.json:
            out.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
        else:
            out.write(r.text + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        sys.exit(0)
