"""Value zeroing (Mohebbi et al., EACL 2023): model/value_zeroing.py.

Second routes: a literal implementation (one unbatched forward of the whole model per block, layer and key, a
hand-written hook zeroing that one value, the cosine by hand in numpy); a model built so that a block's attention
is one-hot, where only the attended key may score; invariants on the tiny models and the shipped one.
"""

from unit.test_value_zeroing import check_invariants


def test_shipped_model_value_zeroing_keeps_its_invariants(translator):
    r = check_invariants(translator, "Zwei junge Männer spielen Fußball auf einer Wiese.")
    assert 0 < r["source"].sum() < len(r["source"])  # both the source and the prefix count
