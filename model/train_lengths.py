"""Write assets/train_lengths.json: how many positions each Multi30k training sentence uses.

    python -m model.train_lengths [--data-dir ../shared/data/multi30k]

The positional-encodings view shows it beside the learned tables: a learned row is trained only
by the sentences long enough to reach it, so the rows past the longest sentences stay noise.
Positions count <sos> and <eos>, as the model sees them (spaCy tokens, as model.vocab.tokenize
gives them).
"""

from collections import Counter
from pathlib import Path

from . import cli, files
from .data import default_data_dir
from .vocab import tokenize

OUT = Path(__file__).resolve().parents[1] / "assets/train_lengths.json"


def lengths(lines, lang: str) -> dict[int, int]:
    """{positions used: number of sentences}, <sos> and <eos> included."""
    return dict(sorted(Counter(len(tokenize(line, lang)) + 2 for line in lines).items()))


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default=default_data_dir())
    args = p.parse_args(argv)
    de, en = cli.read_split(args.data_dir, "train")
    out = {"split": "Multi30k train", "n": len(de), "counts": "positions used (with <sos> and <eos>): sentences",
           "source": lengths(de, "de"), "target": lengths(en, "en")}
    files.write_text(OUT, files.dumps(out, indent=1) + "\n")
    for side in ("source", "target"):
        c = out[side]
        print(f"{side}: longest {max(c)} positions; {sum(v for k, v in c.items() if k > 30)} sentences over 30")
    return 0


if __name__ == "__main__":
    cli.run(main)
