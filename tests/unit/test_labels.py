"""Labels of the attention maps (viz/attention.py, viz/labels.py): every token has its tick label on both axes up
to the page's 50-token output limit."""

import numpy as np
import pytest

import viz
from model.translator import MAX_OUTPUT
from viz.attention import LABEL_PX


def rows_summing_to_one(Q, K, seed=0):
    w = np.random.default_rng(seed).random((Q, K))
    return w / w.sum(-1, keepdims=True)


@pytest.mark.parametrize("Q, K", [(37, 37), (30, 37), (50, 37), (50, 50), (12, 50)])
def test_every_token_is_labelled_on_both_axes_up_to_the_output_limit(Q, K):
    """A long sentence's map (37 source tokens, the learned model's 30-step translation of it) used to label every
    other token; now each has its label, on cells wide enough for one (LABEL_PX), the figure as wide as that takes."""
    keys, queries = [f"k{i}" for i in range(K)], [f"q{i}" for i in range(Q)]
    fig = viz.attention_heatmap(rows_summing_to_one(Q, K), queries, keys)
    assert list(fig.layout.xaxis.tickvals) == list(range(K)) and list(fig.layout.xaxis.ticktext) == keys
    assert list(fig.layout.yaxis.tickvals) == list(range(Q)) and list(fig.layout.yaxis.ticktext) == queries
    assert fig.layout.meta["cell"] >= LABEL_PX and fig.layout.width >= fig.layout.meta["cell"] * K
    assert max(Q, K) <= MAX_OUTPUT == 50  # the page's output limit
