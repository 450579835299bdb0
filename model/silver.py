"""The silver alignment: a statistical word aligner's links for every test2016 pair, a baseline for model.align.

    pip install eflomal==2.0.0   # once: a tool for building this file, not needed by the app or the tests
    python -m model.silver --data-dir ../shared/data/multi30k [--out assets/alignments/test2016.silver.jsonl]

eflomal (Östling & Tiedemann, 2016: a Bayesian IBM model with Markov chain Monte Carlo inference) aligns
Multi30k train + test2016, German and English in the project's tokenization, in both directions; the two are
symmetrised by grow-diag-final-and (Koehn et al., 2003, the Moses heuristic) and the test2016 pairs written
as JSON lines {"line": L, "links": [[source_index, target_index], ...]} (0-based over the project's tokens).
eflomal samples, so a second run differs a little; the shipped file is one run (docs/alignment-guidelines.md).
"""

import gzip
import tempfile
from pathlib import Path

from tqdm import tqdm

from . import cli, files
from .errors import InputError

OUT = Path(__file__).resolve().parent.parent / "assets/alignments/test2016.silver.jsonl"
TRAIN_LINKS = OUT.parent / "train.silver.links.gz"  # 'i-j ...' per training pair (Pharaoh format), with --lexicon
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward, backward) -> set:
    """Symmetrise two directional alignments (sets of (source, target) links) as Moses does:

    start from the intersection; GROW-DIAG: repeatedly add a union link that neighbours (8 directions) a link
    already taken and whose source or target word is still unaligned; FINAL-AND: then add, for each direction
    in turn, union links whose source AND target word are both still unaligned.
    """
    forward, backward = set(forward), set(backward)
    union, links = forward | backward, forward & backward
    src_done, tgt_done = {i for i, _ in links}, {j for _, j in links}

    def take(link):
        links.add(link)
        src_done.add(link[0])
        tgt_done.add(link[1])

    grew = True
    while grew:
        grew = False
        for i, j in sorted(links):
            for di, dj in NEIGHBOURS:
                cand = (i + di, j + dj)
                if cand in union and cand not in links and (cand[0] not in src_done or cand[1] not in tgt_done):
                    take(cand)
                    grew = True
    for direction in (forward, backward):
        for cand in sorted(direction):
            if cand not in links and cand[0] not in src_done and cand[1] not in tgt_done:
                take(cand)
    return links


def read_pharaoh(path) -> list[set]:
    """Links of an 'i-j i-j ...' file (one line per pair)."""
    return [{tuple(map(int, x.split("-"))) for x in line.split()}
            for line in Path(path).read_text().splitlines()]


def silver_links(de: list, en: list, progress: bool = False) -> list[set]:
    """grow-diag-final-and of eflomal's two directions for tokenized pairs (lists of token lists)."""
    try:
        import eflomal
    except ImportError:
        raise InputError("eflomal is not installed: pip install eflomal==2.0.0") from None
    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = Path(tmp) / "fwd", Path(tmp) / "rev"
        eflomal.Aligner().align([" ".join(s) for s in de], [" ".join(s) for s in en],
                                links_filename_fwd=str(fwd), links_filename_rev=str(rev), quiet=not progress)
        forward, backward = read_pharaoh(fwd), read_pharaoh(rev)
    return [grow_diag_final_and(f, b) for f, b in zip(forward, backward, strict=True)]


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__)
    p.add_argument("--data-dir", required=True, help="folder with the Multi30k .gz files")
    p.add_argument("--out", default=str(OUT), help="JSON lines to write (default: %(default)s)")
    p.add_argument("--lexicon", help="also write the training links (assets/alignments/train.silver.links.gz) and "
                                      "their lexical table to this file (assets/alignments/train.lexicon.json.gz)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    from .data import read_lines
    from .vocab import tokenize

    train_de, train_en = cli.read_split(args.data_dir, "train")
    folder = Path(args.data_dir)
    test_de = read_lines(folder / "test_2016_flickr.de.gz")
    test_en = read_lines(folder / "test_2016_flickr.en.gz")
    de = [tokenize(s, "de") for s in tqdm([*train_de, *test_de], desc="tokenize de", disable=args.no_progress)]
    en = [tokenize(s, "en") for s in tqdm([*train_en, *test_en], desc="tokenize en", disable=args.no_progress)]
    every = silver_links(de, en, progress=not args.no_progress)
    links = every[len(train_de):]
    if args.lexicon:  # the training pairs' links, and the lexical table the page's "Training evidence" reads
        from .evidence import lexicon_table
        train = every[:len(train_de)]
        table = lexicon_table(de[:len(train_de)], en[:len(train_de)], train)
        for path, text in ((TRAIN_LINKS, "".join(" ".join(f"{i}-{j}" for i, j in sorted(p)) + "\n" for p in train)),
                           (args.lexicon, files.dumps(table, ensure_ascii=False))):
            with files.replacing(path) as tmp:
                tmp.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    files.write_text(args.out, "".join(files.dumps({"line": line, "links": sorted(map(list, pair))}) + "\n"
                                       for line, pair in enumerate(links)))
    print(files.dumps({"out": args.out, "pairs": len(links), "links": sum(map(len, links))}))
    return 0


if __name__ == "__main__":
    cli.run(main)
