"""Odd files, odd checkpoints and odd devices give one clear message (exit 2 for the tools), never a traceback,
and nothing written half-way; a file of any mix of lines gives exactly one output line per line."""

import json
import random
import subprocess
import sys

import pytest

from conftest import GERMAN, ROOT, assert_one_error_line
from model.errors import InputError
from model.translator import Translator
from unit.test_robustness import BROKEN, ODD_LINES, broken_checkpoint


@pytest.mark.slow
def test_translate_refuses_non_utf8_stdin_naming_the_line(tiny_checkpoint):
    """A real process: its stdin is bytes that Python decodes before the tool sees them."""
    r = subprocess.run([sys.executable, "-m", "model.translate", "--checkpoint", tiny_checkpoint],
                       input="ein hund\nzwei männer\n".encode("latin-1"), capture_output=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().splitlines() == ["error: stdin line 2 is not UTF-8 text (byte 0xe4 at byte 7): save the "
                                              "file as UTF-8"]


def mixed_lines(n: int, seed: int = 0) -> list[str]:
    """n lines: sentences of the tiny vocabulary (some unknown words), empty and blank lines, lines longer
    than the model's 24 positions, and the odd lines above."""
    rng = random.Random(seed)
    words = GERMAN[4:] + ["katze", "Straße", "日本語"]
    sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(150)]
    overlong = [" ".join(rng.choice(words) for _ in range(rng.randint(30, 120))) for _ in range(20)]
    pool = sentences * 6 + overlong * 3 + ["", " ", "\t"] * 20 + ODD_LINES * 3
    return [rng.choice(pool) for _ in range(n)]


@pytest.mark.slow
def test_a_10000_line_mixed_file_gives_one_line_per_line_in_order(tiny_checkpoint, tmp_path):
    lines = mixed_lines(10_000)
    src = tmp_path / "mixed.de"
    src.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    r = subprocess.run([sys.executable, "-m", "model.translate", "--input", str(src), "--checkpoint", tiny_checkpoint],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200)  # ~30 s alone; CI may be busy
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    got = r.stdout.split("\n")
    assert got[-1] == "" and len(got) - 1 == len(lines)  # one line per line, newline-terminated
    # The other route: each distinct line translated alone, in this process.
    translator = Translator.load(tiny_checkpoint, "cpu")
    expected, cut = {}, {}
    for line in set(lines):
        try:
            expected[line], cut[line] = translator.translate(line).text, translator.source_ids(line)[2]
        except InputError:
            expected[line], cut[line] = "", 0
    assert len(set(expected.values())) > 30  # the outputs differ enough for the order to show
    assert got[:-1] == [expected[line] for line in lines]
    notes = [note.split(": ", 1) for note in r.stderr.splitlines()]
    assert [head for head, what in notes if "wrote an empty line" in what] == [
        f"line {n}" for n, line in enumerate(lines, 1) if not line.strip()]
    assert [head for head, what in notes if "tokens cut" in what] == [
        f"line {n}" for n, line in enumerate(lines, 1) if cut[line]]
    assert sum(bool(cut[line]) for line in lines) > 100 and sum(not line.strip() for line in lines) > 100


@pytest.mark.slow
def test_broken_checkpoints_are_the_same_errors_under_python_O(tmp_path, tiny_model):
    """Asserts vanish under `python -O`; every check above must still hold, through the command line too."""
    for name in BROKEN:
        broken_checkpoint(tmp_path, tiny_model, name)
    script = (
        "import json, sys\n"
        "from model.checkpoint import load_checkpoint\n"
        "assert False, 'asserts are on'\n"  # proves -O is in force: this line must not fire
        "for name in sys.argv[2:]:\n"
        "    try:\n"
        "        load_checkpoint(sys.argv[1] + '/' + name)\n"
        "        print(json.dumps([name, 'loaded', '']))\n"
        "    except Exception as e:\n"
        "        print(json.dumps([name, type(e).__name__, str(e)]))\n")
    r = subprocess.run([sys.executable, "-O", "-c", script, str(tmp_path), *BROKEN], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    for name, kind, msg in map(json.loads, r.stdout.splitlines()):
        assert kind == "CheckpointError" and BROKEN[name][1] in msg, (name, kind, msg)
    for name in ("pickle", "huge_header", "config_list", "vocab_numbers"):
        r = subprocess.run([sys.executable, "-O", "-m", "model.translate", "--checkpoint", str(tmp_path / name)],
                           input="ein hund .\n", capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert_one_error_line(r, BROKEN[name][1])
        assert r.stdout == ""
    assert not (tmp_path / "unpickled").exists()
