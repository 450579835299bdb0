"""The training replay (model/replay.py, views/training.py): a tiny run's snapshots replayed and shipped, checked
against the weights they were taken from; the shipped replay against the model it replays; the view by link."""

import json

import numpy as np
import pytest
from safetensors.torch import load_file

from conftest import (CHECKPOINT, TRAINING_PAIRS, assert_error_line, charts, from_url, markdown, shown,
                      write_multi30k)
from model import replay
from model import train as train_cli
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


def test_quantization_error_is_at_most_half_a_level():
    w = np.random.default_rng(0).random((3, 8, 7, 9)).astype(np.float32)
    q = replay.quantize(w)
    assert q.dtype == np.uint8 and np.abs(replay.dequantize(q) - w).max() <= 0.5 / replay.LEVELS + 1e-7
    assert replay.quantize(np.array([0.0, 1.0])).tolist() == [0, 255]


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


def test_replay_errors_are_one_line(tmp_path, call):
    status, _, err = call(replay.main, "--snapshots", tmp_path, "Ein Satz.")
    assert_error_line(status, err, "not a folder of training snapshots")
    status, _, err = call(replay.main, "--snapshots", tmp_path)
    assert_error_line(status, err, "SENTENCE or --ship")


# the shipped replay ---------------------------------------------------------------------------------------------
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
def test_the_shipped_replays_last_point_against_the_model_it_replays():
    """The run repeats the recipe of checkpoints/<replays> but does not end at the same weights (the note says by
    how much): what the manifest says of the two on the examples is recomputed here from the shipped model and the
    replay's own last point."""
    m = shipped()
    vs = m["last_vs_shipped"]
    assert m["replays"] == "sinusoidal" and vs["checkpoint"] == "sinusoidal"
    last = m["snapshots"][-1]
    assert last["epoch_end"] == max(p["epoch_end"] or 0 for p in m["snapshots"])  # the end of the run
    translator = Translator.load(CHECKPOINT / m["replays"])
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


@pytest.mark.slow
def test_the_training_view_by_link(monkeypatch):
    m = shipped()
    p = m["snapshots"][3]
    at = from_url(monkeypatch, s=m["examples"][0], view="training", at=str(p["step"]), kind="enc", layer="2",
                  head="3")
    assert not at.exception and not at.warning
    assert at.select_slider(key="training_at").value == p["step"]
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert any(t.replace("<br>", " ").startswith(f"Encoder self-attention, layer 2, head 3, step {p['step']:,}")
               for t in titles), titles  # wrapped to the map's width (tests/test_smaller_things.py)
    words = [t for t in p["examples"][0]["steps"] if t != "<eos>"]
    assert all(w in markdown(at) for w in words[:3])
    assert dict(at.query_params)["at"] == str(p["step"])
    at = from_url(monkeypatch, s="Ein Satz, der kein Beispiel ist.", view="training", at="12345")
    assert "not a snapshot of the replay" in shown(at.warning[0].value)
    assert any("covers the built-in examples" in i.value for i in at.info)


def test_the_figures_mark_the_current_snapshot():
    import viz

    fig = viz.training_curve(["0", "25", "50"], [3.0, None, 1.0], 2, "validation loss")
    assert list(fig.data[1].x) == [2] and list(fig.data[1].y) == [1.0]
    values = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)  # 2 snapshots, 3 layers, 4 heads
    fig = viz.heads_over_time(values, ["0", "25"], 1, value="AER")
    z = np.asarray(fig.data[0].z)
    assert z.shape == (12, 2) and z[4 + 2, 1] == values[1, 1, 2]  # row: layer 2 head 3; column: the snapshot
    assert fig.layout.shapes[0].x0 == 0.5 and fig.layout.shapes[0].x1 == 1.5
    with pytest.raises(ValueError, match="snapshots, layers, heads"):
        viz.heads_over_time(values[0], ["0"], 0)
