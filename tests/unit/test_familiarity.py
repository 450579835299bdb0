"""Familiarity (model/familiarity.py): the training index, the measures, the verdict, and the page's note."""

import numpy as np
import pytest

from model.familiarity import MEASURES, score, tail, thresholds_from


def test_tails_and_the_fisher_score_have_their_known_values():
    ref = [0.0, 0.0, 0.1, 0.2, 0.5]
    assert tail("unknown_share", 0.0, ref) == 1.0  # no unknown word: as familiar as can be
    assert tail("unknown_share", 0.2, ref) == pytest.approx(0.4)
    assert tail("unknown_share", 0.9, ref) == pytest.approx(1 / 6)  # beyond everything: 1/(N+1)
    assert tail("mean_logprob", -5.0, [-1.0, -0.5, -0.1]) == pytest.approx(1 / 4)  # lower is stranger
    assert tail("mean_logprob", -0.5, [-1.0, -0.5, -0.1]) == pytest.approx(2 / 3)
    assert score({m: 1.0 for m in MEASURES}) == 0.0
    assert score({"a": 0.1, "b": 0.5}) == pytest.approx(-2 * (np.log(0.1) + np.log(0.5)))
    rng = np.random.default_rng(0)
    values = {m: rng.random(2000).tolist() for m in MEASURES}
    t = thresholds_from(values)
    scores = [score({m: tail(m, values[m][i], values[m]) for m in MEASURES}) for i in range(2000)]
    assert np.mean(np.asarray(scores) > t["score"]["unusual"]) == pytest.approx(0.05, abs=0.002)
