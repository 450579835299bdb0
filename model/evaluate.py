"""Loss, perplexity and BLEU of a checkpoint on a parallel corpus (docs/contract.md, Metrics).

    python -m model.evaluate --src test.de.gz --ref test.en.gz [--checkpoint PATH] [--beam K] [--mask-heads SPEC]

prints one JSON line with n, bleu, loss, ppl (and the settings used).
"""

import argparse
import json
import sys
import time

from .data import read_lines
from .device import DEVICE_ENV, DEVICE_NAMES
from .errors import CheckpointError, InputError
from .metrics import score


def corpus_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every corpus tool shares: --src, --ref, --checkpoint, --device."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", required=True, help="German sentences, one per line (plain or .gz)")
    p.add_argument("--ref", required=True, help="English references, one per line (plain or .gz)")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: checkpoints/)")
    p.add_argument("--device", default=None, help=f"{DEVICE_NAMES} (default: ${DEVICE_ENV}, else auto)")
    return p


def load_corpus(args):
    """(translator, src lines, ref lines), or None after printing what is wrong."""
    from .translator import Translator  # after argument parsing: --help stays fast

    try:
        translator = Translator.load(args.checkpoint, args.device)
        src, ref = read_lines(args.src), read_lines(args.ref)
    except (CheckpointError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    if len(src) != len(ref):
        print(f"error: {args.src} has {len(src)} lines but {args.ref} has {len(ref)}", file=sys.stderr)
        return None
    return translator, src, ref


def main(argv=None):
    p = corpus_parser(__doc__)
    p.add_argument("--beam", type=int, default=1, help="beam width (1: greedy)")
    p.add_argument("--mask-heads", default=None, metavar="SPEC", help='heads to switch off, e.g. "enc.0.3,cross.2.*"')
    args = p.parse_args(argv)
    loaded = load_corpus(args)
    if loaded is None:
        return 2
    translator, src, ref = loaded
    if args.beam < 1:
        print(f"error: --beam must be at least 1, got {args.beam}", file=sys.stderr)
        return 2
    t0 = time.time()
    try:
        result = score(translator, src, ref, args.beam, args.mask_heads, progress=sys.stderr.isatty())
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({**result, "beam": args.beam, "mask_heads": args.mask_heads or "",
                      "device": translator.device_name, "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
