"""What every command-line tool in model/ shares: one parser, one way to fail (docs/contract.md).

A usage error (a bad option or argument, a missing or corrupt checkpoint, a bad device, a file
that cannot be read or written) is exactly one line `error: ...` on stderr and exit status 2:
never argparse's usage block, never a traceback. Two routes lead there. `Parser` answers a bad
command line (by raising SystemExit(2), as argparse does); `entry_point` wraps a tool's
`main(argv=None)` so that the project's errors (model/errors.py) and the OS's raised anywhere in
it print that line and make main return 2. `run` starts a tool as `python -m model.X`.

The library raises, the tools print: nothing here is imported by the model or the page. Imports
of torch-heavy modules wait until they are needed, so that `--help` stays fast and
model/head_stats.py stays importable without torch.
"""

import argparse
import functools
import json
import os
import sys
from pathlib import Path

from .errors import CheckpointError, InputError

USAGE_ERROR = 2  # exit status of every usage error (argparse's own)

# Every character str.splitlines() breaks at: shown escaped, so that an error is one line whatever it quotes.
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def fail(message) -> int:
    """Print `error: MESSAGE` as one line on stderr; returns the exit status to give, 2."""
    print(f"error: {str(message).translate(_LINE_BREAKS)}", file=sys.stderr)
    return USAGE_ERROR


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: a bad option or argument prints `error: ...` and exits with 2.

    The description keeps its line breaks (tools pass their module docstring); sub-commands made
    by add_subparsers are Parsers too.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        sys.exit(fail(message))


def add_checkpoint(p: argparse.ArgumentParser):
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: $TRANSFORMER_CHECKPOINT, "
                                                      "else checkpoints/)")


def add_device(p: argparse.ArgumentParser):
    from .device import DEVICE_ENV, DEVICE_NAMES

    p.add_argument("--device", default=None, help=f"{DEVICE_NAMES} (default: ${DEVICE_ENV}, else auto)")


def add_corpus(p: argparse.ArgumentParser, ref: bool = True):
    """--src (and --ref): the files of a corpus tool; with --checkpoint and --device."""
    p.add_argument("--src", required=True, help="German sentences, one per line (plain or .gz)")
    if ref:
        p.add_argument("--ref", required=True, help="English references, one per line (plain or .gz)")
    add_checkpoint(p)
    add_device(p)


def at_least_one(args, *names: str):
    """InputError naming the first of the integer options `names` (argparse dests) that is below 1."""
    for name in names:
        value = getattr(args, name)
        if value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


def load_translator(args):
    """The Translator of --checkpoint on --device; CheckpointError or InputError when either is bad."""
    from .translator import Translator

    return Translator.load(args.checkpoint, args.device)


def read_corpus(src, ref) -> tuple[list[str], list[str]]:
    """The lines of a source file and its reference file; InputError when either cannot be read or
    their line counts differ (a sentence and its reference share a line number)."""
    from .data import read_lines

    src_lines, ref_lines = read_lines(src), read_lines(ref)
    if len(src_lines) != len(ref_lines):
        raise InputError(f"{src} has {len(src_lines)} lines but {ref} has {len(ref_lines)}")
    return src_lines, ref_lines


def read_split(data_dir, split: str) -> tuple[list[str], list[str]]:
    """German and English sentences of one Multi30k split (model.data.load_split), failing with InputError:
    no folder, missing files or different line counts."""
    from .data import DATA_ENV, load_split

    if data_dir is None:
        raise InputError(f"Multi30k not found: pass --data-dir DIR, or set ${DATA_ENV}")
    try:
        return load_split(data_dir, split)
    except (FileNotFoundError, ValueError) as e:  # load_split's two failures, which name the files
        raise InputError(str(e)) from None


def output_file(out, checkpoint, name: str) -> Path:
    """Where a tool writes its JSON: --out, else `name` in the checkpoint's folder. Checked before the
    long run, not after it: InputError when the folder does not exist."""
    from .checkpoint import checkpoint_folder

    path = Path(out) if out else checkpoint_folder(checkpoint) / name
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: the folder {path.parent} does not exist")
    return path


def write_corpus_result(out: Path, result: dict, n: int, lines: int) -> int:
    """A corpus tool's end: its JSON to `out`, one summary line on stdout (n sentences used, the rest skipped)."""
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps({"out": str(out), "n": n, "skipped": lines - n, "seconds": result["data"]["seconds"]}))
    return 0


def entry_point(main):
    """Decorate a tool's main(argv=None) -> exit status: the project's errors and the OS's (a file that
    cannot be read or written) become one `error: ...` line and status 2. The one place that does so."""

    @functools.wraps(main)
    def wrapped(argv=None):
        try:
            return main(argv)
        except BrokenPipeError:
            raise  # not a usage error: the reader went away (run)
        except (CheckpointError, InputError, OSError) as e:
            return fail(e)

    return wrapped


def run(main):
    """`python -m model.X`: exit with main()'s status. A reader that stops early (`... | head`) is no
    error of ours: exit 0 quietly."""
    try:
        status = main()
        sys.stdout.flush()  # here, so that a closed pipe shows up inside the try
    except BrokenPipeError:
        # Python flushes stdout again at exit and would report the same error: send what is left nowhere
        # (the recipe of the Python docs, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    sys.exit(status)
