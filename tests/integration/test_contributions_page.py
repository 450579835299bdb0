"""Does attention explain the translation? on the page (slow tier: AppTest on the shipped model): the
Contributions view, the norms switch of the attention views and "Inside a head", DecoderLens in Source flow.
Every number drawn is read back from the chart and compared with the Translator's own."""

import io

import numpy as np
import pandas as pd

from page.test_contributions_page import FLAGGED, shipped_threshold


def test_the_downloads_are_the_contributions(translator):
    from views.contributions import contributions_csv, share_csv

    c = translator.contributions(FLAGGED)
    threshold = shipped_threshold()
    shares = pd.read_csv(io.StringIO(share_csv(c, threshold)), keep_default_na=False,
                         dtype={"token_read": str, "token_chosen": str})
    np.testing.assert_allclose(shares["source_share"], c.source_share)
    np.testing.assert_allclose(shares["source_share"] + shares["prefix_share"], 1, atol=1e-9)
    assert list(shares["below_threshold"]) == [int(v < threshold) for v in c.source_share]
    cells = pd.read_csv(io.StringIO(contributions_csv(c)), keep_default_na=False, dtype={"key_token": str})
    T, S = c.source.shape
    assert len(cells) == T * S + T * (T + 1) // 2
    np.testing.assert_allclose(cells.groupby("step")["contribution"].sum(), 1, atol=1e-9)
    src = cells[cells.side == "source"]
    np.testing.assert_allclose(src["contribution"].to_numpy().reshape(T, S), c.source)
