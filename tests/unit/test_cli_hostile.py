"""The command-line tools and checkpoint loading against hostile input (docs/contract.md, Command-line contracts).

Almost every case here gave a traceback, a silent wrong answer, a partial file or an unbounded allocation before
the fix it guards (a few neighbours guard what already held): every failure is one `error: ...` line and status 2;
Ctrl-C is `interrupted` and status 130; an --out file is written whole or not at all; no JSON holds NaN; inputs
are read up to a limit; a checkpoint that cannot be this model is refused before the model is built. Most run a
tool's main in this process (conftest's `call`); a few start `python -m` for real, for the wiring and a real SIGINT.
"""

import argparse
import errno
import gzip
import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT, assert_error_line, tiny_config, write_multi30k
from lesson import worksheet
from model import (align, cli, contrast, convert, evaluate, faithfulness, familiarity, files, head_importance,
                   head_stats, inspect, patch, replay, silver, source_share, tables, train, train_lengths, transcoders,
                   translate)
from viz import report
from model.errors import InputError
from model.transformer import Transformer

SENTENCE = "Ein Hund läuft."
LIMIT_MB = f"{files.MAX_INPUT_BYTES // 1_000_000} MB"
MANY_DIGITS = "9" * 5000  # past the 4,300 digits int() converts


@pytest.fixture
def corpus(tmp_path):
    """Two German lines and their references: (src, ref)."""
    (tmp_path / "s.de").write_text("Ein Hund läuft.\nZwei Männer.\n", encoding="utf-8")
    (tmp_path / "r.en").write_text("A dog runs.\nTwo men.\n", encoding="utf-8")
    return tmp_path / "s.de", tmp_path / "r.en"


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def gold_file(path: Path) -> Path:
    """A hand-checked alignment of line 0 of `corpus` (ein-a, hund-dog, läuft-runs, .-.)."""
    links = [[0, 0], [1, 1], [2, 2], [3, 3]]
    path.write_text(json.dumps({"line": 0, "sure": links, "possible": links, "de": "Ein Hund läuft.",
                                "en": "A dog runs."}) + "\n", encoding="utf-8")
    return path


# 1. every failure: one `error:` line, status 2 ------------------------------------------------------------------
@pytest.fixture
def ctx(tiny_checkpoint, corpus, tmp_path) -> SimpleNamespace:
    """What the cases below refer to: the tiny checkpoint, the corpus, hostile files, a training run's arguments."""
    src, ref = corpus
    data = write_multi30k(tmp_path / "data")
    return SimpleNamespace(
        ck=tiny_checkpoint, src=src, ref=ref, out=["--out", tmp_path / "o.json"],
        # the last two keep the run short where the code before the fix trained regardless
        train=["--data-dir", data, "--out", tmp_path / "out", "--work-dir", tmp_path / "work", "--no-progress",
               "--epochs", "1", "--max-steps", "1"],
        latin1=write(tmp_path / "latin1.jsonl", '{"line": 0, "de": "Männer"}\n'.encode("latin-1")),
        not_utf8=write(tmp_path / "bad.jsonl", b"\xff\xfe\x00bad"),
        deep=write(tmp_path / "deep.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n"),
        gold=gold_file(tmp_path / "gold.jsonl"),
        empty_de=write(tmp_path / "e.de", b""), empty_en=write(tmp_path / "e.en", b""))


FAILURES = {  # case: (tool, its arguments from ctx, what the error line says)
    "top-k past the vocabulary": (translate, lambda c: ["--checkpoint", c.ck, "--top-k", "100000"],
                                  ["--top-k must be at most 19", "vocabulary"]),
    "beam 100000": (translate, lambda c: ["--checkpoint", c.ck, "--beam", "100000"], ["--beam must be at most 64"]),
    "evaluate beam 100000": (evaluate, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref,
                                                  "--beam", "100000"], ["--beam must be at most 64"]),
    "beam in Arabic-Indic digits": (translate, lambda c: ["--checkpoint", c.ck, "--beam", "\u0663"],
                                    ["argument --beam: invalid int value"]),
    "beam of 5000 digits": (translate, lambda c: ["--checkpoint", c.ck, "--beam", MANY_DIGITS],
                            ["argument --beam: invalid int value"]),
    "mask-heads superscript": (translate, lambda c: ["--checkpoint", c.ck, "--mask-heads", "enc.\u00b2"],
                               ["enc layer '\u00b2' is not a number"]),
    "mask-heads of 5000 digits": (translate, lambda c: ["--checkpoint", c.ck, "--mask-heads", f"cross.0.{MANY_DIGITS}"],
                                  ["is not a number"]),
    "evaluate mask-heads superscript": (evaluate, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref,
                                                             "--mask-heads", "dec.1.\u00b2"], ["is not a number"]),
    "force of 5000 digits": (translate, lambda c: ["--checkpoint", c.ck, "--force", f"{MANY_DIGITS}:dog"],
                             ["is not STEP:TOKEN"]),
    "force in Arabic-Indic digits": (translate, lambda c: ["--checkpoint", c.ck, "--force", "\u0661:dog"],
                                     ["is not STEP:TOKEN"]),
    "inspect top-k past the vocabulary": (inspect, lambda c: ["lens", "--checkpoint", c.ck, "--top-k", "100000",
                                                              SENTENCE], ["top_k must be a whole number from 1 to 19"]),
    "inspect layer of 5000 digits": (inspect, lambda c: ["head", "--checkpoint", c.ck, "--layer", MANY_DIGITS,
                                                         SENTENCE], ["argument --layer: invalid int value"]),
    "gold not UTF-8": (align, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref, "--gold", c.latin1,
                                         "--silver", "none", *c.out], ["latin1.jsonl line 1 is not UTF-8"]),
    "silver not UTF-8": (align, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref, "--gold", c.gold,
                                           "--silver", c.latin1, *c.out], ["latin1.jsonl line 1 is not UTF-8"]),
    "pairs not UTF-8": (patch, lambda c: ["--checkpoint", c.ck, "--pairs", c.not_utf8, *c.out],
                        ["bad.jsonl is not UTF-8 text (byte 0xff at byte 1)"]),
    "silver nested too deeply": (align, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref, "--gold",
                                                   c.gold, "--silver", c.deep, *c.out],
                                 ["deep.jsonl:1: nested too deeply"]),
    "train lr nan": (train, lambda c: [*c.train, "--lr", "nan"], ["argument --lr", "not a finite number"]),
    "train lr 1e999": (train, lambda c: [*c.train, "--lr", "1e999"], ["argument --lr", "not a finite number"]),
    "train clip -inf": (train, lambda c: [*c.train, "--clip=-inf"], ["argument --clip", "not a finite number"]),
    "train batch-size 0": (train, lambda c: [*c.train, "--batch-size", "0"], ["--batch-size must be at least 1, got 0"]),
    "train dropout 2": (train, lambda c: [*c.train, "--dropout", "2"], ["--dropout must be below 1, got 2.0"]),
    "train word-dropout -0.5": (train, lambda c: [*c.train, "--word-dropout=-0.5"],
                                ["--word-dropout must be at least 0"]),
    "train label-smoothing 3": (train, lambda c: [*c.train, "--label-smoothing", "3"],
                                ["--label-smoothing must be at most 1"]),
    "train limit -5": (train, lambda c: [*c.train, "--limit", "-5"], ["--limit must be at least 0, got -5"]),
    "train epochs 0": (train, lambda c: [*c.train, "--epochs", "0"], ["--epochs must be at least 1, got 0"]),
    "train seed -1": (train, lambda c: [*c.train, "--seed", "-1"], ["--seed must be at least 0, got -1"]),
    "transcoders dead-after 0": (transcoders, lambda c: ["train", "--checkpoint", c.ck, "--dead-after", "0"],
                                 ["--width, --epochs and --dead-after are at least 1"]),
    "train snapshot step superscript": (train, lambda c: [*c.train, "--snapshots", "e\u00b2"], ["is not a step"]),
    "head_importance limit -5": (head_importance, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref,
                                                             "--limit", "-5", *c.out], ["--limit must be at least 0"]),
    "head_importance seed -1": (head_importance, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref", c.ref,
                                                            "--seed", "-1", *c.out], ["--seed must be at least 0"]),
    "head_importance resamples 10**12": (head_importance, lambda c: ["--checkpoint", c.ck, "--src", c.src, "--ref",
                                                                     c.ref, "--resamples", str(10**12), *c.out],
                                         ["--resamples must be at most 10000"]),
    "evaluate on empty files": (evaluate, lambda c: ["--checkpoint", c.ck, "--src", c.empty_de, "--ref", c.empty_en],
                                ["e.de is empty"]),
    "head_importance on empty files": (head_importance, lambda c: ["--checkpoint", c.ck, "--src", c.empty_de,
                                                                   "--ref", c.empty_en, *c.out], ["e.de is empty"]),
}


@pytest.mark.parametrize("case", FAILURES)
def test_every_failure_is_one_error_line_and_status_2(case, call, ctx, tmp_path):
    tool, argv, fragments = FAILURES[case]
    status, out, err = call(tool.main, *argv(ctx), stdin=f"{SENTENCE}\n")
    assert_error_line(status, err, *fragments)
    assert out == "" and not (tmp_path / "o.json").exists() and not (tmp_path / "out").exists()


# the shared helpers -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["\u00b2", "\u0663", "1_000", " 7", "7 ", "", "+", "0x10", "1.0", "9" * 19, MANY_DIGITS])
def test_whole_reads_ascii_digits_only(text):
    with pytest.raises(ValueError):
        cli.whole(text)


def test_whole_and_real_read_plain_numbers():
    assert [cli.whole(t) for t in ("0", "-5", "+3", "9" * 18)] == [0, -5, 3, int("9" * 18)]
    assert [cli.real(t) for t in ("5e-4", "-1", "0.1")] == [5e-4, -1.0, 0.1]
    for text in ("nan", "inf", "-Infinity", "1e999", "\u0661.5", "fast"):
        with pytest.raises((ValueError, argparse.ArgumentTypeError)):
            cli.real(text)


def test_check_names_the_option_and_the_bound():
    class Args:
        beam, dropout, top_k = 70, 1.0, 0

    with pytest.raises(InputError, match=r"^--beam must be at most 64, got 70$"):
        cli.check(Args, beam=cli.BEAM)
    with pytest.raises(InputError, match=r"^--dropout must be below 1, got 1.0$"):
        cli.check(Args, dropout=cli.Range(0, 1, open=True))
    with pytest.raises(InputError, match=r"^--top-k must be at least 1 \(why\), got 0$"):
        cli.check(Args, top_k=cli.Range(1, 5, why="why"))


def test_the_parameter_count_from_the_config_is_the_models():
    for cfg in (tiny_config(), tiny_config(positions="sinusoidal", n_dec_layers=3, d_ff=8)):
        assert cfg.n_params == Transformer(cfg).n_params()


# 2. Ctrl-C: `interrupted`, status 130 -----------------------------------------------------------------------------
def tool_files() -> list[Path]:
    """Every module that is a tool (`cli.run(main)`), in model/, lesson/ and viz/: a new tool joins the Ctrl-C test
    by itself."""
    return sorted(p for folder in ("model", "lesson", "viz") for p in (ROOT / folder).glob("*.py")
                  if "cli.run(main)" in p.read_text(encoding="utf-8"))


def tool_modules() -> list[str]:
    return sorted(p.stem for p in tool_files())


TOOLS = {m.__name__.rpartition(".")[2]: m for m in (align, contrast, convert, evaluate, faithfulness, familiarity,
                                                      head_importance, head_stats, patch, tables,
                                                      inspect, replay, report, silver, source_share, train,
                                                      train_lengths, transcoders, translate, worksheet)}


def test_the_ctrl_c_test_covers_every_tool():
    assert sorted(TOOLS) == tool_modules()


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_ctrl_c_in_any_tool_is_one_line_and_status_130(tool, call, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.Parser, "parse_args", interrupted)  # every tool's first step
    status, out, err = call(TOOLS[tool].main, "--anything")
    assert (status, out, err) == (130, "", "interrupted\n")


# 3. --out: whole or not at all ------------------------------------------------------------------------------------
def out_tools(ck: str, tmp: Path, src: Path, ref: Path, out: Path) -> dict:
    return {"report": (report.main, [SENTENCE, "--checkpoint", ck, "--out", out / "r.html"]),
            "head_stats": (head_stats.main, ["--checkpoint", ck, "--src", src, "--out", out / "hs.json",
                                             "--no-progress"]),
            "head_importance": (head_importance.main, ["--checkpoint", ck, "--src", src, "--ref", ref, "--out",
                                                       out / "hi.json", "--resamples", "10", "--limit", "2"]),
            "source_share": (source_share.main, ["--checkpoint", ck, "--src", src, "--out", out / "ss.json",
                                                 "--no-progress"]),
            "align": (align.main, ["--checkpoint", ck, "--src", src, "--ref", ref, "--gold",
                                   gold_file(tmp / "g.jsonl"), "--silver", "none", "--out", out / "al.json",
                                   "--no-progress"]),
            "faithfulness": (faithfulness.main, ["--checkpoint", ck, "--src", src, "--n", "2", "--out", out / "f.json",
                                                 "--no-progress"]),
            "train_lengths": (train_lengths.main, ["--data-dir", write_multi30k(tmp / "data")])}


@pytest.mark.parametrize("tool", ["report", "head_stats", "head_importance", "source_share", "align", "train_lengths"])
def test_a_write_that_fails_midway_leaves_no_file(tool, call, tiny_checkpoint, corpus, tmp_path, monkeypatch):
    """The disk fills halfway through the output: one error line, and neither the file nor a temporary one."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(train_lengths, "OUT", out / "lengths.json")
    main, argv = out_tools(tiny_checkpoint, tmp_path, *corpus, out)[tool]

    def half_then_full(self, text, *args, **kwargs):
        with open(self, "w", encoding="utf-8") as f:
            f.write(text[:len(text) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "write_text", half_then_full)
    status, _, err = call(main, *argv)
    assert_error_line(status, err, "No space left on device")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("kind", ["symbolic link", "named pipe"])
def test_out_onto_a_link_or_a_pipe_is_refused_and_left_as_it_is(kind, call, tiny_checkpoint, corpus, tmp_path):
    """os.replace would put a regular file in place of the link or the pipe (or of /dev/stdout, a link too)."""
    real = tmp_path / "real.json"
    real.write_text("keep")
    target = tmp_path / "target.json"
    if kind == "symbolic link":
        target.symlink_to(real)
    else:
        os.mkfifo(target)
    for main, argv in ((report.main, [SENTENCE, "--checkpoint", tiny_checkpoint, "--out", target]),
                       (head_stats.main, ["--checkpoint", tiny_checkpoint, "--src", corpus[0], "--out", target])):
        status, out, err = call(main, *argv)
        assert_error_line(status, err, f"cannot write {target}: it is a {kind}",
                          "--out must be a regular file's path or a new one")
    assert (target.is_symlink() and os.readlink(target) == str(real)) if kind == "symbolic link" else \
        stat.S_ISFIFO(os.lstat(target).st_mode)
    assert real.read_text() == "keep" and sorted(p.name for p in tmp_path.iterdir()) == [
        "r.en", "real.json", "s.de", "target.json"]
    with pytest.raises(InputError, match="it is a character device"):  # checked alone: never written to
        files.check_target("/dev/null")


def test_replacing_keeps_the_old_file_until_the_new_one_is_whole(tmp_path):
    target = tmp_path / "t.json"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with files.replacing(target) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"] and target.read_text() == "old"
    files.write_text(target, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"] and target.read_text() == "new"


# 4. JSON without NaN ----------------------------------------------------------------------------------------------
def strict(text: str):
    """json.loads that refuses NaN and Infinity, as a strict reader (JavaScript's JSON.parse) does."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_dumps_writes_null_for_what_json_cannot_hold():
    import numpy as np

    value = {"loss": float("nan"), "ppl": [float("inf"), -float("inf"), np.float64("nan"), 1.5], "n": 0}
    assert strict(files.dumps(value)) == {"loss": None, "ppl": [None, None, None, 1.5], "n": 0}
    assert files.dumps({"a": 1.5}, indent=1) == json.dumps({"a": 1.5}, indent=1)


def test_no_tool_writes_json_but_through_dumps():
    """json.dumps writes NaN unless told not to: every tool writes its JSON through files.dumps instead."""
    for path in tool_files():
        assert "json.dumps(" not in path.read_text(encoding="utf-8"), path.name


def test_evaluate_prints_strict_json(call, tiny_checkpoint, corpus):
    status, out, err = call(evaluate.main, "--checkpoint", tiny_checkpoint, "--src", corpus[0], "--ref", corpus[1])
    assert status == 0, err
    assert strict(out)["n"] == 2


# 5. input size limits ---------------------------------------------------------------------------------------------
def test_a_gzip_bomb_stops_at_the_limit(call, tiny_checkpoint, tmp_path):
    bomb = tmp_path / "bomb.de.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        chunk = b"\xff" * 1_000_000
        for _ in range(files.MAX_INPUT_BYTES // len(chunk) + 10):
            f.write(chunk)
    assert bomb.stat().st_size < files.MAX_INPUT_BYTES // 100
    status, out, err = call(translate.main, "--checkpoint", tiny_checkpoint, "--input", bomb)
    assert_error_line(status, err, "bomb.de.gz is larger than the input limit", LIMIT_MB, "decompressed")
    assert out == ""


def test_stdin_and_plain_files_stop_at_the_limit(call, tiny_checkpoint, corpus, tmp_path):
    status, out, err = call(translate.main, "--checkpoint", tiny_checkpoint, stdin=b"\xff" * (files.MAX_INPUT_BYTES + 1))
    assert_error_line(status, err, "stdin is larger than the input limit", LIMIT_MB)
    big = tmp_path / "big.de"
    with open(big, "wb") as f:
        f.truncate(files.MAX_INPUT_BYTES + 1)  # sparse: no disk used
    status, out, err = call(evaluate.main, "--checkpoint", tiny_checkpoint, "--src", big, "--ref", corpus[1])
    assert_error_line(status, err, "big.de is larger than the input limit", LIMIT_MB)


def test_a_damaged_gzip_is_one_error_line(call, tiny_checkpoint, tmp_path):
    data = bytearray(gzip.compress(SENTENCE.encode() * 100))
    data[10:20] = b"\x00" * 10  # the deflate stream (after the 10-byte header): zlib.error, not an OSError
    status, _, err = call(translate.main, "--checkpoint", tiny_checkpoint, "--input", write(tmp_path / "x.gz", bytes(data)))
    assert_error_line(status, err, "x.gz cannot be read as gzip")


# 6. checkpoints that cannot be this model -------------------------------------------------------------------------


def test_a_snapshot_list_cannot_point_outside_its_folder(call, tmp_path):
    (tmp_path / "snapshots.json").write_text(json.dumps([{"step": 0, "file": "../../model.safetensors"}]))
    status, _, err = call(replay.main, "--snapshots", tmp_path, SENTENCE)
    assert_error_line(status, err, "snapshots.json: expected a list of")
