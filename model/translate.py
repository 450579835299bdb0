"""Translate German sentences, one per line, to English.

    python -m model.translate [--checkpoint PATH] [--input FILE] [--beam K] [--json]
                              [--mask-heads SPEC] [--force STEP:TOKEN ...] [--reference FILE]

Reads stdin by default (or --input, plain or .gz); writes exactly one line per input
line, in order: the output tokens joined by spaces, or with --json one object with
tokens, every attention map and the step trace. An empty or unusable line gives an
empty output line and its reason on stderr; a sentence longer than the model's
positions is cut to fit, and stderr says so.

--mask-heads switches heads off for the whole run (SPEC as in model/heads.py, 0-based:
"enc.0.3,cross.2.*"); --force STEP:TOKEN makes output step STEP (0-based) emit TOKEN,
greedy decoding going on from there (repeatable; a line whose output ends before STEP
gets an empty line and the reason on stderr). With --json, --reference FILE (one English
line per input line) adds each reference's teacher-forced token probabilities, loss and
sentence BLEU, and --beam K adds the n-best list and the search trace. Every --json line
carries `provenance`: the checkpoint (folder, sha256 of its weights), --mask-heads, --force,
the decoding settings, versions and device (model/export.py).
"""

import sys

from . import cli, files
from .data import read_lines, split_lines
from .errors import InputError


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--input", default=None, help="file of German sentences (default: stdin)")
    p.add_argument("--beam", type=cli.whole, default=1, help=f"beam width (1: greedy, batched; at most {cli.MAX_BEAM})")
    p.add_argument("--json", action="store_true", help="one JSON object per line with maps and steps")
    p.add_argument("--top-k", type=cli.whole, default=5, help="alternatives recorded per step (--json)")
    cli.add_device(p)
    p.add_argument("--mask-heads", default=None, metavar="SPEC", help='heads to switch off, e.g. "enc.0.3,cross.2.*"')
    p.add_argument("--force", action="append", default=[], metavar="STEP:TOKEN",
                   help="make output step STEP (0-based) emit TOKEN; repeatable")
    p.add_argument("--reference", default=None, metavar="FILE",
                   help="English references, one per input line: scored by teacher forcing (with --json)")
    args = p.parse_args(argv)
    cli.check(args, beam=cli.BEAM, top_k=cli.COUNT)

    from .heads import parse_head_mask
    from .translator import MAX_OUTPUT  # after argument parsing: --help stays fast

    force = parse_force(args.force)
    translator = cli.load_translator(args)
    cli.check(args, top_k=cli.Range(1, translator.cfg.tgt_vocab_size, why="the English vocabulary's size"))
    parse_head_mask(args.mask_heads, translator.cfg)  # a bad SPEC stops here, before any work
    if force and args.beam > 1:
        raise InputError("--force works with greedy decoding: leave out --beam")
    if args.reference and not args.json:
        raise InputError("--reference adds fields to the --json output: add --json")
    if args.input:
        lines = read_lines(args.input)
    else:
        lines = split_lines(files.read_limited(sys.stdin.buffer, "stdin"), "stdin")
    references = read_lines(args.reference) if args.reference else None
    if references is not None and len(references) != len(lines):
        raise InputError(f"{args.reference} has {len(references)} lines but the input has {len(lines)}")

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

    opts = dict(top_k=args.top_k, heads_off=args.mask_heads)
    extra = {}  # per line: further --json fields (beam search, reference)
    if force:  # one at a time: a forced step may lie beyond one line's output and not another's
        results = {}
        for i in usable:
            try:
                results[i] = translator.translate(lines[i], force=force, **opts)
            except InputError as e:
                print(f"line {i + 1}: {e}; wrote an empty line", file=sys.stderr)
    elif args.beam == 1:
        results = dict(zip(usable, translator.translate_batch([lines[i] for i in usable], with_maps=args.json,
                                                              **opts)))
    else:
        results = {}
        for i in usable:
            found = translator.beam(lines[i], args.beam, **opts)
            results[i] = found.best
            extra[i] = {"nbest": [{"tokens": c.tokens, "score": c.score, "normalized": c.normalized}
                                  for c in found.nbest],
                        "beam_trace": found.trace}
    for i in (results if references else []):
        extra.setdefault(i, {})["reference"] = score_reference(translator, results[i], references[i], i + 1,
                                                               args.mask_heads)
    if args.json:  # what produced every line (model/export.py), the same for the whole run
        from .export import provenance, result_json

        prov = provenance(translator, args.mask_heads, force, args.beam, args.top_k, MAX_OUTPUT)
    out = sys.stdout
    for i in range(len(lines)):
        r = results.get(i)
        if r is None:
            out.write("\n")
        elif args.json:
            out.write(files.dumps({**result_json(r, prov), **extra.get(i, {})}, ensure_ascii=False) + "\n")
        else:
            out.write(r.text + "\n")
    out.flush()
    return 0


def score_reference(translator, result, reference: str, line: int, heads_off):
    """The --reference fields of one line's result, or None (and a note on stderr) for an empty reference."""
    from .metrics import sentence_bleu

    try:
        scored = translator.score_reference(result.source, reference, heads_off=heads_off)
    except InputError as e:
        print(f"line {line}: {e}", file=sys.stderr)
        return None
    steps = scored.translation.steps
    return {"tokens": [s.token for s in steps], "probs": [s.prob for s in steps], "loss": scored.loss,
            "bleu": sentence_bleu(result.output_tokens, reference, result.pieces)}


def parse_force(items: list) -> dict:
    """["3:cat", ...] -> {3: "cat"}; a clear error for anything else (STEP: ASCII digits, as cli.whole reads them)."""
    force = {}
    for item in items:
        step, sep, token = item.partition(":")
        try:
            n = cli.whole(step.strip())
        except ValueError:
            n = -1
        if not sep or n < 0 or not token:
            raise InputError(f"--force {item!r} is not STEP:TOKEN, e.g. 2:cat")
        force[n] = token
    return force


if __name__ == "__main__":
    cli.run(main)
