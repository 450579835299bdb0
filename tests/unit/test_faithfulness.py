"""Faithfulness (model/faithfulness.py): closed forms on a model that adds a known amount per token, the facts that
follow from removal by <unk> (leave-one-out is best at k = 1, its reverse worst), the random baseline against the
exact expectation over every subset, literal second routes for Kendall's tau and for every p under removal, and the
shipped tables reproduced by their command."""

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from model import faithfulness as F


def literal_tau_b(a, b) -> float:
    """Kendall's tau-b as its definition reads: (concordant - discordant) / sqrt((n0 - ties_a) (n0 - ties_b))."""
    conc = disc = ties_a = ties_b = 0
    pairs = list(itertools.combinations(range(len(a)), 2))
    for i, j in pairs:
        x, y = a[i] - a[j], b[i] - b[j]
        ties_a += x == 0
        ties_b += y == 0
        if x * y > 0:
            conc += 1
        elif x * y < 0:
            disc += 1
    return (conc - disc) / math.sqrt((len(pairs) - ties_a) * (len(pairs) - ties_b))


def test_kendall_tau_known_answers_and_literal_route():
    assert F.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert F.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert F.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert math.isnan(F.kendall_tau([1.0], [2.0]))  # one token: no pair
    assert math.isnan(F.kendall_tau([1, 1, 1], [1, 2, 3]))  # a constant ranking has no order
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 12))
        a, b = rng.integers(0, 4, n).astype(float), rng.normal(size=n)  # ties in a
        if len(set(a)) > 1:
            assert F.kendall_tau(a, b) == pytest.approx(literal_tau_b(a, b), abs=1e-12)


def additive(base: float, amounts: np.ndarray):
    """p of a model where every token kept adds a known amount: p(removed) = base + sum of the kept amounts."""
    return lambda removed: base + amounts.sum() - amounts[list(removed)].sum()


def test_curves_equal_their_closed_form_on_an_additive_model():
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 9):
        amounts = rng.uniform(0, 0.1, n)
        p_of = additive(0.05, amounts)
        scores = {"exact": amounts, "noisy": amounts + rng.normal(0, 0.03, n), "reverse": -amounts}
        m = F.step_measures(scores, p_of, F.random_orders(n, 5, 0), reference="exact")
        for name, s in scores.items():
            order = np.argsort(-s, kind="stable")
            removed = np.concatenate([[0], np.cumsum(amounts[order])])  # sum of the first k ranked amounts
            p = 0.05 + amounts.sum()
            np.testing.assert_allclose(m.methods[name].curves.deletion, p - removed, atol=1e-12)
            np.testing.assert_allclose(m.methods[name].curves.kept, 0.05 + removed, atol=1e-12)
            assert m.methods[name].comprehensiveness == pytest.approx(removed.mean(), abs=1e-12)
            assert m.methods[name].sufficiency == pytest.approx(amounts.sum() - removed.mean(), abs=1e-12)
        # the true amounts rank best: no order removes more at every k
        ranked = m.methods
        assert ranked["exact"].comprehensiveness >= max(ranked[k].comprehensiveness for k in scores) - 1e-12
        assert ranked["reverse"].comprehensiveness <= min(ranked[k].comprehensiveness for k in scores) + 1e-12
        if n > 1:
            assert ranked["exact"].tau == 1.0 and ranked["reverse"].tau == -1.0


def test_sufficiency_of_an_order_is_comprehensiveness_of_its_reverse():
    rng = np.random.default_rng(2)
    values = {}
    p_of = lambda removed: values.setdefault(removed, rng.uniform())  # noqa: E731 -- any p of any removal
    for n in (1, 3, 7):
        order = rng.permutation(n)
        a, b = F.curves(order, p_of), F.curves(order[::-1], p_of)
        assert a.sufficiency == pytest.approx(b.comprehensiveness, abs=1e-12)
        np.testing.assert_array_equal(a.kept, b.deletion[::-1])


def test_interval_is_a_percentile_bootstrap_of_the_mean():
    assert F.interval([0.3, 0.3, 0.3]) == F.Interval(mean=0.3, low=0.3, high=0.3, n=3)
    assert F.interval([np.nan]) == F.Interval(None, None, None, 0)
    values = np.random.default_rng(3).normal(1.0, 1.0, 400)
    i = F.interval(np.append(values, np.nan))  # NaN (a step with no token on that side) is left out
    assert i.n == 400 and i.low < i.mean < i.high
    half = 1.96 * values.std() / math.sqrt(len(values))  # the normal interval the bootstrap approximates
    assert i.high - i.low == pytest.approx(2 * half, rel=0.15)


def test_sample_steps_are_the_same_in_any_slice():
    assert F.sample_steps(2, 7) == [0, 1]  # fewer steps than STEPS: all of them
    drawn = [F.sample_steps(12, line) for line in range(30)]
    assert all(len(d) == F.STEPS and d == sorted(set(d)) and max(d) < 12 for d in drawn)
    assert drawn == [F.sample_steps(12, line) for line in range(30)] and len({tuple(d) for d in drawn}) > 5


def table_of(methods: dict, random: tuple, diagonal=0.42) -> F.Table:
    ci = lambda m, lo, hi: F.Interval(m, lo, hi, 500)  # noqa: E731
    tau = ci(None, None, None)
    source = F.Side({k: F.Row(ci(*c), ci(*s), tau, aer) for k, (c, s, aer) in methods.items()},
                    F.RandomRow(ci(*random), ci(*random), (random[1], random[2]), 20))
    return F.Table(n_sentences=500, steps_per_sentence=3, orders=20, bootstrap=1000, removal="<unk>",
                   target="greedy output", names={"leave_one_out": "leave-one-out"},
                   baselines={"diagonal": {"aer": diagonal}}, source=source, prefix=F.Side({}, source.random),
                   agreement={"methods": [], "tau": []}, per_sentence={})


def test_verdict_names_the_method_both_faithful_and_plausible_and_those_neither():
    methods = {"leave_one_out": ((0.4, 0.38, 0.42), (0.0, -0.01, 0.01), 0.33),
               "attention L3": ((0.35, 0.33, 0.37), (0.03, 0.02, 0.04), 0.36),
               "value_zeroing": ((0.2, 0.18, 0.25), (0.2, 0.18, 0.22), 0.86),
               "rollout": ((0.36, 0.34, 0.38), (0.04, 0.03, 0.05), None)}
    v = F.verdict(table_of(methods, random=(0.21, 0.2, 0.22)))
    assert v.startswith("On 500 test sentences, leave-one-out is both faithful and plausible")  # the larger margin
    assert "0.40 on average (random orders: 0.21)" in v and "error rate of 0.33 (a diagonal alignment: 0.42)" in v
    assert v.endswith("value_zeroing is neither.")  # rollout has no AER: not judged "neither"
    for m in ("leave_one_out", "attention L3"):  # worse than the diagonal
        methods[m] = (*methods[m][:2], 0.5)
    assert F.verdict(table_of(methods, random=(0.21, 0.2, 0.22))).startswith(
        "On 500 test sentences, no explanation is both faithful and plausible.")


def test_a_table_goes_to_json_and_back_unchanged():
    """Table.to_json writes the shipped file's layout (no AER on the prefix side) and from_json reads it back."""
    t = table_of({"leave_one_out": ((0.4, 0.38, 0.42), (0.0, -0.01, 0.01), 0.33),
                  "rollout": ((0.36, 0.34, 0.38), (0.04, 0.03, 0.05), None)}, random=(0.21, 0.2, 0.22))
    t = dataclasses.replace(t, prefix=F.Side({"gradient": t.source.rows["leave_one_out"]}, t.source.random),
                            verdict=F.verdict(t))
    d = t.to_json()
    assert d["source"]["rollout"]["aer"] is None and "aer" not in d["prefix"]["gradient"]
    assert d["source"]["random"] == {"comprehensiveness": {"mean": 0.21, "low": 0.2, "high": 0.22, "n": 500},
                                     "sufficiency": {"mean": 0.21, "low": 0.2, "high": 0.22, "n": 500},
                                     "spread": [0.2, 0.22], "orders": 20}
    assert list(d)[:8] == ["n_sentences", "steps_per_sentence", "orders", "bootstrap", "removal", "target", "names",
                           "baselines"] and list(d)[8:10] == ["source", "prefix"]
    assert json.loads(json.dumps(d)) == d
    back = F.Table.from_json(json.loads(json.dumps(d)))
    assert back == dataclasses.replace(t, prefix=F.Side({"gradient": dataclasses.replace(
        t.source.rows["leave_one_out"], aer=None)}, t.source.random))


def test_plain_is_the_json_of_any_result():
    """model/result.py's plain, the one writer of every result: dataclasses by field, numpy to Python, rounding,
    non-finite numbers to None."""
    from model.result import plain

    value = {"a": np.float32(0.1234567), "b": np.array([[1.0, np.nan], [np.inf, 2.5]]), "c": (np.int64(3), True),
             "d": F.Interval(0.5, None, 1.0, 2), "e": "x", "f": None}
    assert plain(value, 3) == {"a": 0.123, "b": [[1.0, None], [None, 2.5]], "c": [3, True],
                               "d": {"mean": 0.5, "low": None, "high": 1.0, "n": 2}, "e": "x", "f": None}
    assert plain(np.float64(1 / 3)) == 1 / 3 and type(plain(np.int32(4))) is int


def test_each_explanation_links_to_the_view_that_draws_it():
    """The rows' "drawn in" links, read off the structured explanation (model/methods.py), never its name."""
    from types import SimpleNamespace

    from views.faithful import drawn_in, explanation

    cfg = SimpleNamespace(n_dec_layers=3, n_heads=8)
    want = {("attention", "source"): {"view": "cross"},
            ("attention L2", "prefix"): {"view": "dec", "layer": "2", "head": "mean"},
            ("attention L3 H8", "source"): {"view": "cross", "layer": "3", "head": "8"},
            ("norms L1", "source"): {"view": "cross", "layer": "1", "head": "mean", "values": "norms"},
            ("rollout", "source"): {"view": "flow"}, ("ALTI+", "prefix"): {"view": "contributions"},
            ("integrated_gradients", "source"): {"view": "attribute", "method": "integrated_gradients"}}
    for (name, side), params in want.items():
        assert drawn_in(explanation(cfg, name), side) == params, name
