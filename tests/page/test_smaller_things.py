"""The smaller things seen on a phone, at a projector and in the dark theme, each fixed at its root: the training
replay's map title is never cut, its curves' axis says what it is and whose run they are; the decoder
self-attention of step 1 says why it is one solid block; the decoding trace forces any word of the model's
vocabulary, as the command line does, and marks it in the result; the Contributions maps have room; labelled bars
draw no gridline through their numbers; a map's CSV names its rows as the page does."""

import json

import pytest

from conftest import component_data, figure_data, from_url, markdown, shown, show_view


SENTENCE = "Ein Mann fährt Fahrrad."


ANY_WORD = "(another word…)"  # views.state.ANY_WORD, as the browser's what-if box offers it


@pytest.mark.slow
def test_the_training_view_names_the_run_it_replays_beside_the_curves(monkeypatch):
    """The page's model is the learned-position one; the shipped replay is the sinusoidal model's training: the
    curves say whose run they are, and a line beside them says that the model picked above is not it."""
    from views.training import manifest

    m = manifest()
    if not m or m["model"] == "learned":
        pytest.skip("no replay of another model than the page's default")
    at = from_url(monkeypatch, s=m["examples"][0], view="training", at="0", kind="dec")
    assert not at.exception and not at.warning
    assert any(f"replay the {m['model']}-position model's training" in c.value and "(learned positions)" in c.value
               for c in at.caption)
    curves = [json.loads(c["figure"])["layout"] for c in figure_data(at)][:3]
    assert all(f"{m['model']}-position" in c["title"]["subtitle"]["text"] for c in curves), curves
    assert any("has only <sos> to look at" in shown(c.value) for c in at.caption)  # the dec map's first row


@pytest.mark.slow
def test_a_link_forces_any_word_and_the_page_marks_it(monkeypatch, translator):
    """whatif= takes any word of the vocabulary (the step's candidates were the only ones before): the trace decodes
    on from it, marks it, and keeps it in the link; the vocabulary's box shows it."""
    step = translator.translate(SENTENCE).steps[2]
    assert "woman" not in [t for t, _ in step.top]
    at = from_url(monkeypatch, s=SENTENCE, view="trace", step="3", whatif="woman")
    assert not at.exception and not at.warning
    text = markdown(at)
    assert "forced to “woman”" in shown(text) and 'title="forced at step 3"' in text
    assert dict(at.query_params)["whatif"] == "woman"
    assert at.selectbox(key="whatif_word").value == "woman"
    data = component_data(at, "trace")
    assert data["whatif"] == "woman" and "woman" in data["steps"][2]["others"]  # the browser's box shows it too


@pytest.mark.slow
def test_another_word_opens_the_whole_vocabulary(app, translator):
    """The browser's what-if box ends with "(another word…)": picking it opens a box with every word of the
    vocabulary, the step's candidates first; a word picked there is forced as a candidate is."""
    app.text_input(key="sentence").input(SENTENCE).run()
    show_view(app, "trace")
    app.session_state.trace_step, app.session_state.what_if = 2, ANY_WORD  # what the browser's pick asks
    app.run()
    assert not app.exception
    box = app.selectbox(key="whatif_word")
    want = translator.translate(SENTENCE).steps[1]
    candidates = [t for t, _ in want.top if t != want.token]
    assert box.value is None and box.options[:len(candidates)] == candidates
    assert "dog" in box.options and want.token not in box.options and "<pad>" not in box.options
    assert len(box.options) == len(translator.tgt_vocab.itos) - 3  # less <pad>, <sos> and the step's own word
    box.set_value("dog").run()
    assert not app.exception
    assert "forced to “dog”" in shown(markdown(app)) and dict(app.query_params)["whatif"] == "dog"
