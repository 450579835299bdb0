"""The Feed-forward features view on the page (slow tier: AppTest on the shipped model and its transcoders): the
table is model/transcoders.py's own features read back, a feature's page is the index's, an edit from the link or
from the controls gives exactly what translate_batch with edit_patch gives (the translation, the probabilities, the
cross-attention maps), the link round-trips the picks, bad link values are notes, and a checkpoint without
transcoders says which command makes them."""

import numpy as np
import pytest

from conftest import CHECKPOINT, array, charts, from_url, markdown, shown
from model import transcoders as T
from model.extras import Extras
from viz.decoding import token_diff
from views.widgets import highlight
from viz.labels import predicting

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHECKPOINT / T.WEIGHTS).is_file(),
                                                   reason="the shipped checkpoint has no transcoders "
                                                          "(python -m model.transcoders train, then index)")]

S = "Zwei Hunde spielen im Schnee."


@pytest.fixture(scope="module")
def dicts(shipped_models):
    return T.load(CHECKPOINT)[0]


@pytest.fixture(scope="module")
def edit(translator, dicts) -> tuple:
    """("dec.2", f): of the last decoder block's features among the strongest at some step of S, the strongest one
    (its largest activation) whose scaling by 4 changes the words written."""
    found = {b.block: b for b in T.sentence_features(translator, dicts, translator.force(S))}["dec.2"]
    strongest = {}
    for f, v in (fv for step in found.top for fv in step):
        strongest[f] = max(v, strongest.get(f, 0.0))
    before = translator.translate(S).output_tokens
    for f in sorted(strongest, key=strongest.get, reverse=True):
        if translator.translate_batch([S], patch=T.edit_patch(dicts, {("dec.2", f): 4.0}))[0].output_tokens != before:
            return "dec.2", f
    pytest.fail("no feature of dec.2 among S's strongest changes its words when scaled by 4")


def table(at):
    return next(t.value for t in at.dataframe if "1st" in t.value.columns)


def chart(at, title: str) -> dict:
    return next(c for c in charts(at) if c["layout"]["title"]["text"].replace("<br>", " ").startswith(title))


@pytest.mark.parametrize("model", ["learned", "sinusoidal"])
def test_the_table_is_the_blocks_features(monkeypatch, shipped_models, model):
    """The table is the model's own transcoders' features: the learned model's, and with model=sinusoidal that
    model's (its own dictionaries, index and labels)."""
    folder = CHECKPOINT if model == "learned" else CHECKPOINT / model
    if not (folder / T.WEIGHTS).is_file():
        pytest.skip(f"{folder} has no transcoders")
    translator, dicts = shipped_models(folder), T.load(folder)[0]
    link = {"s": S, "view": "features", "fblock": "dec.1", **({} if model == "learned" else {"model": model})}
    at = from_url(monkeypatch, **link)
    assert not at.exception and not at.error and not at.warning
    forced = translator.force(S)
    found = {b.block: b for b in T.sentence_features(translator, dicts, forced)}["dec.1"]
    t = table(at)
    steps = [s.token for s in translator.translate(S).steps]
    assert list(t["step"]) == predicting(forced.tgt_tokens, steps)  # "<sos> → two", ...
    labels = T.read_index(folder)["labels"]["dec.1"]
    for rank, column in enumerate(("1st", "2nd", "3rd", "4th", "5th")):
        assert list(t[column]) == [f"{top[rank][0]} “{labels[top[rank][0]]}” {top[rank][1]:.2f}"
                                   if rank < len(top) else "" for top in found.top]
    np.testing.assert_allclose(t["error ‖FFN − T‖"], np.round(found.error, 3))
    np.testing.assert_allclose(t["‖FFN‖"], np.round(found.norm, 3))
    np.testing.assert_allclose(t["error share"], np.array(found.error) / np.array(found.norm))
    assert at.segmented_control(key="feat_block").value == "dec.1"
    assert dict(at.query_params)["fblock"] == "dec.1"
    width = dicts["dec.1"].width  # the block's card names its width as a count ("1,024 features")
    assert width >= 1000 and any(f"of its {width:,} features never active" in c.value for c in at.caption)


def test_the_link_round_trips_its_picks(monkeypatch, edit):
    name = f"{edit[0]}.{edit[1]}"
    link = {"s": S, "view": "features", "fblock": "enc.2", "feat": name, "fedit": f"{name}=4,enc.2.7=0"}
    at = from_url(monkeypatch, **link)
    assert not at.exception and not at.error and not at.warning
    assert at.segmented_control(key="feat_block").value == "enc.2"
    assert at.selectbox(key="feat_pick").value == name  # a feature of another block than the one shown
    assert f"**Edits in force:** {name} × 4, enc.2.7 off" in shown(markdown(at))
    assert dict(at.query_params) == link
    at.segmented_control(key="feat_block").set_value("enc.0").run()  # the default block leaves the link
    assert "fblock" not in dict(at.query_params) and dict(at.query_params)["feat"] == name


def test_an_edit_is_the_patched_model(monkeypatch, translator, dicts, edit):
    """fedit=dec.2.F=4: the words, each step's probability and the maps are translate_batch's with edit_patch."""
    name = f"{edit[0]}.{edit[1]}"
    at = from_url(monkeypatch, s=S, view="features", fedit=f"{name}=4")
    assert not at.exception and not at.error and not at.warning
    patch = T.edit_patch(dicts, {edit: 4.0})
    before, after = translator.translate(S), translator.translate_batch([S], patch=patch)[0]
    assert after.output_tokens != before.output_tokens  # the edit changes the words: the test can see it
    md = shown(markdown(at))
    chips = " ".join(f'<span class="chip{c}">{t}</span>' for op, t in token_diff(before.output_tokens,
                                                                                   after.output_tokens)
                     for c in [{"same": "", "removed": " del", "added": " add"}[op]])
    assert f"**With the edits:** {chips}" in md
    probs = chart(at, "Each original token's probability")
    assert array(probs["data"][0]["y"]) == pytest.approx([s.prob for s in before.steps], abs=1e-6)
    src, tgt, out = translator.inputs(translator.force(S))
    lp = translator.model(src, tgt, Extras(patch=patch)).logits[0].detach().log_softmax(-1)
    np.testing.assert_allclose(array(probs["data"][1]["y"]), lp.gather(-1, out[:, None]).squeeze(-1).exp(), atol=1e-5)
    for what, r in (("original", before), ("with the edits", after)):
        z = array(chart(at, f"Cross-attention, mean of every head: {what}")["data"][0]["z"])
        np.testing.assert_allclose(z, r.cross_attentions.mean(axis=(0, 1)), atol=1e-5)
    assert any("The output changed" in c.value for c in at.caption)
    at.segmented_control(key="features_map_layer").set_value(2).run()  # the last layer alone, its heads' mean
    for what, r in (("original", before), ("with the edits", after)):
        z = array(chart(at, f"Cross-attention, layer 3, mean of heads: {what}")["data"][0]["z"])
        np.testing.assert_allclose(z, r.cross_attentions[2].mean(axis=0), atol=1e-5)
    assert T.parse_edits(dict(at.query_params)["fedit"], dicts) == {edit: 4.0}


def test_an_edit_that_keeps_the_words_draws_the_difference_and_its_table(monkeypatch, translator, dicts):
    found = {b.block: b for b in T.sentence_features(translator, dicts, translator.force(S))}["enc.2"]
    f = found.top[1][0][0]  # the strongest feature at "zwei", switched off: the same words, other weights
    at = from_url(monkeypatch, s=S, view="features", fedit=f"enc.2.{f}=0")
    assert not at.exception and not at.error and not at.warning
    before = translator.translate(S)
    after = translator.translate_batch([S], patch=T.edit_patch(dicts, {("enc.2", f): 0.0}))[0]
    assert after.output_tokens == before.output_tokens
    assert "(the same words)" in shown(markdown(at))
    diff = after.cross_attentions.mean(axis=(0, 1)) - before.cross_attentions.mean(axis=(0, 1))
    assert np.abs(diff).max() > 1e-4  # the edit moves the maps: the difference has something to show
    z = array(chart(at, "With the edits minus the original")["data"][0]["z"])
    np.testing.assert_allclose(z, diff, atol=1e-5)
    at.toggle(key="features_cross_difference_table").set_value(True).run()
    shown_table = next(t.value for t in at.table)
    assert shown_table.shape == diff.shape
    assert float(shown_table.iloc[1, 1]) == pytest.approx(diff[1, 1], abs=1e-4)


def test_a_feature_page_from_the_link(monkeypatch, translator, dicts):
    found = {b.block: b for b in T.sentence_features(translator, dicts, translator.force(S))}["enc.2"]
    name = f"enc.2.{found.top[1][0][0]}"  # the strongest feature at the first word
    at = from_url(monkeypatch, s=S, view="features", fblock="enc.2", feat=name)
    assert not at.exception and not at.error and not at.warning
    page = T.feature_page(translator, T.read_index(CHECKPOINT), name, dicts)
    md = shown(markdown(at))
    assert f"**Feature {name}** (encoder layer 3): “{page['label']}”" in md
    for c in page["contexts"]:  # each context, its token marked
        p = c["position"]
        words = c["tokens"][:p] + [highlight(c["tokens"][p])] + c["tokens"][p + 1:]
        assert f"{c['activation']:.2f}: {' '.join(words)}</span>" in md
    hist = chart(at, f"{name}: its activations")
    np.testing.assert_allclose(array(hist["data"][0]["y"]), page["histogram"]["counts"])
    assert "Switched off" in md and "fedit" not in dict(at.query_params)


def test_the_controls_apply_an_edit_and_clear_it(monkeypatch, translator, dicts):
    at = from_url(monkeypatch, s=S, view="features", fblock="dec.2")
    options = at.selectbox(key="feat_pick").options
    assert options
    at.selectbox(key="feat_pick").set_value(options[0].split(" · ")[0]).run()
    name = at.session_state["feat_pick"]
    assert dict(at.query_params)["feat"] == name
    assert at.button(key="feature_apply").label == f"Switch {name} off"  # the scale's default: 0
    at.select_slider(key="feat_scale").set_value(2.0).run()
    assert at.button(key="feature_apply").label == f"Scale {name} by 2"
    at.button(key="feature_apply").click().run()
    assert not at.exception and not at.error
    assert dict(at.query_params)["fedit"] == f"{name}=2"
    assert f"**Edits in force:** {name} × 2" in shown(markdown(at))
    at.button(key="feature_clear").click().run()
    assert "fedit" not in dict(at.query_params)


@pytest.mark.parametrize("params,note", [({"fblock": "dec.9"}, "fblock: 'dec.9' is not one of"),
                                         ({"feat": "enc.2.99999"}, "feat: 'enc.2.99999' is not a feature"),
                                         ({"feat": "<b>x</b>"}, "feat: '<b>x</b>' is not a feature"),
                                         ({"fedit": "enc.0.1=50"}, "fedit: 'enc.0.1=50': a feature's scale"),
                                         ({"fedit": "enc.0.1=off"}, "fedit: 'enc.0.1=off': a feature's scale")])
def test_bad_link_values_are_notes(monkeypatch, params, note):
    at = from_url(monkeypatch, s=S, view="features", **params)
    assert not at.exception and not at.error
    assert any(note in shown(w.value) for w in at.warning), [w.value for w in at.warning]
    assert table(at) is not None  # the view still draws
    assert list(params)[0] not in dict(at.query_params)  # and the bad value leaves the link


def test_bad_link_values_are_notes_in_the_pages_language(monkeypatch):
    """With lang=de the notes on a bad feature and a bad scale are the catalogue's German, not the English of the
    command line (they were English on the German page)."""
    from model.i18n import catalogue

    german = catalogue("de").gettext
    at = from_url(monkeypatch, s=S, view="features", lang="de", feat="enc.2.99999", fedit="enc.0.1=50")
    assert not at.exception and not at.error
    notes = [shown(w.value) for w in at.warning]
    feature = german("{name!r} is not a feature: write BLOCK.INDEX, BLOCK one of {blocks} and INDEX from 0 to "
                     "{last}, e.g. enc.2.137").split(":")[0].format(name="enc.2.99999")
    scale = german("{item!r}: a feature's scale is a number from -10 to 10 (0 switches it off)").format(
        item="enc.0.1=50")
    assert any(f"feat: {feature}" in n for n in notes) and any(f"fedit: {scale}" in n for n in notes), notes
    assert not any("is not a feature" in n or "a feature's scale" in n for n in notes), notes


def test_a_checkpoint_without_transcoders_says_how_to_make_them(monkeypatch, tmp_path):
    """A checkpoint folder with the model alone (as model.convert writes one): one line with the command."""
    from streamlit.testing.v1 import AppTest

    from conftest import APP

    for f in ("config.json", "model.safetensors", "vocab.json"):
        (tmp_path / f).symlink_to(CHECKPOINT / f)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"s": S, "view": "features", "feat": "enc.2.1", "fedit": "enc.2.1=0"}.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception and not at.error
    said = [shown(i.value) for i in at.info if "transcoders" in i.value]
    assert len(said) == 1 and f"python -m model.transcoders train --checkpoint {tmp_path}" in said[0], said
    assert not any("1st" in t.value.columns for t in at.dataframe)
