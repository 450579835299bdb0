"""The Faithfulness view on the page (slow tier: AppTest and Chromium on the shipped model): the curves and scores are
model/faithfulness.py's own numbers read back from the chart and the table, the verdict is computed from the shipped
table, the link keeps the step and the side, each method links to the view that draws it, and the views that draw an
explanation say how far to trust it."""

import json
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from conftest import CHECKPOINT, array, charts, from_url, markdown, shown
from model import faithfulness as F
from views.faithful import SIDE_KEY, STEP_KEY, drawn_in, explanation

pytestmark = pytest.mark.slow

S = "Zwei Männer spielen Fußball auf einer Wiese."
SHIPPED = CHECKPOINT / "faithfulness.json"


def shipped() -> dict:
    if not SHIPPED.is_file():
        pytest.skip("no faithfulness.json beside the checkpoint")
    return json.loads(SHIPPED.read_text())


def curves_chart(at) -> dict:
    found = [c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith("Step ")]
    assert len(found) == 1, [c["layout"].get("title", {}).get("text") for c in charts(at)]
    return found[0]


@pytest.mark.parametrize("side", ["source", "prefix"])
def test_the_step_draws_every_methods_curve_as_the_library_measures_it(monkeypatch, translator, side):
    at = from_url(monkeypatch, s=S, view="faithful", step="3", **({"side": side} if side == "prefix" else {}))
    assert not at.exception and not at.error and not at.warning, (at.exception, [e.value for e in at.error])
    assert at.session_state[STEP_KEY] == 3 and at.session_state[SIDE_KEY] == side
    assert dict(at.query_params) == {"s": S, "view": "faithful", "step": "3",
                                     **({"side": side} if side == "prefix" else {})}
    head = F.aligning_head(CHECKPOINT)
    want = F.measure(translator, S, steps=[2], heads=(head,)).to_json()["steps"][2][side]  # the second route
    fig = curves_chart(at)
    lines = {t["name"]: t for t in fig["data"]}
    for method, m in want["methods"].items():
        np.testing.assert_allclose(array(lines[F.display_name(method)]["y"]), m["deletion"], atol=3e-6)
    np.testing.assert_allclose(array(lines["random orders (mean)"]["y"]), want["random"]["deletion"], atol=3e-6)
    table = at.dataframe[0].value
    for method, m in want["methods"].items():
        row = table[table["method"] == F.display_name(method)].iloc[0]
        assert row["comprehensiveness"] == pytest.approx(m["comprehensiveness"], abs=3e-6)
        assert row["sufficiency"] == pytest.approx(m["sufficiency"], abs=3e-6)
        assert row["removed first"] == want["tokens"][m["order"][0] - 1]
        link = parse_qs(urlparse(row["drawn in"]).query)
        assert link["s"] == [S] and {k: v[0] for k, v in link.items() if k != "s"} == drawn_in(explanation(translator.cfg, method), side)
    assert list(table["comprehensiveness"][:-1]) == sorted(table["comprehensiveness"][:-1], reverse=True)
    code = "\n".join(c.value for c in at.code)
    assert f"python -m model.inspect faithfulness --step 2 '{S}'" in code


def test_the_page_opens_with_the_verdict_computed_from_the_shipped_table(monkeypatch):
    table = shipped()
    at = from_url(monkeypatch, s=S, view="faithful", step="2")
    assert f"**For this model:** {F.verdict(F.Table.from_json(table))}" in shown(markdown(at))
    test_set = at.dataframe[1].value
    rows = {r["method"]: r for _, r in test_set.iterrows()}
    loo = table["source"]["leave_one_out"]
    assert rows["leave-one-out"]["comprehensiveness"].startswith(f"{loo['comprehensiveness']['mean']:.3f} [")
    assert rows["leave-one-out"]["alignment error (AER)"] == pytest.approx(loo["aer"])


def test_step_one_has_no_prefix_to_remove_and_a_step_past_the_end_is_clamped(monkeypatch, translator):
    at = from_url(monkeypatch, s=S, view="faithful", step="1", side="prefix")
    assert not at.exception and any("nothing to remove" in i.value for i in at.info)
    at = from_url(monkeypatch, s=S, view="faithful", step="49")
    T = len(translator.translate(S).steps)
    assert not at.exception and at.session_state[STEP_KEY] == T
    assert at.query_params["step"] == str(T)


@pytest.mark.parametrize("view, method, side", [("cross", "attention L2", "source"), ("dec", "attention L1", "prefix"),
                                                ("contributions", "ALTI+", "source"),
                                                ("attribute", "input_x_gradient", "source")])
def test_views_that_draw_an_explanation_say_how_far_to_trust_it(monkeypatch, view, method, side):
    table = shipped()
    at = from_url(monkeypatch, s=S, view=view, **({"method": method} if view == "attribute" else {}))
    line = [c.value for c in at.caption if c.value.startswith("How far to trust it")]
    assert len(line) == 1, [c.value for c in at.caption]
    assert f"{table[side][method]['comprehensiveness']['mean']:.2f}" in line[0]
    assert f"random orders by {table[side]['random']['comprehensiveness']['mean']:.2f}" in line[0]
    aer = table[side][method].get("aer")
    assert (aer is not None) == ("error rate" in line[0])
    if aer is not None:
        assert f"{aer:.2f}" in line[0]


def test_the_encoder_view_has_no_trust_line(monkeypatch):
    at = from_url(monkeypatch, s=S, view="enc")
    assert not [c.value for c in at.caption if c.value.startswith("How far to trust it")]
