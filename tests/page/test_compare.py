"""Comparing two runs in the attention views, the line view, the model choice, live importance, head statistics."""

import json

import numpy as np
import pytest

import viz
from conftest import (CHECKPOINT, array, charts, from_url, headers, literal_head_divergence, maps_data, markdown,
                      picked_maps, show_view)
from model.head_importance import head_importance_for_sentence

SIN = CHECKPOINT / "sinusoidal"
PAIR = ("Der Hund läuft über die Wiese.", "Die Katze läuft über die Wiese.")  # a minimal pair: same token count


# --- figures ------------------------------------------------------------------------------------


# --- the page -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_another_sentence_side_by_side_with_their_difference(monkeypatch, translator):
    at = from_url(monkeypatch, s=PAIR[0], view="enc", layer="1", head="2", vs="sentence", s2=PAIR[1])
    assert not at.exception and not at.error
    first, second, diff = picked_maps(at)
    want = [translator.translate(s).encoder_attentions[0, 1] for s in PAIR]  # the CLI's route, not the page's
    assert np.allclose(first, want[0], atol=5.01e-5) and np.allclose(second, want[1], atol=5.01e-5)
    assert np.allclose(diff, want[1] - want[0], atol=5.01e-5)
    assert "hund | katze" in json.dumps(charts(at)[2]["layout"]["yaxis"]["ticktext"])
    assert dict(at.query_params)["vs"] == "sentence" and dict(at.query_params)["s2"] == PAIR[1]


@pytest.mark.slow
def test_heads_off_are_compared_on_the_original_output(monkeypatch, translator):
    at = from_url(monkeypatch, s=PAIR[0], view="cross", layer="3", head="1", vs="off", off="cross.2.8")
    assert not at.exception and not at.error
    first, second, diff = picked_maps(at)
    original = translator.translate(PAIR[0])
    ids = translator.tgt_vocab.encode([s.token for s in original.steps])
    ablated = translator.analyze(PAIR[0], ids, heads_off="cross.1.7")
    assert np.allclose(first, original.cross_attentions[2, 0], atol=5.01e-5)
    assert np.allclose(second, ablated.cross_attentions[2, 0], atol=5.01e-5)
    assert np.allclose(diff, second - first, atol=1.01e-4)  # each side and the difference rounded to 4 decimals
    assert "without Cross-attention layer 2, head 8" in headers(at)
    assert dict(at.query_params)["off"] == "cross.2.8"


@pytest.mark.slow
def test_a_forced_word_is_compared_and_kept_in_the_link(monkeypatch, translator):
    at = from_url(monkeypatch, s=PAIR[0], view="cross", vs="force", step="1")
    assert not at.exception and not at.error
    word = at.session_state.vs_word
    assert word != translator.translate(PAIR[0]).steps[0].token
    assert dict(at.query_params)["whatif"] == word and dict(at.query_params)["step"] == "1"
    forced = translator.translate(PAIR[0], force={0: word})
    assert f"forced to “{word}”" in headers(at) and forced.text.split()[0] == word


@pytest.mark.slow
def test_line_view_link(monkeypatch):
    at = from_url(monkeypatch, s=PAIR[0], view="dec", layer="2", draw="lines")
    assert not at.exception and not at.error
    lines = charts(at)[0]  # the line figure as sent; the lines of each layer travel beside it
    assert sum(t["mode"] == "lines" for t in lines["data"]) == 8 * len(viz.lines.LEVELS)
    assert len(maps_data(at)[0]["panels"][0]["lines"]["layers"][1]["lines"]) == 8 * len(viz.lines.LEVELS)
    assert dict(at.query_params)["draw"] == "lines"


@pytest.mark.slow
def test_live_importance_is_the_batched_computation(monkeypatch, translator):
    at = from_url(monkeypatch, s=PAIR[0], view="importance")
    assert not at.exception and not at.error
    want = head_importance_for_sentence(translator, PAIR[0])
    live = {s["layout"]["title"]["text"]: array(s["data"][0]["z"]) for s in charts(at)
            if "loss rise" in json.dumps(s["data"][0].get("colorbar", {}))}
    assert len(live) >= 3
    for kind, title in (("enc", "Encoder self-attention"), ("dec", "Decoder self-attention"),
                        ("cross", "Cross-attention")):
        got = [z for t, z in live.items() if t == title][-1]  # the sentence's map comes after the corpus one
        assert np.allclose(got, want[kind], atol=1e-5)
    # A head with no effect is one whose masked loss equals the baseline: its rise is exactly 0 within float noise.
    assert all(np.isfinite(v).all() for v in want.values())


@pytest.mark.slow
@pytest.mark.skipif(not (SIN / "model.safetensors").is_file(), reason="no checkpoints/sinusoidal")
def test_the_sinusoidal_model_is_chosen_by_the_link_and_compared_with_the_learned_one(monkeypatch, shipped_models):
    sin = shipped_models(SIN)
    at = from_url(monkeypatch, s=PAIR[0], model="sinusoidal", view="enc", vs="model")
    assert not at.exception and not at.error
    assert sin.cfg.positions == "sinusoidal"
    assert f"class='translation'>{sin.translate(PAIR[0]).text.split()[0]}" in markdown(at)
    assert dict(at.query_params)["model"] == "sinusoidal"
    first, second, diff = picked_maps(at)  # the source is the same, so encoder maps always compare
    learned = shipped_models(CHECKPOINT).translate(PAIR[0])
    mine = sin.translate(PAIR[0]).encoder_attentions
    layer = int(np.argmax(literal_head_divergence(mine)))  # the view opens where this model's heads differ most
    assert maps_data(at)[0]["pick"]["layer"] == layer
    assert np.allclose(first, mine.mean(axis=1)[layer], atol=5.01e-5)
    assert np.allclose(second, learned.encoder_attentions.mean(axis=1)[layer], atol=5.01e-5)


@pytest.mark.slow
def test_head_statistics_of_the_sentence_and_the_test_set(monkeypatch, translator):
    from model.head_stats import translation_stats

    at = from_url(monkeypatch, s=PAIR[0], view="stats", stat="eos_share")
    assert not at.exception and not at.error
    grids = [array(s["data"][0]["z"]) for s in charts(at)]
    assert len(grids) == 4  # encoder and cross (eos_share is defined for those), sentence then test set
    mine = translation_stats(translator.translate(PAIR[0]))["eos_share"]
    corpus = json.loads((CHECKPOINT / "head_stats.json").read_text())["stats"]["eos_share"]
    assert np.allclose(grids[0], mine["enc"]) and np.allclose(grids[1], mine["cross"])
    assert np.allclose(grids[2], corpus["enc"]) and np.allclose(grids[3], corpus["cross"])
    table = at.dataframe[0].value
    assert len(table) == 72 and table["on <eos>"].notna().sum() == 48  # 24 decoder heads: undefined
    assert dict(at.query_params)["stat"] == "eos_share" and dict(at.query_params)["view"] == "stats"


@pytest.mark.slow
def test_head_statistics_leave_a_statistic_a_head_does_not_have_empty(monkeypatch):
    """Monotonicity is a statistic of cross-attention only: the encoder and decoder rows show an empty cell
    (Streamlit writes a missing value as "None" unless the table names another placeholder)."""
    at = from_url(monkeypatch, s=PAIR[0], view="stats", stat="monotonicity")
    assert not at.exception and not at.error
    table = at.dataframe[0]
    cross = table.value["kind"] == "cross"
    assert table.value.loc[~cross, "monotonicity"].isna().all() and table.value.loc[cross, "monotonicity"].notna().any()
    assert table.proto.HasField("placeholder") and table.proto.placeholder == ""


@pytest.mark.slow
@pytest.mark.skipif(not (SIN / "model.safetensors").is_file(), reason="no checkpoints/sinusoidal")
def test_every_view_works_with_the_sinusoidal_model(monkeypatch):
    from views.registry import VIEWS

    at = from_url(monkeypatch, s=PAIR[0], model="sinusoidal")
    for view in VIEWS:
        show_view(at, view)
        assert not at.exception and not at.error, (view, at.exception, [e.value for e in at.error])
        assert at.session_state.model == "sinusoidal"


@pytest.mark.slow
@pytest.mark.parametrize("kind, off", [("enc", "enc.2.4"), ("cross", "cross.2.8"), ("cross", "cross.3.1")])
def test_a_comparison_says_which_layers_stay_the_same_and_why(monkeypatch, translator, kind, off):
    """Switching a head off leaves its own layer's maps and those before it as they were (only the head's output is
    dropped): the page names exactly the layers whose maps do not change -- found here from two teacher-forced
    passes -- and says why, or nothing when every layer changes."""
    at = from_url(monkeypatch, s=PAIR[0], view=kind, vs="off", off=off)
    assert not at.exception and not at.error
    original = translator.translate(PAIR[0])
    ids = translator.tgt_vocab.encode([s.token for s in original.steps])
    field = {"enc": "encoder_attentions", "cross": "cross_attentions"}[kind]
    base = getattr(translator.analyze(PAIR[0], ids), field)
    ablated = getattr(translator.analyze(PAIR[0], ids, heads_off=f"{off.split('.')[0]}.{int(off.split('.')[1]) - 1}"
                                                                  + "".join(f".{int(h) - 1}" for h in off.split(".")[2:])),
                      field)
    same = [i + 1 for i in range(base.shape[0]) if np.array_equal(base[i], ablated[i])]
    said = [c.value for c in at.caption if "the same in both runs" in c.value]
    assert same, "every layer changed: the case tests nothing"
    assert len(said) == 1 and f"layer{'s' * (len(same) > 1)} {', '.join(map(str, same))}:" in said[0], said
    assert "still computes its weights" in said[0]
