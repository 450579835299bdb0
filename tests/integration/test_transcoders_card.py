"""The shipped transcoders' cards, measured again from the shipped dictionaries: per block on the validation set,
the fraction of variance unexplained, L0, the dense share and the dead share, the dead share also counted by hand
(a feature is dead when its largest activation over every validation token is 0); and the index's features are the
dictionaries' (one label and one count per feature). A checkpoint folder without transcoders is skipped by name."""

import numpy as np
import pytest
import torch

from conftest import CHECKPOINT
from model import transcoders as T

pytestmark = pytest.mark.slow

FOLDERS = [CHECKPOINT, CHECKPOINT / "sinusoidal"]


@pytest.fixture(scope="module", params=FOLDERS, ids=["learned", "sinusoidal"])
def shipped(request, shipped_models, data_dir):
    folder = request.param
    if not (folder / T.WEIGHTS).is_file():
        pytest.skip(f"{folder} has no transcoders (python -m model.transcoders train --checkpoint {folder}, "
                    "then index)")
    tr = shipped_models(folder)
    dicts, card = T.load(folder)
    vsrc, vtgt = T.training_pairs(tr, data_dir, "val")
    return folder, tr, dicts, card, T.collect(tr.model, vsrc, vtgt)


def test_the_card_is_measured_again_from_the_shipped_dictionaries(shipped):
    folder, tr, dicts, card, val = shipped
    assert card["blocks"] == T.blocks(tr.cfg) == list(dicts)
    for b, tc in dicts.items():
        want, got = card["measures"][b], T.block_measures(tc, val.X[b], val.Y[b])
        assert got["tokens"] == want["tokens"], b
        # each card is measured on the dictionaries as stored (int8, the recipe's storage), so measured again it
        # agrees to the rounding of float sums (a card measured as trained, float32, against a float16 file: within
        # 3e-6 in fvu, 4e-4 in L0 and one dead feature, these bounds)
        assert got["fvu"] == pytest.approx(want["fvu"], rel=1e-4), b
        assert got["l0"] == pytest.approx(want["l0"], abs=2e-3), b
        assert abs(got["dead"] - want["dead"]) <= 2 / tc.width, b
        assert abs(got["dense"] - want["dense"]) <= 2 / tc.width, b
        with torch.no_grad():  # by hand: the largest activation of each feature over every validation token
            top = torch.stack([tc.encode(x.float()).amax(0) for x in val.X[b].split(4096)]).amax(0)
        assert got["dead"] == float((top == 0).sum()) / tc.width, b
        assert card["recipe"]["k"] == tc.k and tc.width == card["recipe"]["width"]


def test_the_index_describes_every_feature_of_the_dictionaries(shipped):
    """One label, density and peak per feature; each block's densest feature's strongest context, its sentence
    forced through the model again, has that activation at that position."""
    folder, tr, dicts, card, val = shipped
    index = T.read_index(folder)
    for b, tc in dicts.items():
        assert len(index["labels"][b]) == len(index[f"{b}.density"]) == len(index[f"{b}.peak"]) == tc.width, b
        f = int(np.argmax(index[f"{b}.density"]))
        s, p = int(index[f"{b}.top_sent"][f, 0]), int(index[f"{b}.top_pos"][f, 0])
        v = float(index[f"{b}.top_val"][f, 0])
        one = T.collect(tr.model, [T._sentence(index, "src", s)], [T._sentence(index, "tgt", s)])
        a = tc.encode(one.X[b][p:p + 1].float())[0, f]
        assert float(a) == pytest.approx(v, rel=1e-2, abs=1e-3), b
        assert v == pytest.approx(float(index[f"{b}.peak"][f]), rel=1e-6), b  # the strongest context is the peak
        page = T.feature_page(tr, index, f"{b}.{f}", dicts)
        assert page["feature"] == f"{b}.{f}" and page["contexts"][0]["position"] == p, b
