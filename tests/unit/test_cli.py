"""The command-line contracts of docs/contract.md.

Every tool's main(argv) is called in this process on the tiny checkpoint of conftest.py (fast):
a matrix of bad options and arguments, each one `error: ...` line and exit status 2, and the
outputs. One real `python -m` run per tool proves the wiring (model/cli.py's `run`: exit status,
closed pipe); those, and the shipped models over the whole test set, are marked slow.
"""

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import assert_error_line
from model import cli, evaluate, head_importance, head_stats, inspect, train, train_lengths, translate
from model.device import DEVICE_NAMES
from model.errors import InputError

SENTENCE = "Ein Hund läuft im Park."


@pytest.fixture
def corpus(tmp_path):
    """A two-line German file and its references: (src path, ref path)."""
    (tmp_path / "s.de").write_text("Ein Hund läuft.\nZwei Männer.\n", encoding="utf-8")
    (tmp_path / "r.en").write_text("A dog runs.\nTwo men.\n", encoding="utf-8")
    return tmp_path / "s.de", tmp_path / "r.en"


def multi30k(folder: Path, german_train_lines: int = 3) -> Path:
    """A tiny Multi30k folder: train and val splits of three "Ein Hund läuft." / "A dog runs." lines
    (german_train_lines: fewer, for a train split whose files differ)."""
    folder.mkdir(exist_ok=True)
    for name, line, n in (("train.de.gz", "Ein Hund läuft.", german_train_lines), ("train.en.gz", "A dog runs.", 3),
                          ("val.de.gz", "Ein Hund läuft.", 3), ("val.en.gz", "A dog runs.", 3)):
        with gzip.open(folder / name, "wt", encoding="utf-8") as f:
            f.write(f"{line}\n" * n)
    return folder


# bad options and arguments: argparse, one line ---------------------------------------------------
TOOLS = {"translate": translate.main, "evaluate": evaluate.main, "inspect": inspect.main,
         "head_stats": head_stats.main, "head_importance": head_importance.main, "train": train.main,
         "train_lengths": train_lengths.main}
CORPUS = ["--src", "s.de", "--ref", "r.en"]  # never read: the parser stops first

BAD_OPTIONS = [
    ("translate", ["--bogus"], "unrecognized arguments: --bogus"),
    ("translate", ["--beam", "x"], "argument --beam: invalid int value: 'x'"),
    ("translate", ["--checkpoint"], "argument --checkpoint: expected one argument"),
    ("translate", ["extra\nline"], "unrecognized arguments: extra\\nline"),  # a line break stays inside the line
    ("evaluate", ["--src", "s.de"], "the following arguments are required: --ref"),
    ("evaluate", [*CORPUS, "--beam", "1.5"], "argument --beam: invalid int value: '1.5'"),
    ("inspect", [], "the following arguments are required: command"),
    ("inspect", ["heads", SENTENCE], "argument command: invalid choice: 'heads'"),
    ("inspect", ["lens"], "the following arguments are required: sentence"),
    ("inspect", ["head", "--layer", "x", SENTENCE], "argument --layer: invalid int value: 'x'"),
    ("inspect", ["importance", SENTENCE, "--top-k", "3"], "unrecognized arguments: --top-k 3"),
    ("head_stats", [], "the following arguments are required: --src"),
    ("head_stats", ["--src", "s.de", "--batch-size", "many"], "argument --batch-size: invalid int value: 'many'"),
    ("head_importance", [*CORPUS, "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    ("head_importance", [*CORPUS, "--one-at-a-time=yes"], "ignored explicit argument 'yes'"),
    ("train", [], "the following arguments are required: --data-dir"),
    ("train", ["--data-dir", "d", "--positions", "rotary"], "argument --positions: invalid choice: 'rotary'"),
    ("train", ["--data-dir", "d", "--lr", "fast"], "argument --lr: invalid float value: 'fast'"),
    ("train_lengths", ["--data-dir"], "argument --data-dir: expected one argument"),
    ("train_lengths", ["extra"], "unrecognized arguments: extra"),
]


@pytest.mark.parametrize("tool, argv, says", BAD_OPTIONS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_OPTIONS)])
def test_a_bad_option_is_one_error_line_and_status_2(tool, argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        TOOLS[tool](argv)
    out, err = capsys.readouterr()
    assert_error_line(e.value.code, err, says)
    assert out == ""


def test_every_tool_is_covered_by_the_matrix():
    assert {t for t, _, _ in BAD_OPTIONS} == set(TOOLS)


@pytest.mark.parametrize("tool", TOOLS)
def test_help_still_prints_the_usage_and_exits_0(tool, capsys):
    with pytest.raises(SystemExit) as e:
        TOOLS[tool](["--help"])
    out, err = capsys.readouterr()
    assert e.value.code == 0 and out.startswith("usage: ") and err == ""


# usage errors past the parser: the project's errors, one line ------------------------------------
def tool_args(tool: str, tmp_path, ckpt: str, src, ref) -> list:
    """Arguments that make `tool` do its real work on the tiny checkpoint (a file written: under tmp_path)."""
    return {"translate": ["--checkpoint", ckpt, "--input", src],
            "evaluate": ["--checkpoint", ckpt, "--src", src, "--ref", ref],
            "inspect": ["lens", "--checkpoint", ckpt, SENTENCE],
            "head_stats": ["--checkpoint", ckpt, "--src", src, "--out", tmp_path / "hs.json", "--no-progress"],
            "head_importance": ["--checkpoint", ckpt, "--src", src, "--ref", ref, "--out", tmp_path / "hi.json",
                                "--resamples", "10"],
            "train": ["--data-dir", multi30k(tmp_path / "data"), "--out", tmp_path / "out",
                      "--work-dir", tmp_path / "w", "--epochs", "1", "--no-progress"]}[tool]


@pytest.mark.parametrize("tool", ["translate", "evaluate", "inspect", "head_stats", "head_importance", "train"])
@pytest.mark.parametrize("device, env, says", [
    ("tpu", {}, "unknown device 'tpu'"),
    ("bogus:7", {}, "unknown device 'bogus:7'"),
    ("", {}, "unknown device ''"),
    (None, {"TRANSFORMER_DEVICE": "CPU"}, "unknown device 'CPU' (from $TRANSFORMER_DEVICE)"),
    ("cuda", {}, "CUDA is not available here"),
])
def test_every_tool_refuses_a_bad_device_in_one_line(tool, device, env, says, call, monkeypatch, tiny_checkpoint,
                                                     corpus, tmp_path):
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    args = tool_args(tool, tmp_path, tiny_checkpoint, *corpus)
    status, out, err = call(TOOLS[tool], *args, *(["--device", device] if device is not None else []))
    assert_error_line(status, err, says, DEVICE_NAMES)
    assert out == "" and not {"hs.json", "hi.json", "out", "w"} & {p.name for p in tmp_path.iterdir()}


@pytest.mark.parametrize("tool", ["translate", "evaluate", "inspect", "head_stats", "head_importance"])
def test_every_tool_refuses_a_bad_checkpoint_in_one_line(tool, call, tiny_checkpoint, corpus, tmp_path):
    (tmp_path / "x.pt").write_bytes(b"not really")
    for bad, says in ((tmp_path / "missing", "does not exist"), (tmp_path / "x.pt", "pickle")):
        args = [str(bad) if a == tiny_checkpoint else a for a in tool_args(tool, tmp_path, tiny_checkpoint, *corpus)]
        status, out, err = call(TOOLS[tool], *args)
        assert_error_line(status, err, str(bad), says)
        assert out == "" and not (tmp_path / "hs.json").exists() and not (tmp_path / "hi.json").exists()


def test_train_and_train_lengths_name_the_missing_files(call, tmp_path, monkeypatch):
    monkeypatch.setattr(train_lengths, "OUT", tmp_path / "lengths.json")
    for main, args in ((train.main, ["--data-dir", tmp_path, "--out", tmp_path / "out"]),
                       (train_lengths.main, ["--data-dir", tmp_path])):
        status, out, err = call(main, *args)
        assert_error_line(status, err, "train.de.gz", "--data-dir")
        assert out == ""
    multi30k(tmp_path / "data", german_train_lines=2)
    status, _, err = call(train_lengths.main, "--data-dir", tmp_path / "data")
    assert_error_line(status, err, "has 2 lines but", "train.en.gz")
    assert not (tmp_path / "out").exists() and not (tmp_path / "lengths.json").exists()


def test_train_lengths_counts_positions_with_sos_and_eos(call, tmp_path, monkeypatch):
    monkeypatch.setattr(train_lengths, "OUT", tmp_path / "lengths.json")
    status, out, _ = call(train_lengths.main, "--data-dir", multi30k(tmp_path / "data"))
    assert status == 0 and out.startswith("source: longest 6 positions")
    written = json.loads((tmp_path / "lengths.json").read_text())
    assert written["n"] == 3 and written["source"] == {"6": 3} and written["target"] == {"6": 3}  # 4 tokens + 2


def test_translate_option_errors_past_the_parser(call, tiny_checkpoint, corpus):
    src, ref = corpus
    for args, says in ((["--beam", "0"], "--beam must be at least 1, got 0"),
                       (["--force", "x"], "--force 'x' is not STEP:TOKEN"),
                       (["--force", "²:dog"], "--force '²:dog' is not STEP:TOKEN"),  # a digit int() refuses
                       (["--force", "0:dog", "--beam", "2"], "leave out --beam"),
                       (["--mask-heads", "enc.0.9"], "no head 9"),
                       (["--reference", ref], "add --json"),
                       (["--json", "--reference", src.parent / "nope.en"], "does not exist")):
        status, out, err = call(translate.main, "--checkpoint", tiny_checkpoint, "--input", src, *args)
        assert_error_line(status, err, says)
        assert out == ""


def test_evaluate_and_head_importance_need_as_many_references_as_sentences(call, tiny_checkpoint, corpus, tmp_path):
    src, ref = corpus
    ref.write_text("A dog runs.\n", encoding="utf-8")
    args = ["--checkpoint", tiny_checkpoint, "--src", src, "--ref", ref]
    for main, extra in ((evaluate.main, []), (head_importance.main, ["--out", tmp_path / "hi.json"])):
        status, out, err = call(main, *args, *extra)
        assert_error_line(status, err, f"{src} has 2 lines but {ref} has 1")
        assert out == "" and not (tmp_path / "hi.json").exists()


def test_counts_below_one_name_the_option(call, tiny_checkpoint, corpus, tmp_path):
    src, ref = corpus
    out_file = ["--out", tmp_path / "o.json"]
    for main, args, says in ((evaluate.main, ["--ref", ref, "--beam", "0"], "--beam must be at least 1, got 0"),
                             (head_importance.main, ["--ref", ref, "--resamples", "0", *out_file],
                              "--resamples must be at least 1, got 0"),
                             (head_importance.main, ["--ref", ref, "--batch-rows", "-2", *out_file],
                              "--batch-rows must be at least 1, got -2"),
                             (head_stats.main, ["--batch-size", "0", *out_file], "--batch-size must be at least 1")):
        status, out, err = call(main, "--checkpoint", tiny_checkpoint, "--src", src, *args)
        assert_error_line(status, err, says)
        assert out == "" and not (tmp_path / "o.json").exists()


def test_an_os_error_is_one_line_too(call, tiny_checkpoint, corpus, tmp_path):
    """Writing the table onto a folder fails at the end, in the OS: still one line, status 2."""
    (tmp_path / "folder.json").mkdir()
    status, out, err = call(head_stats.main, "--checkpoint", tiny_checkpoint, "--src", corpus[0],
                            "--out", tmp_path / "folder.json", "--no-progress")
    assert_error_line(status, err, "Is a directory", "folder.json")
    assert out == ""


def test_cli_helpers_raise_the_projects_error(tmp_path, corpus):
    src, ref = corpus
    ref.write_text("one\n", encoding="utf-8")
    with pytest.raises(InputError, match="has 2 lines but"):
        cli.read_corpus(src, ref)
    with pytest.raises(InputError, match="does not exist"):
        cli.read_corpus(tmp_path / "nope.de", ref)
    with pytest.raises(InputError, match="the folder .* does not exist"):
        cli.output_file(tmp_path / "no" / "x.json", None, "x.json")
    assert cli.output_file(None, tmp_path / "model.safetensors", "x.json") == tmp_path / "x.json"
    with pytest.raises(InputError, match="Multi30k not found"):
        cli.read_split(None, "train")


# outputs, in this process ------------------------------------------------------------------------
def check_json_line(obj):
    """The --json invariants of docs/contract.md for one line."""
    S, T = len(obj["src_tokens"]), len(obj["tgt_tokens"])
    assert obj["src_tokens"][0] == "<sos>" and obj["src_tokens"][-1] == "<eos>"
    assert obj["tgt_tokens"][0] == "<sos>" and len(obj["steps"]) == T
    assert obj["tgt_tokens"][1:] == [s["token"] for s in obj["steps"][:-1]]
    enc, dec, cross = (np.array(obj[k]) for k in ("encoder_attentions", "decoder_attentions", "cross_attentions"))
    assert enc.shape[2:] == (S, S) and dec.shape[2:] == (T, T) and cross.shape[2:] == (T, S)
    for m in (enc, dec, cross):
        np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-5)
    assert (dec[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0).all()
    for s in obj["steps"]:
        assert 0 <= s["prob"] <= 1 and s["top"][0][1] >= s["prob"] - 1e-6
        assert all(isinstance(t, str) and 0 <= p <= 1 for t, p in s["top"])


def test_translate_reads_stdin_one_line_per_line(call, tiny_checkpoint):
    status, out, err = call(translate.main, "--checkpoint", tiny_checkpoint, stdin="Ein Hund.\n\nZwei Männer.")
    assert status == 0 and out.split("\n")[1:] == ["", "", ""]  # three lines, the last one unterminated
    assert err.splitlines() == ["line 2: the sentence is empty: type a German sentence; wrote an empty line"]
    status, out, err = call(translate.main, "--checkpoint", tiny_checkpoint,
                            stdin="ein hund\nzwei männer\n".encode("latin-1"))
    assert_error_line(status, err, "stdin line 2 is not UTF-8 text")
    assert out == ""


def test_translate_json_satisfies_the_invariants(call, tiny_checkpoint, tmp_path):
    f = tmp_path / "in.de.gz"
    with gzip.open(f, "wt", encoding="utf-8") as g:
        g.write("Ein Hund läuft im Park.\n\nZwei Männer.\n")
    status, out, err = call(translate.main, "--checkpoint", tiny_checkpoint, "--input", f, "--json")
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 3 and lines[1] == ""
    for line in (lines[0], lines[2]):
        check_json_line(json.loads(line))
    assert json.loads(lines[0])["source"] == "Ein Hund läuft im Park."
    first, last = (json.loads(lines[i])["provenance"] for i in (0, 2))
    assert first == last  # every line says what produced it
    weights = (Path(tiny_checkpoint) / "model.safetensors").read_bytes()
    assert first["checkpoint"] == {"name": "ckpt", "path": "ckpt", "sha256": hashlib.sha256(weights).hexdigest()}
    assert (first["heads_off"], first["force"], first["decoding"]["beam"]) == ("", {}, 1)


def test_evaluate_prints_one_json_line(call, tiny_checkpoint, corpus):
    src, ref = corpus
    status, out, err = call(evaluate.main, "--src", src, "--ref", ref, "--checkpoint", tiny_checkpoint)
    assert status == 0, err
    result = json.loads(out)
    assert result["n"] == 2 and 0 <= result["bleu"] <= 100 and result["loss"] > 0
    assert result["ppl"] == pytest.approx(np.exp(result["loss"]), rel=1e-3)
    assert (result["beam"], result["mask_heads"]) == (1, "")


def test_head_importance_writes_beside_the_checkpoint_by_default(call, tiny_checkpoint, corpus, tmp_path,
                                                                 monkeypatch):
    """Without --out: CHECKPOINT/head_importance.json, CHECKPOINT found as every tool finds it (here from
    $TRANSFORMER_CHECKPOINT), so the table lands beside the weights it describes."""
    ckpt = tmp_path / "mine"
    shutil.copytree(tiny_checkpoint, ckpt)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(ckpt))
    status, out, err = call(head_importance.main, "--src", corpus[0], "--ref", corpus[1], "--resamples", "10")
    assert status == 0, err
    assert json.loads(out)["out"] == str(ckpt / "head_importance.json")
    assert json.loads((ckpt / "head_importance.json").read_text())["data"]["n"] == 2


# one real process per tool (slow: a Python and torch start-up each) ------------------------------


# the shipped models (slow: the full checkpoint, the whole test set) ------------------------------
