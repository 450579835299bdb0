"""Watch attention form: a model's heads, alignments and translations replayed over its training.

    python -m model.replay --snapshots DIR "SENTENCE" [--out FILE] [--device D]
    python -m model.replay --snapshots DIR --ship checkpoints/replay --data-dir ../shared/data/multi30k

DIR is a folder of training snapshots (`python -m model.train ... --snapshots`: snapshots.json, config.json,
vocab.json and one stepNNNNNN.safetensors per point). With a SENTENCE: at every snapshot, its greedy translation
and every attention map, as JSON (stdout, or --out). With --ship: the replay the page shows, for the built-in
examples (assets/examples.json), one point per snapshot (Voita, Sennrich and Titov, EMNLP 2021, describe the
stages such a replay shows: a target-side language model first, then word-by-word translation, then reordering):

- validation loss (token-weighted, docs/contract.md) and greedy BLEU on the 1,014 validation sentences;
- per-head statistics (model/head_stats.py) of 200 validation sentences' greedy translations;
- the mean ALTI+ source share (model/contributions.py) of the first 100 validation sentences' generated tokens;
- the cross-attention AER of every head and layer mean against the hand-checked links (model/align.py);
- each example's translation, and every attention map quantized to uint8 (w -> round(255 w)): stepNNNNNN.npz.

Each point is written as soon as it is done (points/stepNNNNNN.json), so --ship can run beside the training and
pick up where it left off; replay.json, the manifest, is written again at the end of every run.
"""

import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import files
from .errors import InputError
from .result import KIND_NAMES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets/examples.json"
LEVELS = 255  # uint8 quantization of a weight w in [0, 1]: round(255 w); the error is at most 1/510
N_STATS, N_SHARE = 200, 100  # validation sentences for the head statistics and for the source share


def quantize(weights) -> np.ndarray:
    return np.rint(np.clip(np.asarray(weights, dtype=np.float32), 0, 1) * LEVELS).astype(np.uint8)


def dequantize(q) -> np.ndarray:
    return np.asarray(q, dtype=np.float32) / LEVELS


def snapshot_rows(folder) -> list[dict]:
    """The snapshots of a folder, by step; InputError when it is not a snapshot folder."""
    manifest = Path(folder) / "snapshots.json"
    if not manifest.is_file():
        raise InputError(f"{folder} is not a folder of training snapshots (no snapshots.json): train with "
                         f"`python -m model.train ... --snapshots`")
    with open(manifest, "rb") as f:
        rows = files.loads(files.read_limited(f, str(manifest)), str(manifest))
    # Rows as model.train writes them; a file name only, so that a row cannot point outside the folder.
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and type(r.get("step")) is int and isinstance(r.get("file"), str)
            and r["file"] == Path(r["file"]).name and r["file"].endswith(".safetensors") for r in rows):
        raise InputError(f"{manifest}: expected a list of {{\"step\": N, \"file\": \"stepNNNNNN.safetensors\", ...}}")
    missing = [r["file"] for r in rows if not (Path(folder) / r["file"]).is_file()]
    if missing:
        raise InputError(f"{folder}: snapshots.json lists {missing[0]}, which is not there")
    return sorted(rows, key=lambda r: r["step"])


def load_snapshot(folder, row: dict, device=None):
    """The Translator of one snapshot (its weights in float32, as training left them)."""
    from .checkpoint import load_checkpoint
    from .device import pick_device
    from .translator import Translator

    model, sv, tv = load_checkpoint(folder, pick_device(device), weights=row["file"])
    return Translator(model, sv, tv, checkpoint=(f"{Path(folder).name}@step{row['step']}", None, None))


def sentence_point(translator, sentence: str) -> dict:
    """One sentence at one snapshot: tokens, translation and every map quantized."""
    r = translator.translate(sentence, top_k=1)
    return {"src_tokens": r.src_tokens, "tgt_tokens": r.tgt_tokens, "output_tokens": r.output_tokens,
            "steps": [s.token for s in r.steps],
            "maps": {k: quantize(r.maps(k)) for k in KIND_NAMES}}


def replay_sentence(folder, sentence: str, device=None, progress: bool = False) -> list[dict]:
    """A sentence at every snapshot of a folder: [{step, epoch, translation, maps (floats, 4 digits)}]."""
    out = []
    for row in tqdm(snapshot_rows(folder), desc="snapshots", disable=not progress):
        t = load_snapshot(folder, row, device)
        p = sentence_point(t, sentence)
        out.append({"step": row["step"], "epoch": row["epoch"], "translation": " ".join(p["output_tokens"]),
                    **{k: p[k] for k in ("src_tokens", "tgt_tokens", "steps")},
                    "maps": {k: np.round(dequantize(v), 4).tolist() for k, v in p["maps"].items()}})
    return out


def measure(translator, val_src: list, val_ref: list) -> dict:
    """What one point of the shipped replay says about a snapshot (the module docstring), the AER aside."""
    from .head_stats import corpus_mean, corpus_stats, to_json
    from .metrics import corpus_score
    from .source_share import corpus_source_shares

    t0 = time.time()
    val = corpus_score(translator, val_src, val_ref)  # greedy BLEU and the teacher-forced loss, as model.evaluate
    per_sentence, _ = corpus_stats(translator, val_src[:N_STATS])
    stats = to_json(corpus_mean(per_sentence)[0], digits=4)
    shares, _ = corpus_source_shares(translator, val_src[:N_SHARE])
    return {"val_loss": round(val.loss, 4), "val_bleu": round(val.bleu, 2),
            "source_share": round(float(np.concatenate(shares).mean()), 4), "head_stats": stats,
            "seconds": round(time.time() - t0, 1)}


def alignment_error(translator, gold: list) -> dict:
    """The cross heads' and layer means' AER (argmax links) against the hand-checked pairs (model/align.py)."""
    from . import align

    report = align.evaluate(translator, {g.line: g.de for g in gold}, {g.line: g.en for g in gold}, gold,
                            attention_only=True)
    return {"cross_aer": report["heads"]["cross"],
            "layer_aer": {m: r["aer"] for m, r in report["methods"].items() if m.endswith("argmax")}}


def against_shipped(folder, row: dict, point: dict, maps_file, shipped, examples: list, device=None) -> dict:
    """How far the run's last snapshot is from the shipped checkpoint whose recipe it repeats: the largest weight
    difference once the snapshot is rounded to float16 as checkpoints are stored (0: the same model), and, on the
    examples, the shipped model's translations beside the last point's and the mean |difference| of the
    cross-attention maps where the two translations are the same."""
    from safetensors.torch import load_file

    from .translator import Translator

    mine, theirs = load_file(Path(folder) / row["file"]), load_file(Path(shipped) / "model.safetensors")
    diff = max(float((mine[k].half().float() - theirs[k].float()).abs().max()) for k in theirs)
    scale = max(float(v.float().abs().max()) for v in theirs.values())
    model = Translator.load(shipped, device)
    steps, gaps = [], []
    with np.load(maps_file) as z:
        for i, sentence in enumerate(examples):
            r = model.translate(sentence, top_k=1)
            steps.append([s.token for s in r.steps])
            if steps[-1] == point["examples"][i]["steps"]:
                gaps.append(float(np.abs(dequantize(z[f"ex{i}_cross"]) - r.cross_attentions).mean()))
    same = sum(a == b["steps"] for a, b in zip(steps, point["examples"]))
    return {"checkpoint": Path(shipped).name, "same_weights": diff == 0.0, "max_weight_difference": round(diff, 6),
            "largest_weight": round(scale, 4), "shipped_steps": steps, "same_translations": same,
            "cross_map_mean_abs_difference": round(float(np.mean(gaps)), 5) if gaps else None}


def ship(folder, out, data_dir, device=None, progress: bool = False, replays=None) -> dict:
    """Write (or complete) the replay the page shows: OUT/stepNNNNNN.npz, OUT/points/, OUT/replay.json.
    replays: the checkpoint folder whose recipe the run repeats (compared with the last snapshot)."""
    from . import align, cli

    out = Path(out)
    (out / "points").mkdir(parents=True, exist_ok=True)
    shipped = json.loads(EXAMPLES.read_text(encoding="utf-8"))
    examples = [e["de"] for e in shipped["examples"][:shipped["replayed"]]]  # the first ones: the replay's own
    val_src, val_ref = cli.read_split(data_dir, "val")
    gold = align.read_gold(align.GOLD)
    gold_sha = hashlib.sha256(align.GOLD.read_bytes()).hexdigest()
    rows = snapshot_rows(folder)
    for row in rows:
        done = out / "points" / f"step{row['step']:06d}.json"
        if done.is_file():
            point = json.loads(done.read_text())
            if point.get("gold_sha256") != gold_sha:  # the reference changed: only the AER is measured again
                point.update(alignment_error(load_snapshot(folder, row, device), gold), gold_sha256=gold_sha)
                files.write_text(done, files.dumps(point))
            continue
        t = load_snapshot(folder, row, device)
        points = [sentence_point(t, s) for s in examples]
        arrays = {f"ex{i}_{k}": v for i, p in enumerate(points) for k, v in p["maps"].items()}
        with files.replacing(out / f"step{row['step']:06d}.npz") as tmp, open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)
        point = {**{k: row[k] for k in ("step", "epoch", "epoch_end")}, **measure(t, val_src, val_ref),
                 **alignment_error(t, gold), "gold_sha256": gold_sha,
                 "examples": [{k: p[k] for k in ("src_tokens", "tgt_tokens", "steps")} for p in points],
                 "file": f"step{row['step']:06d}.npz"}
        files.write_text(done, files.dumps(point))
        if progress:
            print(files.dumps({k: point[k] for k in ("step", "val_loss", "val_bleu", "source_share", "seconds")}),
                  file=sys.stderr, flush=True)
    config = json.loads((Path(folder) / "config.json").read_text())
    points = [json.loads((out / "points" / f"step{r['step']:06d}.json").read_text()) for r in rows]
    manifest = {"model": config.get("positions"), "examples": examples, "levels": LEVELS,
                "replays": None if replays is None else Path(replays).name,
                "last_vs_shipped": None if replays is None else against_shipped(
                    folder, rows[-1], points[-1], out / points[-1]["file"], replays, examples, device),
                "n_stats": N_STATS, "n_share": N_SHARE,
                "gold": align.GOLD.name, "snapshots": points,
                "command": f"python -m model.replay --snapshots {folder} --ship {out} --data-dir {data_dir}"
                           + ("" if replays is None else f" --replays {replays}")}
    files.write_text(out / "replay.json", files.dumps(manifest, separators=(",", ":")))
    return manifest


def main(argv=None):
    """`python -m model.replay`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    p.add_argument("sentence", nargs="?", help="a German sentence to replay")
    p.add_argument("--snapshots", required=True, help="folder of training snapshots (model.train --snapshots)")
    p.add_argument("--out", default=None, help="JSON file for the sentence's replay (default: stdout)")
    p.add_argument("--ship", default=None, metavar="DIR", help="write the replay of the built-in examples to DIR")
    p.add_argument("--data-dir", default=None, help="Multi30k folder (with --ship: the validation split)")
    p.add_argument("--replays", default=None, help="with --ship: the checkpoint whose recipe the run repeats")
    cli.add_device(p)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if (args.sentence is None) == (args.ship is None):
        p.error("give either a SENTENCE or --ship DIR")
    if args.ship:
        m = ship(args.snapshots, args.ship, args.data_dir, args.device, progress=not args.no_progress,
                 replays=args.replays)
        print(files.dumps({"out": args.ship, "snapshots": len(m["snapshots"])}))
        return 0
    snapshot_rows(args.snapshots)  # a bad folder fails before the first model loads
    if args.out:
        files.check_output(args.out)  # before the first model loads
    text = files.dumps({"sentence": args.sentence, "snapshots": replay_sentence(
        args.snapshots, args.sentence, args.device, progress=not args.no_progress)}, ensure_ascii=False)
    if args.out:
        files.write_text(args.out, text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
