"""The Attributions view opens on the method the shipped faithfulness table trusts (views/attributions.py
first_method), read from the table: faithful (comprehensiveness above the random orders', sufficiency below) and
plausible (AER below a diagonal alignment's), as model/faithfulness.py's verdict judges; a stated fallback without
a table."""

from dataclasses import replace

import pytest

import views.attributions as attributions
from model.faithfulness import Interval, RandomRow, Row, Side, Table

GOOD = Row(Interval(0.4, 0.38, 0.42, 10), Interval(0.0, -0.01, 0.01, 10), Interval(1, 1, 1, 10), aer=0.3)
UNFAITHFUL = Row(Interval(0.2, 0.18, 0.22, 10), Interval(0.2, 0.18, 0.22, 10), Interval(0, 0, 0, 10), aer=0.3)
RANDOM = RandomRow(Interval(0.22, 0.21, 0.23, 10), Interval(0.15, 0.14, 0.16, 10), (0.1, 0.3), 20)


def table(rows: dict) -> Table:
    side = Side(rows, RANDOM)
    return Table(10, 3, 20, 1000, "unk", "p", {}, {"diagonal": {"aer": 0.42}}, side, side, {}, {},
                 data={"src": "test_2016_flickr.de.gz"})


@pytest.mark.parametrize("rows, first", [
    ({"input_x_gradient": UNFAITHFUL, "gradient": GOOD, "leave_one_out": UNFAITHFUL}, "gradient"),
    ({"input_x_gradient": GOOD, "gradient": replace(GOOD, aer=0.5)}, "input_x_gradient"),  # gradient: not plausible
    ({"ALTI+": GOOD, "gradient": UNFAITHFUL}, attributions.DEFAULT_METHOD),  # ALTI+ is not on offer in this view
])
def test_the_first_method_is_read_from_the_faithfulness_table(monkeypatch, rows, first):
    monkeypatch.setattr(attributions, "faithfulness_table", lambda checkpoint: table(rows))
    method, why = attributions.first_method(None)
    assert method == first and method in attributions.METHODS
    if first in rows:
        assert "finds it faithful and plausible on 10 sentences of test_2016_flickr" in why, why
    else:
        assert "finds none of these methods both faithful and plausible" in why, why


def test_without_a_table_the_first_method_is_the_stated_fallback(monkeypatch):
    monkeypatch.setattr(attributions, "faithfulness_table", lambda checkpoint: None)
    method, why = attributions.first_method(None)
    assert method == attributions.DEFAULT_METHOD != "input_x_gradient"
    assert why.startswith("No faithfulness table ships with this model, so the view opens on leave-one-out"), why
