"""What every command-line tool in model/ shares: one parser, one way to fail (docs/contract.md).

A usage error (a bad option or argument, a missing or corrupt checkpoint, a bad device, a file
that cannot be read or written) is exactly one line `error: ...` on stderr and exit status 2:
never argparse's usage block, never a traceback. Two routes lead there. `Parser` answers a bad
command line (by raising SystemExit(2), as argparse does); `entry_point` wraps a tool's
`main(argv=None)` so that the project's errors (model/errors.py) and the OS's raised anywhere in
it print that line and make main return 2. `run` starts a tool as `python -m model.X`.

Numbers on the command line go through one parser and one check: `whole` and `real` (argparse
types: ASCII digits only, a bounded count of them, finite) and `check` (each option's Range, before
any work). Ctrl-C is one line, `interrupted`, and exit status 130 (128 + SIGINT, as a shell says it),
from the start: model/__init__.py calls `catch_early_interrupts` before a tool's module imports torch.
Files are read and written by model/files.py's rules: bounded inputs, atomic outputs, JSON without NaN.

The library raises, the tools print: nothing here is imported by the model or the page (model/__init__.py
imports it only when `python -m model.X` starts a tool). Imports of torch-heavy modules wait until they are
needed, so that `--help` stays fast and model/head_stats.py stays importable without torch.
"""

import argparse
import functools
import math
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from . import files
from .errors import CheckpointError, InputError

USAGE_ERROR = 2  # exit status of every usage error (argparse's own)
INTERRUPTED = 130  # exit status after Ctrl-C: 128 + SIGINT, what a shell reports for a process it stopped
MAX_BEAM = 64  # widest beam search a tool runs: each step ranks 2 x beam candidates (the page offers 8)
MAX_SEED = 2**32 - 1  # seeds from 0 to this: the range that random, NumPy and torch all accept
_WHOLE = re.compile(r"[+-]?[0-9]{1,18}")  # ASCII digits, few enough for a 64-bit integer

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


def add_parallel(p: argparse.ArgumentParser):
    """--corpus FILE: a parallel corpus the training and step indexes are built from (model.familiarity,
    model.tables) instead of Multi30k's training split."""
    p.add_argument("--corpus", default=None, metavar="FILE",
                   help="build the training and step indexes from this parallel corpus instead of Multi30k's "
                        "training split: a pair a line, the source sentence, a tab, its translation (plain or .gz); "
                        "for a model trained on other data, such as a converted Marian model")


def whole(text: str) -> int:
    """argparse type of a whole-number option: an optional sign and 1 to 18 ASCII digits.

    int() alone takes "٣" (an Arabic-Indic 3), "1_000" and " 7 ", and refuses more than 4,300 digits with a
    message about sys.set_int_max_str_digits. A ValueError here is argparse's `invalid int value: 'x'`.
    """
    if not _WHOLE.fullmatch(text):
        raise ValueError(text)
    return int(text)


def real(text: str) -> float:
    """argparse type of a number option: what float() reads from ASCII text, if finite (float() also reads
    "nan", "inf" and 1e999). A ValueError here is argparse's `invalid float value: 'x'`."""
    if not text.isascii():
        raise ValueError(text)
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r} (not a finite number)")
    return value


whole.__name__, real.__name__ = "int", "float"  # how argparse names the type in `invalid int value: 'x'`


@dataclass(frozen=True)
class Range:
    """The values an option may take: low to high, both included (None: no bound); high itself refused if open."""

    low: float | None = None
    high: float | None = None
    open: bool = False  # high is a limit the value must stay below (a dropout of 1 drops everything)
    why: str = ""  # said after the bound that is broken: where it comes from

    def fault(self, value) -> str | None:
        """What is wrong with value, or None."""
        why = f" ({self.why})" if self.why else ""
        if self.low is not None and value < self.low:
            return f"must be at least {self.low}{why}, got {value}"
        if self.high is not None and (value >= self.high if self.open else value > self.high):
            return f"must be {'below' if self.open else 'at most'} {self.high}{why}, got {value}"
        return None


COUNT = Range(1)  # a number of things to do: at least one
OPTIONAL_COUNT = Range(0)  # 0 meaning "no limit" or "none"
SEED = Range(0, MAX_SEED)
SHARE = Range(0, 1)  # a probability or fraction
BEAM = Range(1, MAX_BEAM)


def check(args, **ranges: Range):
    """InputError naming the first option (argparse dest = keyword) whose value is outside its Range.

    Every tool checks its numbers here, after parsing and before any work."""
    for name, allowed in ranges.items():
        fault = allowed.fault(getattr(args, name))
        if fault:
            raise InputError(f"--{name.replace('_', '-')} {fault}")


def load_translator(args):
    """The Translator of --checkpoint on --device; CheckpointError or InputError when either is bad."""
    from .translator import Translator

    return Translator.load(args.checkpoint, args.device)


def read_corpus(src, ref) -> tuple[list[str], list[str]]:
    """The lines of a source file and its reference file; InputError when either cannot be read or
    their line counts differ (a sentence and its reference share a line number), or they are empty."""
    from .data import read_lines

    src_lines, ref_lines = read_lines(src), read_lines(ref)
    if len(src_lines) != len(ref_lines):
        raise InputError(f"{src} has {len(src_lines)} lines but {ref} has {len(ref_lines)}")
    if not src_lines:
        raise InputError(f"{src} is empty: there is nothing to score")
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
    long run, not after it: InputError when the folder does not exist or the path is no regular file."""
    from .checkpoint import checkpoint_folder

    return files.check_output(Path(out) if out else checkpoint_folder(checkpoint) / name)


def write_corpus_result(out: Path, result: dict, n: int, lines: int) -> int:
    """A corpus tool's end: its JSON to `out` (atomically), one summary line on stdout (n sentences used, the
    rest skipped)."""
    files.write_text(out, files.dumps(result, indent=1))
    print(files.dumps({"out": str(out), "n": n, "skipped": lines - n, "seconds": result["data"]["seconds"]}))
    return 0


def entry_point(main):
    """Decorate a tool's main(argv=None) -> exit status: the project's errors and the OS's (a file that
    cannot be read or written) become one `error: ...` line and status 2; Ctrl-C the line `interrupted`
    and status 130. The one place that does so.

    Anything else is a bug, still one line and status 2 for whoever runs the tool, naming the exception;
    `python -X dev -m model.X` shows its traceback instead.
    """

    @functools.wraps(main)
    def wrapped(argv=None):
        try:
            return main(argv)
        except BrokenPipeError:
            raise  # not a usage error: the reader went away (run)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return INTERRUPTED
        except (CheckpointError, InputError, OSError) as e:
            return fail(e)
        except MemoryError:
            return fail("out of memory: try a smaller input (or --batch-size, where the tool has it)")
        except Exception as e:
            if sys.flags.dev_mode:
                raise
            return fail(f"internal error ({type(e).__name__}: {e}); `python -X dev -m ...` shows where")

    return wrapped


def _interrupted_early(signum, frame):
    """SIGINT while a tool's module is still importing (torch takes seconds): the one line and status 130 at
    once. os._exit, since a KeyboardInterrupt raised inside an import has nothing to catch it but Python's
    traceback, and nothing is written yet that an exit could leave half done."""
    print("interrupted", file=sys.stderr, flush=True)
    os._exit(INTERRUPTED)


def catch_early_interrupts():
    """Ctrl-C before a tool's main runs is `interrupted` and 130 too; `run` hands SIGINT back to Python.

    model/__init__.py calls this when `python -m model.X` starts, before model/X.py and its imports run.
    A SIGINT that is not at Python's default (ignored, as in a background job) is left as it is."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_early)


def run(main):
    """`python -m model.X`: exit with main()'s status. A reader that stops early (`... | head`) is no
    error of ours: exit 0 quietly."""
    try:
        if signal.getsignal(signal.SIGINT) is _interrupted_early:  # from here, KeyboardInterrupt (entry_point)
            signal.signal(signal.SIGINT, signal.default_int_handler)
        status = main()
        sys.stdout.flush()  # here, so that a closed pipe shows up inside the try
    except KeyboardInterrupt:  # one that came before main's own try, or after it
        print("interrupted", file=sys.stderr)
        status = INTERRUPTED
    except BrokenPipeError:
        # Python flushes stdout again at exit and would report the same error: send what is left nowhere
        # (the recipe of the Python docs, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    sys.exit(status)
