"""The training replay (model/replay.py, views/training.py): a tiny run's snapshots replayed and shipped, checked
against the weights they were taken from; the shipped replay against the model it replays; the view by link."""

import json

import numpy as np
import pytest
from safetensors.torch import load_file

from conftest import CHECKPOINT, TRAINING_PAIRS, write_multi30k
from model import replay, train as train_cli
from model.translator import Translator


REPLAY = CHECKPOINT / "replay"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A 2-epoch run on 16 pairs with snapshots at steps 0 and 1 and the ends of both epochs."""
    root = tmp_path_factory.mktemp("replay")
    data = write_multi30k(root / "data", TRAINING_PAIRS[:4] * 4)
    status = train_cli.main([str(a) for a in ("--data-dir", data, "--out", root / "ckpt", "--work-dir", root / "work",
                                              "--batch-size", "8", "--epochs", "2", "--no-progress", "--seed", "5",
                                              "--snapshots", "0,1,e1,last")])
    assert status == 0
    return root


def test_ship_writes_every_point_and_picks_up_where_it_left_off(tiny_run, tmp_path):
    out = tmp_path / "replay"
    m = replay.ship(tiny_run / "work/snapshots", out, tiny_run / "data")
    assert [p["step"] for p in m["snapshots"]] == [0, 1, 2, 4]
    examples = m["examples"]
    cfg = json.loads((tiny_run / "work/snapshots/config.json").read_text())
    for p in m["snapshots"]:
        assert set(p) >= {"val_loss", "val_bleu", "source_share", "cross_aer", "layer_aer", "head_stats", "examples"}
        assert np.shape(p["cross_aer"]) == (cfg["n_dec_layers"], cfg["n_heads"])
        assert np.shape(p["head_stats"]["entropy"]["enc"]) == (cfg["n_enc_layers"], cfg["n_heads"])
        with np.load(out / p["file"]) as z:
            assert sorted(z.files) == sorted(f"ex{i}_{k}" for i in range(len(examples)) for k in ("enc", "dec", "cross"))
            for i, ex in enumerate(p["examples"]):
                S, T = len(ex["src_tokens"]), len(ex["tgt_tokens"])
                assert z[f"ex{i}_cross"].shape[-2:] == (T, S) and z[f"ex{i}_enc"].shape[-2:] == (S, S)
                rows = replay.dequantize(z[f"ex{i}_cross"]).sum(-1)  # each weight off by at most half a level
                assert np.abs(rows - 1).max() <= S * 0.5 / replay.LEVELS + 1e-5
    assert m["snapshots"][-1]["val_loss"] < m["snapshots"][0]["val_loss"]  # it learned
    first = (out / "points/step000000.json").stat().st_mtime_ns
    (out / "points/step000004.json").unlink()
    again = replay.ship(tiny_run / "work/snapshots", out, tiny_run / "data")
    assert (out / "points/step000000.json").stat().st_mtime_ns == first  # kept, not recomputed
    assert again["snapshots"][-1]["val_loss"] == m["snapshots"][-1]["val_loss"]  # recomputed, the same


def shipped():
    if not (REPLAY / "replay.json").is_file():
        pytest.skip("no shipped replay")
    return json.loads((REPLAY / "replay.json").read_text())


def test_the_shipped_replay_is_complete_and_compact():
    m = shipped()
    points = m["snapshots"]
    assert len(points) >= 14 and points[0]["step"] == 0
    assert [p["step"] for p in points] == sorted({p["step"] for p in points})
    assert points[-1]["val_loss"] < points[0]["val_loss"] and points[-1]["val_bleu"] > 30
    size = sum(f.stat().st_size for f in REPLAY.rglob("*") if f.is_file())
    assert size < 8e6, size  # a few MB, not weights


@pytest.mark.slow
def test_the_shipped_replays_last_point_against_the_model_it_replays(shipped_models):
    """The run repeats the recipe of checkpoints/<replays> but does not end at the same weights (the note says by
    how much): what the manifest says of the two on the examples is recomputed here from the shipped model and the
    replay's own last point."""
    m = shipped()
    vs = m["last_vs_shipped"]
    assert m["replays"] == "sinusoidal" and vs["checkpoint"] == "sinusoidal"
    last = m["snapshots"][-1]
    assert last["epoch_end"] == max(p["epoch_end"] or 0 for p in m["snapshots"])  # the end of the run
    translator = shipped_models(CHECKPOINT / m["replays"])
    gaps = []
    with np.load(REPLAY / last["file"]) as z:
        for i, sentence in enumerate(m["examples"]):
            r = translator.translate(sentence)
            assert vs["shipped_steps"][i] == [s.token for s in r.steps], sentence
            if vs["shipped_steps"][i] == last["examples"][i]["steps"]:
                gaps.append(np.abs(replay.dequantize(z[f"ex{i}_cross"]) - r.cross_attentions).mean())
    assert vs["same_translations"] == len(gaps)
    assert vs["same_weights"] is (vs["max_weight_difference"] == 0)
    if gaps:
        assert vs["cross_map_mean_abs_difference"] == pytest.approx(np.mean(gaps), abs=1e-5)


def test_a_sentence_replayed_at_every_snapshot_equals_each_snapshots_own_model(tiny_run, call, tmp_path):
    folder = tiny_run / "work/snapshots"
    rows = replay.snapshot_rows(folder)
    assert [r["step"] for r in rows] == [0, 1, 2, 4]
    out = tmp_path / "r.json"
    status, _, err = call(replay.main, "--snapshots", folder, "Ein Hund liest im Park.", "--out", out,
                          "--no-progress")
    assert status == 0, err
    points = json.loads(out.read_text())["snapshots"]
    assert [p["step"] for p in points] == [0, 1, 2, 4]
    # the last point is the run's last epoch: its own Translator, loaded another way, gives the same
    from model.checkpoint import load_checkpoint

    model, sv, tv = load_checkpoint(tiny_run / "ckpt")  # float16 on disk: use the epoch snapshot's float32
    model.load_state_dict(load_file(tiny_run / "work/epoch02.safetensors"))
    want = Translator(model, sv, tv).translate("Ein Hund liest im Park.")
    assert points[-1]["translation"] == want.text and points[-1]["steps"] == [s.token for s in want.steps]
    for key, maps in (("enc", want.encoder_attentions), ("dec", want.decoder_attentions),
                      ("cross", want.cross_attentions)):
        np.testing.assert_allclose(points[-1]["maps"][key], maps, atol=0.5 / replay.LEVELS + 1e-4)
    # step 0 is the initialisation: different maps from the end
    assert not np.allclose(points[0]["maps"]["enc"], points[-1]["maps"]["enc"], atol=0.01)
