"""The training replay (model/replay.py, views/training.py): a tiny run's snapshots replayed and shipped, checked
against the weights they were taken from; the shipped replay against the model it replays; the view by link."""


import numpy as np
import pytest

from conftest import assert_error_line
from model import replay


def test_quantization_error_is_at_most_half_a_level():
    w = np.random.default_rng(0).random((3, 8, 7, 9)).astype(np.float32)
    q = replay.quantize(w)
    assert q.dtype == np.uint8 and np.abs(replay.dequantize(q) - w).max() <= 0.5 / replay.LEVELS + 1e-7
    assert replay.quantize(np.array([0.0, 1.0])).tolist() == [0, 255]


def test_replay_errors_are_one_line(tmp_path, call):
    status, _, err = call(replay.main, "--snapshots", tmp_path, "Ein Satz.")
    assert_error_line(status, err, "not a folder of training snapshots")
    status, _, err = call(replay.main, "--snapshots", tmp_path)
    assert_error_line(status, err, "SENTENCE or --ship")


# the shipped replay ---------------------------------------------------------------------------------------------


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
