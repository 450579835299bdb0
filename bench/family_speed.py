"""Your own model: converting it, and translating with it against its tutorial's own code, in the same run.

    python bench/family_speed.py [--sentences 20] [--threads 2]

1. `python -m model.convert tutorial` of a tutorial-size state_dict (the shipped model under the Trevett
   tutorial's names, 9.0 M parameters), in process: with vocabulary files given, and with the vocabularies rebuilt
   from Multi30k (spaCy over 29,000 x 2 training sentences); beside the reference, torch.load of the same file
   plus torch.save of its tensors (what any converter must at least do). Bar: 10 s.
2. Greedy translation of test2016 sentences one at a time (as the page translates a typed sentence) with every
   map captured, by our Translator on the converted model, against the family's own greedy loop (its tutorial's
   code, tests/families.py) on the same weights and the same source ids, for a tutorial-size model (256 wide,
   3 + 3 layers, 8 heads) and an Annotated-size one (512 wide, 6 + 6 layers, d_ff 2048, random weights).
   Bar: at most 1.5x.

The last line is a summary; exit status 1 when a bar is missed.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import families  # noqa: E402
from model import convert  # noqa: E402
from model.checkpoint import load_checkpoint  # noqa: E402
from model.data import default_data_dir, read_lines  # noqa: E402
from model.decoding import greedy_decode  # noqa: E402
from model.translator import MAX_OUTPUT  # noqa: E402


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def conversion(folder: Path, data: Path) -> dict:
    model, src_vocab, tgt_vocab = load_checkpoint()
    state = {t: model.state_dict()[o] for t, o in convert.key_map("tutorial", 3, 3)}
    source = folder / "tut6-model.pt"
    torch.save(state, source)
    for name, vocab in (("de.txt", src_vocab), ("en.txt", tgt_vocab)):
        (folder / name).write_text("\n".join(vocab.itos) + "\n")
    out = {}
    out["reference"] = min(timed(lambda: torch.save(dict(torch.load(source, weights_only=True)), folder / "r.pt"))
                           for _ in range(3))
    out["with files"] = min(timed(lambda: convert.command(
        ["tutorial", str(source), "--out", str(folder / "a"), "--src-vocab", str(folder / "de.txt"),
         "--tgt-vocab", str(folder / "en.txt")])) for _ in range(3))
    out["rebuilt"] = timed(lambda: convert.command(["tutorial", str(source), "--out", str(folder / "b"),
                                                    "--data", str(data)]))
    return out


def greedy_speed(family: str, size: dict, lines: list, folder: Path, weights_from_shipped: bool) -> tuple:
    """(ours, theirs) median seconds per sentence."""
    from model.translator import Translator

    vocab_model, src_vocab, tgt_vocab = load_checkpoint()
    theirs = families.build(family, len(src_vocab), len(tgt_vocab), seed=0, **size)
    if weights_from_shipped:  # the tutorial-size model: the real trained weights, so outputs have real lengths
        theirs.load_state_dict({t: vocab_model.state_dict()[o] for t, o in convert.key_map("tutorial", 3, 3)})
    cfg, weights = convert.convert_state(family, theirs.state_dict(), size["n_heads"])
    ours_model = type(vocab_model)(cfg).eval()
    ours_model.load_state_dict(weights)
    tr = Translator(ours_model, src_vocab, tgt_vocab)
    ids = families.special_ids(family)
    sources = [torch.tensor([tr.source_ids(s)[1]]) for s in lines]
    if family != "tutorial":  # the family's own start and end ids
        sources = [torch.tensor([[ids["sos"], *s[0, 1:-1].tolist(), ids["eos"]]]) for s in sources]
    n = min(MAX_OUTPUT, cfg.max_positions)
    ours_t, theirs_t = [], []
    for src in sources:  # alternate, each sentence both ways
        ours_t.append(timed(lambda: greedy_decode(ours_model, src, max_len=n, need_weights=True)))
        theirs_t.append(timed(lambda: families.greedy(family, theirs, src, ids["sos"], ids["eos"], ids["pad"],
                                                      n if family == "tutorial" else n + 1)))
    return statistics.median(ours_t), statistics.median(theirs_t)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sentences", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    data = default_data_dir()
    lines = read_lines(data / "test_2016_flickr.de.gz")[:args.sentences]
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        c = conversion(Path(tmp), data)
        print(f"conversion, tutorial size: {c['with files']:.2f} s with vocabulary files, {c['rebuilt']:.2f} s "
              f"rebuilding them; reference torch.load + torch.save {c['reference']:.2f} s "
              f"({c['with files'] / c['reference']:.1f}x, {c['rebuilt'] / c['reference']:.1f}x); bar 10 s")
        if max(c["with files"], c["rebuilt"]) > 10:
            missed.append("conversion")
        for family, size, real in (
                ("tutorial", dict(d_model=256, n_layers=3, n_heads=8, d_ff=512), True),
                ("annotated", dict(d_model=512, n_layers=6, n_heads=8, d_ff=2048), False)):
            ours, theirs = greedy_speed(family, size, lines, Path(tmp), real)
            print(f"greedy with every map, {family} ({size['d_model']} wide, {size['n_layers']} + "
                  f"{size['n_layers']}): ours {ours * 1000:.0f} ms, the family's own loop {theirs * 1000:.0f} ms a "
                  f"sentence: {ours / theirs:.2f}x (bar 1.5x)")
            if ours / theirs > 1.5:
                missed.append(family)
    print("summary: " + ("every bar met" if not missed else "missed: " + ", ".join(missed)))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
