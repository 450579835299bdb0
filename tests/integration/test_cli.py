"""The command-line contracts of docs/contract.md.

Every tool's main(argv) is called in this process on the tiny checkpoint of conftest.py (fast):
a matrix of bad options and arguments, each one `error: ...` line and exit status 2, and the
outputs. One real `python -m` run per tool proves the wiring (model/cli.py's `run`: exit status,
closed pipe); those, and the shipped models over the whole test set, are marked slow.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import CHECKPOINT, ROOT, assert_one_error_line, run
from model import evaluate, head_importance, head_stats, inspect, translate
from model.device import DEVICE_NAMES
from unit.test_cli import SENTENCE, check_json_line, corpus


@pytest.mark.slow
def test_translate_writes_one_line_per_input_line(tiny_checkpoint):
    inp = "Ein Hund läuft.\n\n   \nZwei Männer <b>x</b> 😀\n" + "hund " * 150 + "\n"
    r = run("model.translate", "--checkpoint", tiny_checkpoint, stdin=inp)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert len(lines) == 6 and lines[-1] == ""  # five lines, each ended by a newline
    assert lines[1] == lines[2] == ""
    assert "line 2: the sentence is empty" in r.stderr and "line 3" in r.stderr
    assert "line 5: 128 tokens cut: the model has 24 positions" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_evaluate_exits_2_in_one_line(tiny_checkpoint, corpus):
    src, ref = corpus
    ref.write_text("A dog runs.\n", encoding="utf-8")
    r = run("model.evaluate", "--src", str(src), "--ref", str(ref), "--checkpoint", tiny_checkpoint)
    assert_one_error_line(r, "has 2 lines")
    assert r.stdout == ""


@pytest.mark.slow
def test_inspect_stops_quietly_when_the_reader_has_gone(tiny_checkpoint):
    """`... | head`: stdout closed before the tool writes. Exit 0 and nothing on stderr, not a BrokenPipeError."""
    read, write = os.pipe()
    os.close(read)
    try:
        r = subprocess.run([sys.executable, "-m", "model.inspect", "lens", "--checkpoint", tiny_checkpoint, SENTENCE],
                           stdout=write, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=300)
    finally:
        os.close(write)
    assert r.returncode == 0 and r.stderr == ""


@pytest.mark.slow
def test_head_stats_runs_as_a_module(tiny_checkpoint, corpus, tmp_path):
    r = run("model.head_stats", "--checkpoint", tiny_checkpoint, "--src", str(corpus[0]), "--out",
            str(tmp_path / "stats.json"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["n"] == 2 == json.loads((tmp_path / "stats.json").read_text())["n"]


@pytest.mark.slow
def test_head_importance_refuses_a_bad_device_as_a_module(tiny_checkpoint, corpus, tmp_path):
    r = run("model.head_importance", "--src", str(corpus[0]), "--ref", str(corpus[1]), "--checkpoint",
            tiny_checkpoint, "--out", str(tmp_path / "hi.json"), "--device", "tpu")
    assert_one_error_line(r, "unknown device 'tpu'", DEVICE_NAMES)
    assert not (tmp_path / "hi.json").exists()


@pytest.mark.slow
def test_train_refuses_a_bad_option_as_a_module(tmp_path):
    r = run("model.train", "--data-dir", str(tmp_path), "--positions", "rotary")
    assert_one_error_line(r, "invalid choice: 'rotary'")
    assert r.stdout == ""


@pytest.mark.slow
def test_train_lengths_without_data_says_which_files(tmp_path):
    r = run("model.train_lengths", "--data-dir", str(tmp_path))
    assert_one_error_line(r, "train.de.gz", "--data-dir")


def shipped():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")


KNOWN = [("Ein Mann fährt Fahrrad.", [{"man"}, {"bike", "bicycle"}]),
         ("Zwei Hunde spielen im Schnee.", [{"two"}, {"dogs"}, {"snow"}]),
         ("Eine Frau singt auf einer Bühne.", [{"woman"}, {"sings", "singing"}, {"stage"}])]


@pytest.mark.slow
def test_shipped_model_translates_known_sentences(call, tmp_path):
    """Each group is a set of acceptable words; each translation must contain one of each."""
    shipped()
    (tmp_path / "in.de").write_text("".join(f"{german}\n" for german, _ in KNOWN), encoding="utf-8")
    status, out, err = call(translate.main, "--input", tmp_path / "in.de")
    assert status == 0, err
    for (german, groups), line in zip(KNOWN, out.splitlines(), strict=True):
        words = line.split()
        assert all(group & set(words) for group in groups), (german, line)
        assert words[-1] == "."


@pytest.mark.slow
def test_shipped_model_meets_the_quality_bar(call, data_dir):
    """The bars on test2016, greedy: BLEU >= 36.5 and perplexity <= 5.40, within the published runs' spread
    (docs/contract.md, Metrics)."""
    shipped()
    status, out, err = call(evaluate.main, "--src", data_dir / "test_2016_flickr.de.gz",
                            "--ref", data_dir / "test_2016_flickr.en.gz")
    assert status == 0, err
    result = json.loads(out)
    assert result["n"] == 1000 and result["beam"] == 1
    assert result["ppl"] == pytest.approx(np.exp(result["loss"]), rel=1e-3)
    assert result["bleu"] >= 36.5 and result["ppl"] <= 5.40, result


@pytest.mark.slow
def test_the_sinusoidal_model_meets_its_bar_through_every_cli(call, data_dir, tmp_path, shipped_models):
    """The same architecture less the 2 x 100 x 256 learned positions (the paper's fixed sinusoids instead),
    greedy test BLEU >= 36.5, and every corpus tool takes it."""
    sin = CHECKPOINT / "sinusoidal"
    if not (sin / "model.safetensors").is_file():
        pytest.skip("no checkpoints/sinusoidal")
    from model.data import read_lines

    tr, learned = shipped_models(sin), shipped_models(CHECKPOINT)
    assert tr.cfg.positions == "sinusoidal" and learned.cfg.positions == "learned"
    assert tr.model.n_params() == learned.model.n_params() - 2 * 100 * 256 == 8_987_141
    src, ref = data_dir / "test_2016_flickr.de.gz", data_dir / "test_2016_flickr.en.gz"
    status, out, err = call(evaluate.main, "--checkpoint", sin, "--src", src, "--ref", ref)
    assert status == 0, err
    result = json.loads(out)
    assert result["n"] == 1000 and result["bleu"] >= 36.5, result
    sentence = "Ein kleines Mädchen klettert auf einen Baum."
    status, out, _ = call(translate.main, "--checkpoint", sin, stdin=sentence + "\n")
    assert status == 0 and out.strip() == tr.translate(sentence).text
    status, _, err = call(inspect.main, "lens", "--checkpoint", sin, sentence)
    assert status == 0, err
    few = tmp_path / "few.de"
    few.write_text("\n".join(read_lines(src)[:12]) + "\n", encoding="utf-8")
    status, _, _ = call(head_stats.main, "--checkpoint", sin, "--src", few, "--out", tmp_path / "stats.json",
                        "--no-progress")
    assert status == 0 and json.loads((tmp_path / "stats.json").read_text())["n"] == 12
    status, _, _ = call(head_importance.main, "--checkpoint", sin, "--src", src, "--ref", ref, "--limit", "4",
                        "--resamples", "10", "--out", tmp_path / "imp.json")
    assert status == 0 and json.loads((tmp_path / "imp.json").read_text())["data"]["n"] == 4


@pytest.mark.slow
def test_shipped_model_json_and_beam(call):
    shipped()
    sentence = "Ein kleines Mädchen klettert auf einen Baum.\n"
    status, out, err = call(translate.main, "--json", stdin=sentence)
    assert status == 0, err
    obj = json.loads(out)
    check_json_line(obj)
    assert np.array(obj["encoder_attentions"]).shape[:2] == (3, 8)
    status, out, _ = call(translate.main, "--beam", "4", stdin=sentence + "\n")
    assert status == 0 and len(out.split("\n")) == 3
    assert {"girl", "tree"} <= set(out.split())
