"""Loss, perplexity and BLEU of a checkpoint on a parallel corpus (docs/contract.md, Metrics).

    python -m model.evaluate --src test.de.gz --ref test.en.gz [--checkpoint PATH] [--beam K] [--mask-heads SPEC]

prints one JSON line with n, bleu, loss, ppl (and the settings used).
"""

import sys
import time

from . import cli, files
from .metrics import score


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__)
    cli.add_corpus(p)
    p.add_argument("--beam", type=cli.whole, default=1, help=f"beam width (1: greedy; at most {cli.MAX_BEAM})")
    p.add_argument("--mask-heads", default=None, metavar="SPEC", help='heads to switch off, e.g. "enc.0.3,cross.2.*"')
    args = p.parse_args(argv)
    cli.check(args, beam=cli.BEAM)
    translator = cli.load_translator(args)
    src, ref = cli.read_corpus(args.src, args.ref)  # an empty corpus is an error: no mean over nothing
    t0 = time.time()
    result = score(translator, src, ref, args.beam, args.mask_heads, progress=sys.stderr.isatty())
    print(files.dumps({**result, "beam": args.beam, "mask_heads": args.mask_heads or "",
                      "device": translator.device_name, "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    cli.run(main)
