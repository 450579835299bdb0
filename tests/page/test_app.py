"""The real app.py under streamlit.testing.v1.AppTest, with the shipped checkpoint (slow tier: each test runs the
whole page script, often several times)."""

import gc
import json
import shlex
import sys
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from conftest import (APP, CHECKPOINT, ENGLISH, GERMAN, ROOT, charts, component_data, decoded, figure_data, from_url,
                      headers, maps_data, markdown, show_view, shown)
from model.checkpoint import save_checkpoint
from model.heads import KIND_NAMES
from model.vocab import Vocab
from unit.test_hostile import ODD_INPUTS  # what a pasted text brings
from viz import plain

pytestmark = pytest.mark.slow

@pytest.fixture
def cross(monkeypatch):
    """The page opened by a link to Cross-attention (a first visit opens the walk: tests/page/test_first_visit.py)."""
    return from_url(monkeypatch, view="cross")


def typed(app, sentence):
    app.text_input(key="sentence").input(sentence).run()
    assert not app.exception, app.exception
    return app


def trace_data(app) -> dict:
    """What the decoding trace sends the browser (views/trace.py trace_data)."""
    return component_data(app, "trace")


def steps_table(app):
    """The trace's table of all steps (the view has other tables too: the logit lens)."""
    tables = [d.value for d in app.dataframe if "runner-up" in d.value.columns]
    assert len(tables) == 1, [list(d.value.columns) for d in app.dataframe]
    return tables[0]


def test_empty_page_gives_a_hint(app):
    assert not app.exception
    assert "Type a German sentence" in app.info[0].value
    assert not charts(app)


def test_sentence_gives_translation_and_views(cross):
    typed(cross, "Ein Mann fährt Fahrrad.")
    md = markdown(cross)
    assert "class='translation'>a man" in md
    specs = charts(cross)
    assert len(specs) == 2  # the chosen head and the model view of the default (cross-attention) view
    assert specs[0]["layout"]["xaxis"]["ticktext"][:3] == ["&lt;sos&gt;", "ein", "mann"]
    assert specs[0]["layout"]["yaxis"]["ticktext"][:2] == ["&lt;sos&gt; → a", "a → man"]  # rows say what they predict
    for view in ["dec", "enc", "trace", "positions"]:
        show_view(cross, view)
        assert not cross.exception, view
        assert charts(cross), view


def test_the_server_settles_after_its_first_model_load(app):
    """Once a model is loaded, a background thread imports captum (a first Attributions visit does not wait for it)
    and freezes what the server holds, so that Python's full collections stop walking it (views/calls.py settle:
    unfrozen, a class of 40 pressing Enter together waited twice as long). In this process the first model load may
    have been an earlier test's: the thread ran then."""
    typed(app, "Ein Hund rennt.")
    deadline = time.time() + 60
    while "captum.attr" not in sys.modules or gc.get_freeze_count() == 0:
        assert time.time() < deadline, ("captum.attr" in sys.modules, gc.get_freeze_count())
        time.sleep(0.1)
    assert gc.get_freeze_count() > 100_000  # torch, plotly, the model: not a handful of objects


def test_every_layer_and_head_reaches_the_browser_with_its_title_and_colours(app, translator):
    """What the browser redraws from when a layer or head is picked (views/maps.js): every map of the view and each
    layer's mean, to the 4 decimals the page shows, with the title and colour range of each pick."""
    typed(app, "Zwei Hunde spielen im Schnee.")
    want = translator.translate("Zwei Hunde spielen im Schnee.")
    for kind, field in (("cross", "cross_attentions"), ("enc", "encoder_attentions"), ("dec", "decoder_attentions")):
        view(app, kind)
        data = maps_data(app)[0]
        maps, L, H = getattr(want, field), data["layers"], data["heads"]
        got = decoded(data["panels"][0]["maps"])
        assert got.shape == (L, H + 1) + maps.shape[2:] and (L, H) == maps.shape[:2]
        np.testing.assert_allclose(got[:, :H], maps, atol=5.01e-5)
        np.testing.assert_allclose(got[:, H], maps.mean(axis=1), atol=5.01e-5)
        titles = data["panels"][0]["titles"]
        assert titles[0][5] == f"{KIND_NAMES[kind]}, layer 1, head 6" and titles[L - 1][H].endswith("mean of the 8 heads")
        scales = data["panels"][0]["scales"]
        assert scales[0][5][0] == [0.0, 1.0, "weight"]  # the fixed scale, and stretched to the map's largest
        mask = np.triu(np.ones(maps.shape[2:], bool), 1) if kind == "dec" else np.zeros(maps.shape[2:], bool)
        assert scales[0][5][1] == [0.0, pytest.approx(float(maps[0, 5][~mask].max())), "weight (stretched)"]
    assert not app.exception


def test_every_step_of_the_trace_reaches_the_browser(app, translator):
    """What the browser steps through (views/trace.js): each step's numbers, candidates and logit lens, and where
    every head looked, to the 4 decimals the page shows."""
    typed(app, "Eine Frau singt auf einer Bühne.")
    view(app, "trace")
    data = trace_data(app)
    r = translator.translate("Eine Frau singt auf einer Bühne.")
    assert data["step"] == 0 and data["n"] == len(r.steps) == len(data["steps"]) == len(data["bars"])
    for t, (got, want) in enumerate(zip(data["steps"], r.steps)):
        assert (got["read"], got["token"]) == (r.tgt_tokens[t], want.token)
        assert got["prob"] == pytest.approx(want.prob, abs=1e-6)  # the page's batched path: float32 rounding
        # the browser's what-if box: the step's candidates, then the way to any word of the vocabulary
        assert got["others"] == [*(tok for tok, _ in want.top if tok != want.token), "(another word…)"]
        bar = json.loads(data["bars"][t])
        assert plain(want.token) + "  ◀ chosen" in bar["layout"]["yaxis"]["ticktext"]
    np.testing.assert_allclose(decoded(data["self"]["maps"]), r.decoder_attentions, atol=5.01e-5)
    np.testing.assert_allclose(decoded(data["cross"]["maps"]), r.cross_attentions, atol=5.01e-5)
    assert [a["ticktext"] for a in data["self"]["axes"]][1][-1] == r.tgt_tokens[1]  # step 2 reads two keys
    df = steps_table(app)
    assert len(df) >= 4 and df["token"].iloc[-1] == "<eos>"
    assert list(df.columns)[:3] == ["step", "token", "probability"]


def test_the_servers_step_survives_a_new_sentence_and_is_clamped(app):
    typed(app, "Ein kleines Mädchen in einem rosa Kleid klettert auf einen großen Baum im Park.")
    view(app, "trace")
    app.session_state.trace_step = 6  # as a what-if at step 6 leaves it (the browser's own steps: test_instant)
    typed(app, "Ein Junge springt ins Wasser und lacht laut.")
    assert app.session_state.trace_step == 6 and trace_data(app)["step"] == 5  # did not jump back to the start
    n_medium = len(steps_table(app))
    app.session_state.trace_step = n_medium
    typed(app, "Hund.")
    n_short = len(steps_table(app))
    assert n_short < n_medium, "a one-word input should give a shorter output than a full sentence"
    assert app.session_state.trace_step == n_short and trace_data(app)["step"] == n_short - 1  # clamped


def test_short_input_gets_a_hint(app):
    hint = "only whole image descriptions"
    typed(app, "Hund.")
    assert hint in "\n".join(c.value for c in app.caption)
    typed(app, "Ein Hund rennt durch den Schnee.")
    assert hint not in "\n".join(c.value for c in app.caption)


def test_whitespace_input_is_a_hint_not_an_error(app):
    typed(app, "   ")
    assert "Type a German sentence" in app.info[0].value and not app.error


def test_too_long_input_warns_and_translates(cross):
    typed(cross, " ".join(["Ein Hund läuft."] * 40))
    assert "too long" in cross.warning[0].value and "cut" in cross.warning[0].value
    assert charts(cross)


def test_unknown_words_other_scripts_and_emoji(cross):
    typed(cross, "Qwxzy 日本語 😀 Ελληνικά")
    assert "unknown to the model" in "\n".join(c.value for c in cross.caption)
    assert 'class="chip unk"' in markdown(cross)
    assert charts(cross)


def test_html_input_is_shown_as_text(cross):
    typed(cross, "<script>alert('x')</script> <img src=x onerror=alert(1)> Ein Hund")
    md = markdown(cross)
    assert "<script" not in md and "</script" not in md and "<img" not in md
    assert "&lt;/script" in md  # spaCy splits the tag; every piece is escaped
    for spec in charts(cross):
        assert "</script" not in json.dumps(spec)
    # The names the browser hands Plotly for hover text are escaped too (tables and CSV set raw text as text).
    names = json.dumps([p["labels"] for data in maps_data(cross) for p in data["panels"]])
    assert "</script" not in names and "&lt;/script" in names


def test_missing_checkpoint_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(tmp_path / "nowhere"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "could not be loaded" in at.error[0].value and "does not exist" in shown(at.error[0].value)


def test_corrupt_checkpoint_is_a_clear_error(monkeypatch, tmp_path, tiny_model):
    save_checkpoint(tiny_model, Vocab(GERMAN), Vocab(ENGLISH), tmp_path / "c")
    (tmp_path / "c/model.safetensors").write_bytes(b"\x00" * 100)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(tmp_path / "c"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "corrupt or truncated" in shown(at.error[0].value)


def test_example_picker_fills_the_sentence(app):
    options = app.selectbox(key="example").options
    app.selectbox(key="example").set_value(options[1]).run()
    assert app.session_state.sentence == options[1]
    assert "Multi30k reference" in "\n".join(c.value for c in app.caption)


def view(app, slug):
    show_view(app, slug)  # the view switch's options are the links' slugs
    assert not app.exception, app.exception
    return app


def test_ablation_view_shows_new_translation_and_probability_change(app):
    typed(app, "Ein Mann fährt Fahrrad.")
    view(app, "ablate")
    assert "Pick heads" in app.info[0].value
    for layer in range(3):  # every head of every cross-attention layer: the whole layers
        app.pills(key=f"ablate_cross_{layer}").set_value(list(range(8))).run()
    assert not app.exception
    md = markdown(app)
    assert "Without those heads:" in md
    assert "Switched off:** Cross-attention layer 1 (all heads); Cross-attention layer 2 (all heads)" in shown(md)
    assert "--mask-heads cross.0,cross.1,cross.2" in app.code[0].value
    fig = charts(app)[0]
    before, after = fig["data"][0]["y"], fig["data"][1]["y"]
    assert len(before) == len(after) and before != after  # no cross-attention at all: the model is lost


def test_what_if_decoding(app):
    typed(app, "Ein Mann fährt Fahrrad.")
    view(app, "trace")
    alt = trace_data(app)["steps"][1]["others"][0]  # what the browser's box offers at step 2
    app.session_state.trace_step, app.session_state.what_if = 2, alt  # what picking it there asks the server
    app.run()
    assert not app.exception
    md = markdown(app)
    assert "What-if translation" in md and f"forced to “{alt}”" in md
    assert f"--force {shlex.quote('1:' + alt)}" in app.code[0].value
    assert trace_data(app)["whatif"] == alt and trace_data(app)["step"] == 1


def test_reference_view(app):
    options = app.selectbox(key="example").options
    app.selectbox(key="example").set_value(options[1]).run()
    view(app, "reference")
    assert app.text_input(key="reference").value  # the example brought its reference
    bleu, loss, ppl = (float(m.value) for m in app.metric)
    assert 0 <= bleu <= 100 and loss > 0 and abs(ppl - 2.718281828 ** loss) < 0.01 * ppl
    assert "reference token" in app.dataframe[0].value.columns
    app.text_input(key="reference").input("   ").run()
    assert "Type an English reference" in app.info[0].value and not app.exception


def test_beam_view_width_one_is_greedy(app, shipped_models):
    typed(app, "Zwei Hunde spielen im Schnee.")
    view(app, "beam")
    app.slider(key="beam_width").set_value(1).run()
    md = markdown(app)
    assert "Beam search (width 1)" in md and "chip del" not in md and "chip add" not in md
    app.slider(key="beam_width").set_value(5).run()
    # the page's n-best list is the library's, row for row
    nbest = shipped_models(CHECKPOINT).beam("Zwei Hunde spielen im Schnee.", 5).nbest
    assert list(app.dataframe[0].value["hypothesis"]) == [" ".join(c.tokens) for c in nbest]
    assert set(app.dataframe[1].value["status"]) <= {"kept", "finished", "pruned"}


def test_head_importance_links_to_the_head_view(app):
    if not (CHECKPOINT / "head_importance.json").is_file():
        pytest.skip("no head_importance.json shipped")
    typed(app, "Ein Hund.")
    view(app, "importance")
    assert len(charts(app)) == 6  # the test set's three grids, then this sentence's (computed live)
    pick = app.selectbox(key="importance_pick").value  # the most important head comes first (a model.heads.Head)
    app.button[0].click().run()
    assert not app.exception
    name = {"enc": "Encoder self-attention", "dec": "Decoder self-attention", "cross": "Cross-attention"}[pick.kind]
    assert app.session_state.view == pick.kind
    assert charts(app)[0]["layout"]["title"]["text"] == f"{name}, layer {pick.layer + 1}, head {pick.head + 1}"


def test_a_typed_sentence_is_not_scored_against_the_old_examples_reference(app):
    options = app.selectbox(key="example").options
    app.selectbox(key="example").set_value(options[1]).run()
    assert app.session_state.reference  # the example brought its reference
    typed(app, "Ein Hund rennt durch den Schnee.")
    assert app.session_state.reference == "" and app.selectbox(key="example").value == ""
    view(app, "reference")
    assert "Type an English reference" in app.info[0].value and not app.metric


def test_picking_the_same_example_again_works(app):
    options = app.selectbox(key="example").options
    app.selectbox(key="example").set_value(options[2]).run()
    typed(app, "Ein Hund rennt durch den Schnee.")
    app.selectbox(key="example").set_value(options[2]).run()
    assert app.session_state.sentence == options[2]
    assert app.session_state.reference == next(e for e in json.loads(
        (ROOT / "assets/examples.json").read_text(encoding="utf-8"))["examples"] if e["de"] == options[2])["en"]


def test_a_what_if_choice_does_not_carry_over_to_a_new_sentence(app):
    typed(app, "Ein Mann fährt Fahrrad.")
    view(app, "trace")
    app.session_state.what_if = trace_data(app)["steps"][0]["others"][0]
    app.run()
    assert "What-if translation" in markdown(app)
    typed(app, "Eine Frau singt auf einer Bühne.")
    assert app.session_state.what_if == "(the model's choice)" and trace_data(app)["whatif"] is None
    assert "What-if translation" not in markdown(app)


def test_the_page_counts_layers_and_heads_from_the_config(monkeypatch, tmp_path, tiny_model):
    """Nothing on the page hard-codes the shipped model: a 2+2-layer, 4-head, d_model 16 checkpoint works
    in every view (the position curves used to ask for dimension 128)."""
    save_checkpoint(tiny_model, Vocab(GERMAN), Vocab(ENGLISH), tmp_path / "tiny")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(tmp_path / "tiny"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["view"] = "cross"
    typed(at.run(), "ein hund läuft .")
    assert "2+2 layers, 4 heads" in "\n".join(c.value for c in at.caption)
    data = maps_data(at)[0]
    assert (data["layers"], data["heads"]) == (2, 4)  # the browser's layer and head switches
    for slug in ["enc", "dec", "trace", "positions", "ablate", "beam"]:
        view(at, slug)
        assert not at.error, (slug, at.error)
    view(at, "positions")
    assert at.multiselect(key="pos_dims").value == [0, 1, 2, 4, 8]
    neighbours = next(c.value for c in at.caption if "Mean cosine of neighbouring" in c.value)
    assert "nan" not in neighbours and "(24 positions): " in neighbours and "past it" not in neighbours  # 24 < 46


def test_a_link_restores_view_layer_and_head(monkeypatch):
    at = from_url(monkeypatch, s="Zwei Männer spielen Fußball auf einer Wiese.", view="enc", layer="2", head="5")
    assert not at.exception and not at.warning
    assert at.session_state.view == "enc"
    assert charts(at)[0]["layout"]["title"]["text"] == "Encoder self-attention, layer 2, head 5"
    assert maps_data(at)[0]["pick"] == {"layer": 1, "head": 4, "draw": "map", "stretch": False}
    assert dict(at.query_params) == {"s": "Zwei Männer spielen Fußball auf einer Wiese.", "view": "enc",
                                     "layer": "2", "head": "5"}  # picks made in the browser: tests/test_browser.py


@pytest.mark.parametrize("cut", [1, 2])
def test_a_first_run_cut_short_reads_the_link_in_the_next_never_after_two(monkeypatch, cut):
    """A session's first run stopped before the link is read (as a new run stops it when the visitor types on a page
    that reconnected): the next run reads the link. Where the second is stopped too, the third draws the defaults:
    a link never holds up every run."""
    import streamlit as st

    import views.state

    flags, stopped = views.state.read_flags, []

    def cut_short():  # read_flags runs once per run that reads the link, before read_url
        if len(stopped) < cut:
            stopped.append(1)
            st.stop()
        return flags()
    monkeypatch.setattr(views.state, "read_flags", cut_short)
    at = from_url(monkeypatch, s="Zwei Männer spielen Fußball auf einer Wiese.", view="enc", layer="2", head="5")
    for _ in range(cut):
        assert not at.get("text_input") and not at.exception  # stopped before the box was drawn
        at.run()
    assert not at.exception and len(stopped) == cut
    if cut == 1:
        assert at.session_state.view == "enc" and at.text_input(key="sentence").value.startswith("Zwei Männer")
        assert maps_data(at)[0]["pick"] == {"layer": 1, "head": 4, "draw": "map", "stretch": False}
    else:  # the defaults: a first visit's walk, no sentence
        assert "view" not in at.session_state and not at.text_input(key="sentence").value
        assert at.info[0].value.startswith("Type a German sentence above")


def test_a_link_restores_step_ablation_reference_and_beam(monkeypatch):
    s = "Ein Mann fährt Fahrrad."
    at = from_url(monkeypatch, s=s, view="trace", step="3")
    assert at.session_state.trace_step == 3 and trace_data(at)["step"] == 2
    at = from_url(monkeypatch, s=s, view="ablate", off="cross.3,enc.1.4")
    assert at.pills(key="ablate_cross_2").value == list(range(8)) and at.pills(key="ablate_enc_0").value == [3]
    assert "--mask-heads enc.0.3,cross.2" in at.code[0].value  # the CLI's 0-based spec of the same heads
    at = from_url(monkeypatch, s=s, view="reference", ref="A man rides a bike.")
    assert at.text_input(key="reference").value == "A man rides a bike." and len(at.metric) == 3
    at = from_url(monkeypatch, s=s, view="beam", beam="2")
    assert at.slider(key="beam_width").value == 2 and "Beam search (width 2)" in markdown(at)


@pytest.mark.parametrize("params, note", [
    ({"view": "bogus"}, "view='bogus' is not one of"),
    ({"view": "cross", "layer": "9"}, "layer='9' is not a number from 1 to 3"),
    ({"view": "cross", "head": "x"}, "head='x' is not a number from 1 to 8"),
    ({"view": "ablate", "off": "cross.7.1"}, "names no head of this model"),
    ({"view": "beam", "beam": "99"}, "beam='99' is not a number from 1 to 8"),
    ({"view": "inside", "kind": "cross", "head": "9"}, "head='9' is not a number from 1 to 8"),
    ({"view": "inside", "kind": "bogus"}, "kind='bogus' is not one of enc, dec, cross"),
    ({"s": "Hund " * 4000}, "the sentence has 20,000 characters, more than the 2,000 the box takes"),
    ({"view": "cross", "vs": "sentence", "s2": "b" * 100_000}, "the second sentence (s2) has 100,000 characters"),
    ({"view": "reference", "ref": "a" * 2001}, "the reference (ref) has 2,001 characters"),
])
def test_bad_link_parameters_give_a_message_and_defaults(monkeypatch, params, note):
    at = from_url(monkeypatch, **{"s": "Ein Hund rennt.", **params})
    assert not at.exception and not at.error
    assert note in shown(at.warning[0].value)


@pytest.mark.parametrize("params", [{"view": "trace"}, {"view": "cross", "vs": "force"}])
def test_a_forced_word_the_step_does_not_offer_is_named(monkeypatch, translator, params):
    """The comparison forces one of the step's candidates; the trace any word of the model's vocabulary, as
    `model.translate --force` does (tests/test_smaller_things.py): a word outside it is named."""
    s = "Ein Mann fährt Fahrrad."
    step = translator.translate(s).steps[2]
    offered = [t for t, _ in step.top if t != step.token]
    assert "woman" not in offered and "qwxzy" not in translator.tgt_vocab.stoi
    word = "woman" if params["view"] == "cross" else "qwxzy"
    at = from_url(monkeypatch, s=s, step="3", whatif=word, **params)
    assert not at.exception and not at.error
    assert (f"whatif='woman' is not one of the words step 3 could have said ({', '.join(offered)})"
            if word == "woman" else "whatif='qwxzy' is not a word of the model's English vocabulary") \
        in shown(at.warning[0].value)
    assert dict(at.query_params).get("whatif") != word
    at = from_url(monkeypatch, s=s, step="3", whatif=offered[1], **params)  # a word the step offers is kept
    assert not at.exception and not at.warning
    text = headers(at) if params["view"] == "cross" else shown(markdown(at))  # the comparison's heading, or the trace
    assert f"forced to “{offered[1]}”" in text and dict(at.query_params)["whatif"] == offered[1]


def test_an_inside_link_restores_kind_layer_head_and_clamps_the_query(monkeypatch):
    at = from_url(monkeypatch, s="Ein Hund rennt.", view="inside", kind="enc", layer="2", head="3", query="99")
    assert not at.exception and not at.warning
    data = component_data(at, "inside")
    n = len(data["queries"])
    assert (data["kind"], data["pick"]) == ("enc", {"layer": 1, "head": 2, "query": n - 1})  # the last token
    assert dict(at.query_params)["query"] == str(n - 1)


def test_a_step_past_the_end_is_clamped(monkeypatch):
    at = from_url(monkeypatch, s="Ein Hund rennt.", view="trace", step="40")
    n = len(steps_table(at))
    assert at.session_state.trace_step == n and trace_data(at)["step"] == n - 1


@pytest.mark.parametrize("device, says", [("tpu", "unknown device 'tpu'"), ("CPU", "unknown device 'CPU'"),
                                          ("cuda", "CUDA is not available here")])
def test_a_bad_device_is_the_pages_own_message(monkeypatch, device, says):
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setenv("TRANSFORMER_DEVICE", device)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "could not be started" in at.error[0].value and says in shown(at.error[0].value)
    assert "cpu, cuda, cuda:N, mps" in shown(at.error[0].value) or device == "cuda"


def test_logit_lens_last_layer_is_the_steps_real_choice(app):
    typed(app, "Zwei Männer spielen Fußball auf einer Wiese.")
    view(app, "trace")
    data = trace_data(app)
    lens, step = data["lens"], steps_table(app).iloc[1]  # step 2
    assert len(lens["chosen"]) == 3  # after decoder layers 1, 2, 3
    assert lens["chosen"][-1][1] == pytest.approx(step["probability"], abs=1e-4)
    assert lens["top"][-1][1][0] == step["token"]


def test_inside_a_head_and_source_flow_views(app, translator):
    typed(app, "Zwei Männer spielen Fußball auf einer Wiese.")
    view(app, "inside")
    app.segmented_control(key="inside_kind").set_value("dec").run()
    app.session_state.inside_query = 3  # as a link sets it (the browser's own picks: test_instant)
    app.run()
    assert not app.exception
    data = component_data(app, "inside")
    inside = translator.inside("Zwei Männer spielen Fußball auf einer Wiese.").sublayers["dec"]
    for name in ("x", "q", "k", "v", "scores", "weights", "heads", "layer_output"):  # every layer, head and query
        np.testing.assert_allclose(decoded(data["arrays"][name]), inside[name], rtol=1e-5, atol=1e-5)  # float32
    scores = next(c for c in charts(app) if "softmax" in json.dumps(c["layout"].get("annotations", "")))
    text = scores["data"][2]["text"]  # the weights' labels: query 3 may see keys 0-3, the rest is the future
    assert "masked" not in text[:4] and text[4:] == ["masked"] * (len(text) - 4)
    assert abs(sum(float(t) for t in text[:4]) - 1) < 0.003  # 3 decimals each
    view(app, "flow")
    assert not app.exception and len(charts(app)) == 2


def test_a_failing_view_is_the_pages_own_message(app, monkeypatch):
    import views.flow

    def broken(result):
        raise RuntimeError("boom")

    monkeypatch.setattr(views.flow, "coverage", broken)
    typed(app, "Ein Hund rennt durch den Schnee.")
    view(app, "flow")
    assert "This view could not be drawn (RuntimeError)" in app.error[0].value
    assert "boom" not in app.error[0].value  # details go to the server log, not the page


def test_saved_pictures_are_2x_png_or_svg_and_say_what_they_show(cross):
    typed(cross, "Zwei Hunde spielen im Schnee.")
    data = maps_data(cross)[0]  # the browser names the camera's file after the pick (views/maps.js)
    assert data["image_format"] == "png" and data["names"][2][8] == "cross-layer3-mean"
    assert data["names"][2][2] == "cross-layer3-head3"
    title = charts(cross)[0]["layout"]["title"]
    assert title["text"] == "Cross-attention, layer 3, mean of the 8 heads"
    assert title["subtitle"]["text"] == "Zwei Hunde spielen im Schnee."  # a saved picture names its sentence
    assert not cross.get("download_button")  # the export section makes its buttons only while open
    cross.session_state["downloads_open"] = True  # opened (the browser's click on it reruns the view)
    cross.run()
    assert {"Result (JSON)", "All maps (.npz)", "Step trace (CSV)"} <= {b.label for b in cross.get("download_button")}
    cross.segmented_control(key="image_format_pick").set_value("SVG").run()
    assert maps_data(cross)[0]["image_format"] == "svg"
    cross.session_state["downloads_open"] = False  # closed again: the choice stays
    cross.run()
    assert maps_data(cross)[0]["image_format"] == "svg" and not cross.get("download_button")
    view(cross, "trace")
    assert trace_data(cross)["image_format"] == "svg"
    view(cross, "positions")  # a chart (views/figure.js): the same choice
    assert [f["image_format"] for f in figure_data(cross)] == ["svg"] * len(figure_data(cross)) and figure_data(cross)


HOSTILE_TEXT = "**x** [a](http://x) $$x$$ <b>y</b> javascript:alert(1) `c` Hund\u200b\u0007"

# The page's odd inputs in two sentences, each run through every view once: a sentence of one token (a NUL and 500
# letters: only_nul and one_long_token), and all the others in one, after HOSTILE_TEXT.
ODD_SENTENCES = {"one_token": ODD_INPUTS["only_nul"] + ODD_INPUTS["one_long_token"],
                 "all_in_one": " ".join([HOSTILE_TEXT] + [text for name, text in ODD_INPUTS.items()
                                                          if name not in ("only_nul", "one_long_token")])}


@pytest.mark.parametrize("name", ODD_SENTENCES)
def test_odd_and_hostile_input_gets_through_every_view_as_text(app, name):
    """Control, zero-width and bidi characters, a NUL byte, a 500-letter token, numbers or punctuation, Markdown,
    LaTeX and HTML (what a pasted text brings): every view draws (or says why not) without an error or an exception,
    the attention views draw their maps (something unknown is still a token), and what the user typed (and what the
    model wrote from it) is text in every view: no bold, no link, no formula, no tag, wherever it reaches a markdown
    element (a sentence is not the page's markup)."""
    from views.registry import VIEWS

    typed(app, ODD_SENTENCES[name])
    for view in VIEWS:
        show_view(app, view)
        assert not app.exception and not app.error, (view, app.exception, [e.value for e in app.error])
        if "attention" in VIEWS[view].label:  # something unknown is still a token: the maps are drawn
            assert charts(app), view
        shown = [m.value for m in (*app.markdown, *app.caption) if "<style>" not in m.value]
        for raw in ("**x**", "[a](http://x)", "$$x$$", "<b>", "`c`"):
            assert not any(raw in text for text in shown), (view, raw)


def test_the_positions_views_long_sentence_is_translated_by_both_models_when_its_fold_is_opened(app, shipped_models):
    """The fold asks first and translates only when opened; then each model's output is what that model, loaded on
    its own, gives for the sentence (the learned model reads 66 positions, more than any training sentence)."""
    from views.calls import MODEL_NAMES, models
    from views.positions import LONG_SENTENCE

    typed(app, "Zwei Hunde spielen im Schnee.")
    view(app, "positions")
    fold = next(e for e in app.expander if "which model copes?" in e.label)
    assert not fold.markdown  # nothing translated yet
    app.session_state["pos_long_open"] = True
    app.run()
    assert not app.exception, app.exception
    fold = next(e for e in app.expander if "which model copes?" in e.label)
    lines = [m.value for m in fold.markdown]
    assert shown(lines[0]) == f"> {LONG_SENTENCE}"
    assert len(models()) == 2
    for slug, checkpoint in models().items():
        expected = shipped_models(checkpoint).translate(LONG_SENTENCE)
        i = lines.index(f"**{MODEL_NAMES[slug]}** ({len(expected.src_tokens)} source positions, "
                        f"{len(expected.steps)} output tokens)")
        assert shown(lines[i + 1]) == expected.text
