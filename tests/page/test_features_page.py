"""The Feed-forward features view on the page (slow tier: AppTest on the shipped model and its transcoders): the
table is model/transcoders.py's own features read back, a feature's page is the index's, an edit from the link or
from the controls gives the translation and probabilities of the patched model, and bad link values are notes."""

import numpy as np
import pytest

from conftest import CHECKPOINT, array, charts, from_url, markdown, shown
from model import transcoders as T
from model.errors import InputError

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHECKPOINT / T.INDEX).is_file(),
                                                   reason="the shipped checkpoint has no transcoders index")]

S = "Zwei Hunde spielen im Schnee."


@pytest.fixture(scope="module")
def dicts(shipped_models):
    return T.load(CHECKPOINT)[0]


def table(at):
    return next(t.value for t in at.dataframe if "strongest features" in t.value.columns)


def test_the_table_is_the_blocks_features(monkeypatch, translator, dicts):
    at = from_url(monkeypatch, s=S, view="features", fblock="dec.1")
    assert not at.exception and not at.error and not at.warning
    forced = translator.force(S)
    found = {b.block: b for b in T.sentence_features(translator, dicts, forced)}["dec.1"]
    t = table(at)
    assert list(t["decoder input"]) == list(forced.tgt_tokens)
    np.testing.assert_allclose(t["error ‖FFN − T‖"], np.round(found.error, 3))
    labels = T.read_index(CHECKPOINT)["labels"]["dec.1"]
    first = "; ".join(f"dec.1.{f} “{labels[f]}” {v:.2f}" for f, v in found.top[0])
    assert t["strongest features"][0] == first
    assert dict(at.query_params)["fblock"] == "dec.1"


def test_a_feature_page_and_an_edit_from_the_link(monkeypatch, translator, dicts):
    forced = translator.force(S)
    found = {b.block: b for b in T.sentence_features(translator, dicts, forced)}["enc.2"]
    f = found.top[1][0][0]  # the strongest feature at the first word
    name = f"enc.2.{f}"
    at = from_url(monkeypatch, s=S, view="features", fblock="enc.2", feat=name, fedit=f"{name}=0")
    assert not at.exception and not at.error and not at.warning
    page = T.feature_page(translator, T.read_index(CHECKPOINT), name, dicts)
    md = shown(markdown(at))
    assert f"**Feature {name}** (encoder layer 3): “{page['label']}”" in md
    hist = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith(f"{name}: its activations"))
    np.testing.assert_allclose(array(hist["data"][0]["y"]), page["histogram"]["counts"])
    patch = T.edit_patch(dicts, {("enc.2", f): 0.0})
    after = translator.translate_batch([S], patch=patch)[0]
    assert "**With the edits:**" in md and all(t in md for t in after.output_tokens if t.isalpha())
    probs = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Probability of each"))
    assert array(probs["data"][0]["y"]) == pytest.approx([s.prob for s in translator.translate(S).steps], abs=1e-6)
    from model.extras import Extras

    src, tgt, out = translator.inputs(forced)
    lp = translator.model(src, tgt, Extras(patch=patch)).logits[0].detach().log_softmax(-1)
    np.testing.assert_allclose(array(probs["data"][1]["y"]), lp.gather(-1, out[:, None]).squeeze(-1).exp(), atol=1e-5)
    assert dict(at.query_params)["fedit"] == f"{name}=0"


def test_the_controls_apply_an_edit_and_clear_it(monkeypatch, translator, dicts):
    at = from_url(monkeypatch, s=S, view="features", fblock="dec.2")
    options = at.selectbox(key="feat_pick").options
    assert options
    at.selectbox(key="feat_pick").set_value(at.selectbox(key="feat_pick").options[0].split(" · ")[0]).run()
    name = at.session_state["feat_pick"]
    at.select_slider(key="feat_scale").set_value(2.0).run()
    at.button(key="feature_apply").click().run()
    assert not at.exception and not at.error
    assert dict(at.query_params)["fedit"] == f"{name}=2"
    assert "**Edits in force:** " + f"{name} × 2" in shown(markdown(at))
    at.button(key="feature_clear").click().run()
    assert "fedit" not in dict(at.query_params)


@pytest.mark.parametrize("params,note", [({"fblock": "dec.9"}, "fblock: 'dec.9' is not one of"),
                                         ({"feat": "enc.2.99999"}, "feat: 'enc.2.99999' is not a feature"),
                                         ({"fedit": "enc.0.1=50"}, "fedit: 'enc.0.1=50': a feature's scale")])
def test_bad_link_values_are_notes(monkeypatch, params, note):
    at = from_url(monkeypatch, s=S, view="features", **params)
    assert not at.exception and not at.error
    assert any(note in shown(w.value) for w in at.warning), [w.value for w in at.warning]


def test_a_checkpoint_without_transcoders_says_how_to_make_them(monkeypatch, tmp_path):
    import views.features

    def none(checkpoint):
        return T.load(tmp_path)  # an empty folder: the library's own InputError

    with pytest.raises(InputError):
        none(None)
    monkeypatch.setattr(views.features, "dictionaries", none)
    at = from_url(monkeypatch, s=S, view="features")
    assert not at.exception and not at.error
    assert any("python -m model.transcoders train" in shown(i.value) for i in at.info), [i.value for i in at.info]
