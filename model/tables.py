"""Every table the page reads beside a checkpoint, built in one run, for a checkpoint of one's own.

    python -m model.tables --checkpoint DIR [--quick] [--force] [--estimate] [--data-dir DIR] [--corpus FILE]
                           [--device D] [--no-progress]

The shipped checkpoints come with their tables (head statistics, importance, source share, alignment,
faithfulness, patching, the training and step indexes); a converted or retrained one (python -m model.convert,
python -m model.train) has none, and the views that read one say so. This runs each table's own command in this
process, one after another, with the arguments the shipped tables were made with (docs/contract.md), so every file
is written where and as that command writes it and the views read it unchanged. It prints the plan first, with an
estimate of each table's time, then shows a bar over the tables (and each command's own bar).

- Resumable: a table whose files are all there is skipped (each command writes its file whole or not at all), so
  an interrupted run goes on where it stopped; `--force` builds them again.
- `--quick`: the first QUICK sentences or pairs of each table instead of all (a first look, with wider intervals);
  the training and step indexes are whole either way. 2 min 47 s on 2 quiet CPU cores for the tutorial-size model,
  about 3 minutes since the familiarity table also reads test2016 (measured; docs/contract.md).
- The estimate: each table's units (sentences, pairs) times its seconds per unit on the reference model on 2 CPU
  cores (SECONDS), scaled by how long this model takes here to translate the first PROBE test sentences against the
  same on the reference model (PROBE_SECONDS): a slower machine or a larger model scales every table alike.
- `--corpus FILE`: the training and step indexes (the familiarity note, the training evidence) from this parallel
  corpus (a pair a line: source, a tab, target) instead of Multi30k's training split: for a model trained on other
  data. A converted Marian model's makers' corpus is not known here, so without it those two are skipped, saying so.
- A table that cannot be made for this model (a gold sentence longer than its positions, say) is skipped with one
  line saying why, the others built; the exit status is then 1. Errors before any work (no checkpoint, no data
  set) are one line and status 2, as every tool's (model/cli.py).
"""

import contextlib
import gzip
import io
import json
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "assets/alignments/test2016.gold.jsonl"  # model/align.py's hand-checked links
PAIRS = ROOT / "assets/contrast/pairs.jsonl"  # model/contrast.py's pairs, for model/patch.py
TEST = ("test_2016_flickr.de.gz", "test_2016_flickr.en.gz")  # the Multi30k split the test-set tables read
PROBE = 16  # test sentences translated (with every map) to time this model on this machine
PROBE_SECONDS = 0.3  # the probe on the reference model, 2 quiet CPU cores (0.25-0.35 s in five runs, 2026-11-28)


@dataclass(frozen=True)
class Table:
    """One table the page reads: the files its command writes beside the checkpoint, and its cost."""

    name: str  # the command's module (python -m model.NAME)
    what: str  # what the views show from it
    files: tuple  # the files it writes beside the checkpoint; the table is there when all of them are
    unit: str  # what it counts: "sentence", "pair", or "index" (one whole build)
    quick: int | None  # units under --quick (None: the whole table either way)
    seconds: float  # seconds per unit, reference model, 2 quiet CPU cores: a whole --quick run's table time / units


# In build order: faithfulness reads alignment.json (its aligning head), so alignment comes first.
# The seconds: `python -m model.tables --quick` on the shipped model copied without its tables, 2 quiet cores
# (2026-11-28, 2 min 47 s in all): each table's time over its --quick units.
TABLES = (
    Table("head_stats", "head statistics", ("head_stats.json",), "sentence", 200, 0.01),
    Table("head_importance", "head importance", ("head_importance.json",), "sentence", 200, 0.275),
    Table("source_share", "source share", ("source_share.json",), "sentence", 200, 0.03),
    Table("align", "alignment", ("alignment.json",), "pair", 20, 0.55),
    Table("faithfulness", "faithfulness", ("faithfulness.json",), "sentence", 10, 3.6),
    Table("patch", "patching", ("patching.json",), "pair", 10, 0.4),
    # the familiarity tool now also translates test2016 to set its thresholds: 53 s in a --quick run at load 3,
    # where the other tables took 1.2-1.6x their quiet times, so about 35 s quiet
    Table("familiarity", "training index", ("training_index.npz", "familiarity.json"), "index", None, 35.0),
    Table("evidence", "step index", ("step_index.npz",), "index", None, 23.0),
)
BY_NAME = {t.name: t for t in TABLES}
TRAIN_PAIRS = 29_000  # the pairs of Multi30k's training split, which the indexes' seconds were measured on
FULL = {"faithfulness": 500}  # the shipped tables' counts where a command took fewer than all (--n 500)


def command_line(checkpoint) -> str:
    """The command that builds every table beside `checkpoint` (a folder; None: the shipped one), as the page
    names it where a table is missing."""
    from .checkpoint import checkpoint_folder

    return f"python -m model.tables --checkpoint {shlex.quote(str(checkpoint_folder(checkpoint)))}"


def is_there(folder, table: Table) -> bool:
    return all((Path(folder) / f).is_file() for f in table.files)


def available(data_dir) -> dict:
    """{table name: units the data hold}: test sentences, annotated pairs, contrast pairs (1 for an index)."""
    from .align import read_gold
    from .contrast import read_pairs
    from .data import read_lines

    sentences = len(read_lines(Path(data_dir) / TEST[0]))
    units = {"sentence": sentences, "index": 1}
    return {t.name: units.get(t.unit) for t in TABLES} | {"align": len(read_gold(GOLD)),
                                                         "patch": len(read_pairs(PAIRS))}


@dataclass(frozen=True)
class Step:
    table: Table
    units: int  # sentences or pairs it will read (1 for an index)
    build: bool  # False: its files are there (and no --force)


def plan(folder, units: dict, quick: bool = False, force: bool = False) -> list[Step]:
    """What a run does, table by table: `units` as `available` gives them, cut to --quick's counts or the shipped
    tables' (FULL)."""
    steps = []
    for t in TABLES:
        n = units[t.name]
        limit = t.quick if quick else FULL.get(t.name)
        steps.append(Step(t, n if limit is None else min(n, limit), force or not is_there(folder, t)))
    return steps


def estimate(steps: list[Step], probe_seconds: float) -> dict:
    """{table name: estimated seconds} of the steps to build: units x seconds per unit x (this probe / the
    reference model's)."""
    speed = probe_seconds / PROBE_SECONDS
    return {s.table.name: s.units * s.table.seconds * speed for s in steps if s.build}


def duration(seconds: float) -> str:
    """`40 s`, `7 min`, `2.5 h`: an estimate's precision."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def probe(translator, data_dir) -> float:
    """Seconds this translator takes here to translate the first PROBE test sentences with every map (after one
    warm-up sentence)."""
    from .data import read_lines

    sentences = [s for s in read_lines(Path(data_dir) / TEST[0])[:PROBE] if s.strip()]
    translator.translate_batch(sentences[:1])
    start = time.perf_counter()
    translator.translate_batch(sentences)
    return time.perf_counter() - start


# Each table's inputs: its command's arguments, shortened copies of the files where a run reads fewer than all.
class Inputs:
    """The files a run passes to the commands: the data set's as they are, or their first lines copied under the
    same names into a temporary folder (so that what a command records of its input is the same name)."""

    def __init__(self, data_dir, tmp):
        self.data_dir, self.tmp = Path(data_dir), Path(tmp)

    def first(self, path, n: int, lines: list | None = None) -> str:
        """`path` itself when n covers it, else a copy of its first n lines (of `lines`, its lines reordered)."""
        from .data import read_lines

        path = Path(path)
        lines = read_lines(path) if lines is None else lines
        if n >= len(lines):
            return str(path)
        copy, text = self.tmp / path.name, "".join(line + "\n" for line in lines[:n])
        if path.suffix == ".gz":
            with gzip.open(copy, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            copy.write_text(text, encoding="utf-8")
        return str(copy)



def arguments(table: Table, units: int, folder: Path, inputs: Inputs, progress: bool = True) -> list[str]:
    """A table's command line (after --checkpoint and --device), as the shipped table's was made."""
    if not progress and table.name != "head_importance":  # which has no bar to switch off
        return [*arguments(table, units, folder, inputs), "--no-progress"]
    data = inputs.data_dir
    if table.name in ("head_stats", "source_share"):
        return ["--src", inputs.first(data / TEST[0], units)]
    if table.name == "head_importance":
        return ["--src", inputs.first(data / TEST[0], units), "--ref", inputs.first(data / TEST[1], units)]
    if table.name == "align":
        return ["--src", str(data / TEST[0]), "--ref", str(data / TEST[1]), "--gold", inputs.first(GOLD, units)]
    if table.name == "faithfulness":
        return ["--src", str(data / TEST[0]), "--n", str(units), "--out", str(folder / "faithfulness.json")]
    if table.name == "patch":
        return ["--pairs", inputs.first(PAIRS, units, spread(PAIRS)), "--out", str(folder / "patching.json")]
    raise AssertionError(f"{table.name} has no command line: it is built by its library function")


def spread(path) -> list[str]:
    """The lines of a pairs file taken a category at a time (the first of each, then the second ...), so that
    any first N hold every category."""
    from .files import read_text

    by_category = {}
    for line in read_text(path).splitlines():
        if line.strip():
            by_category.setdefault(json.loads(line)["category"], []).append(line)
    rounds = max(len(v) for v in by_category.values())
    return [v[i] for i in range(rounds) for v in by_category.values() if i < len(v)]


def build(step: Step, folder: Path, inputs: Inputs, translator, shared: list[str], write, progress=True,
          corpus=None) -> None:
    """Build one table: its command in this process (its summary line through `write`), or for the indexes the
    library function the command calls (of `corpus`, a file, where given). InputError when it cannot be made for
    this model."""
    import importlib

    t = step.table
    if t.unit == "index":
        if corpus is None and translator.origin["family"] == "marian":
            raise InputError("its training data is not known here (a Marian model's makers trained it on their own), "
                             "so it is not compared with Multi30k's: give a parallel corpus with --corpus FILE")
        importlib.import_module(f"model.{t.name}").build(translator, folder, inputs.data_dir, log=write,
                                                         corpus=corpus)
        return
    module = importlib.import_module(f"model.{t.name}")
    with contextlib.redirect_stdout(io.StringIO()) as said:
        module.command([*shared, *arguments(t, step.units, folder, inputs, progress)])
    for line in said.getvalue().splitlines():
        write(line)


# the command line --------------------------------------------------------------------------------
def main(argv=None):
    """`python -m model.tables`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    cli.add_checkpoint(p)
    cli.add_device(p)
    p.add_argument("--quick", action="store_true", help="the first few hundred sentences of each table, not all "
                                                        "(about 7 minutes on 2 cores for a tutorial-size model)")
    p.add_argument("--force", action="store_true", help="build every table again, even those already there")
    p.add_argument("--estimate", action="store_true", help="print the plan and its estimate, build nothing")
    p.add_argument("--data-dir", default=None, help="the Multi30k folder (default: $MULTI30K_DIR, else ../shared)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    cli.add_parallel(p)
    args = p.parse_args(argv)

    from tqdm import tqdm

    from .checkpoint import checkpoint_folder
    from .data import default_data_dir
    from .evidence import read_corpus

    folder = checkpoint_folder(args.checkpoint)
    data_dir = args.data_dir or default_data_dir()
    for split in ("test",) if args.corpus else ("test", "val", "train"):
        cli.read_split(data_dir, split)  # every file there now, not after an hour
    pairs = len(read_corpus(args.corpus)["de"]) if args.corpus else TRAIN_PAIRS
    translator = cli.load_translator(args)
    steps = plan(folder, available(data_dir), args.quick, args.force)
    todo = [s for s in steps if s.build]
    probe_seconds = probe(translator, data_dir) if todo else 0.0
    seconds = {name: s * (pairs / TRAIN_PAIRS if BY_NAME[name].unit == "index" else 1)  # an index: of its corpus
               for name, s in estimate(steps, probe_seconds).items()}
    write = tqdm.write
    cfg = translator.cfg
    write(f"{folder}: d_model {cfg.d_model}, {cfg.n_enc_layers}+{cfg.n_dec_layers} layers, vocabularies "
          f"{cfg.src_vocab_size:,}/{cfg.tgt_vocab_size:,}{', --quick' if args.quick else ''}")
    for s in steps:
        count = "whole" if s.table.unit == "index" else f"{s.units:,} {s.table.unit}s"
        when = f"~{duration(seconds[s.table.name])}" if s.build else "there (--force builds it again)"
        write(f"  {', '.join(s.table.files):38} {s.table.what:16} {count:15} {when}")
    if not todo:
        write("every table is there")
        return 0
    write(f"total ~{duration(sum(seconds.values()))} (this machine and model: {probe_seconds / PROBE_SECONDS:.1f}x "
          f"the reference model on 2 cores, from {PROBE} test sentences in {probe_seconds:.1f} s)")
    if args.estimate:
        return 0
    shared = [*(["--checkpoint", str(args.checkpoint)] if args.checkpoint else []),
              *(["--device", args.device] if args.device else [])]
    skipped, start = [], time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tables-") as tmp:
        inputs = Inputs(data_dir, tmp)
        with tqdm(todo, desc="tables", unit="table", disable=args.no_progress) as bar:
            for s in bar:
                bar.set_postfix_str(s.table.files[0])
                began = time.perf_counter()
                try:
                    build(s, folder, inputs, translator, shared, write, not args.no_progress, args.corpus)
                except InputError as e:  # this model cannot have it: said, and the next table goes on
                    skipped.append(s.table)
                    write(f"skipped {', '.join(s.table.files)}: {e}")
                    continue
                write(f"{', '.join(s.table.files)}: {time.perf_counter() - began:.0f} s "
                      f"(estimated {seconds[s.table.name]:.0f} s)")
    write(f"{len(todo) - len(skipped)} of {len(todo)} tables built in {duration(time.perf_counter() - start)}"
          + (f"; skipped: {', '.join(f for t in skipped for f in t.files)}" if skipped else ""))
    return 1 if skipped else 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
