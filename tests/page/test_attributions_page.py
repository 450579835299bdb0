"""The Attributions view on the page (slow tier: AppTest and Chromium on the shipped model): every method draws, the
maps are the Translator's own numbers read back from the charts, and the link keeps the method and the foil."""

import re
import sys

import numpy as np
import pytest

from conftest import array, charts, from_url, markdown, shown
from model.attribute import METHODS, SIGNED
from model.methods import METHODS as TABLE
from views.attributions import DEFAULT_METHOD, FOIL_KEY, METHOD_KEY, RUNNER_UP

pytestmark = pytest.mark.slow

S = "Zwei Männer spielen Fußball auf einer Wiese."


def chart(at, title: str) -> dict:
    found = [c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith(title)]
    assert found, [c["layout"].get("title", {}).get("text") for c in charts(at)]
    return found[0]


def not_available(at) -> bool:
    return any("not available yet" in i.value for i in at.info)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_draws_the_translators_scores(monkeypatch, translator, method):
    at = from_url(monkeypatch, s=S, view="attribute", method=method)
    assert not at.exception and not at.error and not at.warning, (at.exception, [e.value for e in at.error])
    assert at.session_state.view == "attribute" and at.session_state[METHOD_KEY] == method
    assert dict(at.query_params) == {"s": S, "view": "attribute", "method": method}
    if method == "value_zeroing" and not_available(at):  # model/value_zeroing.py is not there yet
        return
    a = translator.attribute(S, method)
    name = TABLE[method].label.capitalize()
    source = chart(at, f"{name}: source tokens")
    np.testing.assert_allclose(array(source["data"][0]["z"]), a.source, rtol=1e-5, atol=1e-6)
    prefix = chart(at, f"{name}: prefix tokens")
    z = array(prefix["data"][0]["z"]).astype(float)  # the cells above the diagonal are masked (None -> nan)
    assert np.isnan(z[np.triu_indices(len(z), 1)]).all()
    np.testing.assert_allclose(np.nan_to_num(z), a.prefix, rtol=1e-5, atol=1e-6)
    axis = source["layout"]["coloraxis"]
    assert prefix["layout"]["coloraxis"]["cmax"] == axis["cmax"]  # one colour range for both maps (the default)
    if method in SIGNED:  # diverging, centred on 0
        top = max(np.abs(a.source).max(), np.abs(a.prefix).max())
        assert axis["cmin"] == pytest.approx(-axis["cmax"]) and axis["cmax"] == pytest.approx(top)
        assert axis["colorscale"][0][1] != axis["colorscale"][-1][1]
    else:
        assert axis["cmin"] == 0 and axis["cmax"] == pytest.approx(max(a.source.max(), a.prefix.max()))
    shares = chart(at, "Source share of every step")
    assert [t["name"] for t in shares["data"]] == [TABLE[method].label, "ALTI+"]
    np.testing.assert_allclose(array(shares["data"][0]["y"]), a.source_share, atol=1e-6)
    np.testing.assert_allclose(array(shares["data"][1]["y"]), translator.contributions(S).source_share, atol=1e-6)
    code = "\n".join(c.value for c in at.code)
    assert f"python -m model.inspect attribute --method {method} '{S}'" in code
    md = markdown(at)
    assert ("**Completeness**" in md) == (method == "integrated_gradients")
    assert ("**Foils**" in md) == (method == "contrastive")
    if method == "integrated_gradients":
        table = at.dataframe[0].value
        np.testing.assert_allclose(table["gap"], a.completeness_gap, atol=1e-5)  # float32 sums, 1 thread vs many
        largest = float(re.search(r"The largest gap is ([0-9.]+)", md).group(1))
        assert largest == pytest.approx(a.completeness_gap.max(), abs=1e-4)
    if method == "contrastive":
        assert md.count("rather than") == len(a.output_tokens)
    at.run()  # again: the attribution comes from the cache, its progress bar and turn-taking not replayed
    assert not at.exception and not at.error


def test_without_value_zeroing_the_view_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "model.value_zeroing", None)  # `import` of it raises ImportError
    at = from_url(monkeypatch, s="Eine Katze schläft auf dem Sofa.", view="attribute", method="value_zeroing")
    assert not at.exception and not at.error
    assert any("Value zeroing is not available yet" in i.value for i in at.info)
    assert dict(at.query_params)["method"] == "value_zeroing"


def test_the_foil_travels_in_the_link_and_back(monkeypatch, translator):
    at = from_url(monkeypatch, s=S, view="attribute", method="contrastive", foil="dog")
    assert not at.exception and not at.error and not at.warning
    assert at.session_state[FOIL_KEY] == "dog"
    assert dict(at.query_params) == {"s": S, "view": "attribute", "method": "contrastive", "foil": "dog"}
    a = translator.attribute(S, "contrastive", contrast="dog")
    assert a.foils == ["dog"] * len(a.output_tokens)
    np.testing.assert_allclose(array(chart(at, "Contrastive: source tokens")["data"][0]["z"]), a.source,
                               rtol=1e-5, atol=1e-6)
    assert "--contrast dog" in "\n".join(c.value for c in at.code)
    at.selectbox(key=FOIL_KEY).set_value(RUNNER_UP).run()
    assert dict(at.query_params) == {"s": S, "view": "attribute", "method": "contrastive"}
    at.segmented_control(key=METHOD_KEY).set_value("leave_one_out").run()
    assert not at.exception and dict(at.query_params)["method"] == "leave_one_out"
    chart(at, f"{TABLE['leave_one_out'].label.capitalize()}: source tokens")  # "Leave-one-out"


@pytest.mark.parametrize("params, note", [
    (dict(method="saliency"), "method='saliency' is not one of gradient, input_x_gradient"),
    (dict(method="contrastive", foil="zzzqx"), "foil='zzzqx' is not one of the first 2000 words"),
    (dict(method="gradient", foil="dog"), "foil='dog' is read only with method=contrastive"),
])
def test_a_bad_method_or_foil_in_the_link_is_a_note(monkeypatch, params, note):
    at = from_url(monkeypatch, s="Ein Hund läuft.", view="attribute", **params)
    assert not at.exception and not at.error
    assert note in shown(at.warning[0].value), at.warning[0].value
    link = dict(at.query_params)  # what the page shows instead: the default method, each runner-up as the foil
    assert "foil" not in link and link["method"] == (params["method"] if params["method"] in METHODS
                                                     else DEFAULT_METHOD)
