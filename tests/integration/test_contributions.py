"""Does attention explain the translation? Norm-based attention, ALTI+ contributions and DecoderLens.

Second routes: the inside-a-head numbers (HeadTrace) for the norms; a literal implementation of ALTI's
per-block formulas (loops over queries, keys and heads in numpy, every vector recomputed from the model's
weights) and of the rollout (a product of augmented matrices) for the contributions; models built so that
the answer is known (cross-attention or self-attention silenced, a decoder that sees only <sos>); a model cut
after encoder layer k for DecoderLens; the command line against the library.
"""

import json

import numpy as np
import pytest

from conftest import CHECKPOINT, run
from unit.test_contributions import SENTENCE, check_against_literal, check_invariants, numpy


@pytest.mark.slow
def test_shipped_model_contributions_equal_the_literal_formulas(translator):
    check_against_literal(translator, "Zwei Männer spielen Fußball auf einer Wiese.")
    check_invariants(translator.contributions(SENTENCE))


@pytest.mark.slow
@pytest.mark.parametrize("folder", [CHECKPOINT, CHECKPOINT / "sinusoidal"])
def test_shipped_source_share_files_describe_their_model(folder, shipped_models):
    path = folder / "source_share.json"
    if not path.is_file():
        pytest.skip(f"no {path}")
    got = json.loads(path.read_text())
    tr = shipped_models(folder)
    assert got["checkpoint"]["sha256"] == tr.checkpoint_id["sha256"]
    q = got["per_step"]["quantiles"]
    assert 0 <= q["0"] <= q["0.05"] == got["low_share_threshold"]["per_step"] <= q["0.5"] <= q["1"] <= 1
    assert got["data"]["n"] == 1000 and got["data"]["src"] == "test_2016_flickr.de.gz"


@pytest.mark.slow
def test_cli_contributions_on_the_shipped_model(translator):
    r = run("model.inspect", "contributions", "--checkpoint", str(CHECKPOINT), "--device", "cpu", SENTENCE)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = translator.contributions(SENTENCE)
    assert got["src_tokens"] == want.src_tokens and got["tgt_tokens"] == want.tgt_tokens
    assert [s["token"] for s in got["steps"]] == want.output_tokens
    for t, step in enumerate(got["steps"]):
        assert abs(sum(step["source"]) + sum(step["prefix"]) - 1) < 1e-4
        assert abs(sum(step["source"]) - step["source_share"]) < 1e-4
        assert min(step["source"] + step["prefix"]) >= 0
        np.testing.assert_allclose(step["source"], want.source[t], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("folder", [CHECKPOINT, CHECKPOINT / "sinusoidal"])
def test_cli_decoderlens_last_layer_is_the_translation(folder):
    sentences = ["Zwei Männer spielen Fußball auf einer Wiese.", SENTENCE,
                 "Eine Frau mit einem roten Hut sitzt auf einer Bank und liest ein Buch."]
    translated = run("model.translate", "--checkpoint", str(folder), "--device", "cpu",
                     stdin="\n".join(sentences) + "\n")
    assert translated.returncode == 0, translated.stderr
    for sentence, line in zip(sentences, translated.stdout.splitlines(), strict=True):
        r = run("model.inspect", "decoderlens", "--checkpoint", str(folder), "--device", "cpu", sentence)
        assert r.returncode == 0, r.stderr
        layers = json.loads(r.stdout)["layers"]
        assert [layer["encoder_layer"] for layer in layers] == [1, 2, 3]
        assert layers[-1]["text"] == line and layers[-1]["tokens"] == line.split()
