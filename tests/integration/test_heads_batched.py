"""Per-row head masks are exact, so masked variants can share a batch: each row is what its own call gives."""

import json

import numpy as np
import pytest

from model.head_importance import head_importance_for_sentence, head_importance, head_importance_one_at_a_time, main
from unit.test_heads_batched import SENT, corpus, tr


def test_inspect_importance_cli_prints_the_sentences_table(capsys, shipped_models):
    from conftest import CHECKPOINT
    from model.inspect import main

    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    assert main(["importance", SENT, "--device", "cpu"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = head_importance_for_sentence(shipped_models(CHECKPOINT), SENT)
    for kind, table in want.items():
        assert np.allclose(out["loss_rise"][kind], table, atol=1e-6)
    assert out["output_tokens"][-1] == "<eos>"
    assert main(["importance", "   "]) == 2 and capsys.readouterr().err.startswith("error:")


def test_batched_table_equals_the_one_at_a_time_loop(tr, corpus):
    src, ref = corpus
    slow = head_importance_one_at_a_time(tr, src, ref, progress=False, resamples=100, seed=5)
    for rows in (7, 512):  # 7: batches split a sentence's variants and mix sentences
        assert head_importance(tr, src, ref, progress=False, resamples=100, seed=5, batch_rows=rows) == slow
    assert len({b for v in slow["kinds"].values() for r in v["bleu"] for b in r}) > 1  # heads differ


def test_cli_batched_and_one_at_a_time_write_the_same_table(tmp_path, tr, corpus, capsys):
    from model.checkpoint import save_checkpoint

    src, ref = corpus
    save_checkpoint(tr.model, tr.src_vocab, tr.tgt_vocab, tmp_path / "c")
    (tmp_path / "s").write_text("\n".join(src[:4]) + "\n")
    (tmp_path / "r").write_text("\n".join(ref[:4]) + "\n")
    args = ["--checkpoint", str(tmp_path / "c"), "--src", str(tmp_path / "s"), "--ref", str(tmp_path / "r"),
            "--resamples", "100", "--device", "cpu"]
    assert main([*args, "--out", str(tmp_path / "a.json"), "--batch-rows", "5"]) == 0
    assert main([*args, "--out", str(tmp_path / "b.json"), "--one-at-a-time"]) == 0
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    a["data"].pop("seconds"), b["data"].pop("seconds")
    assert a == b
    assert main([*args, "--batch-rows", "0"]) == 2 and "--batch-rows" in capsys.readouterr().err
