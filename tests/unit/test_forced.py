"""One forced pass under every analysis: `Translator.force` makes the sentence forced through its output, one
`Translator.capture` serves the analyses of that output, and nothing live is kept on the translator or in a result."""

import pickle
import threading

import numpy as np
import pytest
import torch

from model.attribute import Attributor, attribute
from model.errors import InputError
from model.faithfulness import explanations
from model.result import Forced
from model.translator import capture_maps
from model.vocab import SOS_ID, UNK_ID

SENTENCE = "Ein Hund läuft im Park."


def test_force_defaults_to_the_greedy_translation(tiny_translator):
    tr = tiny_translator
    f = tr.force(SENTENCE)
    r = tr.translate(SENTENCE)
    assert list(f.output_tokens) == [s.token for s in r.steps]
    assert list(f.src_tokens) == r.src_tokens and f.cut == r.truncated
    assert f.output_ids == tuple(tr.tgt_vocab.stoi[t] for t in f.output_tokens)
    assert f.tgt_ids == (SOS_ID, *f.output_ids[:-1]) and f.tgt_tokens == ["<sos>", *f.output_tokens[:-1]]
    src, tgt, out = tr.inputs(f)
    assert src.tolist() == [list(f.src_ids)] and tgt.tolist() == [list(f.tgt_ids)] and out.tolist() == list(f.output_ids)


def test_force_reads_a_reference_with_unknown_words_as_unk(tiny_translator):
    f = tiny_translator.force(SENTENCE, reference="A dog sleeps in the park.")
    assert f.output_tokens == ("a", "dog", "sleeps", "in", "the", "park", ".", "<eos>")
    assert f.output_ids[2] == UNK_ID and f.output_ids[1] == tiny_translator.tgt_vocab.stoi["dog"]


@pytest.mark.parametrize("output, reference, message", [
    ([], None, "non-empty list"), ("a dog", None, "non-empty list"), (["a", "cat", "<eos>"], None, "'cat'"),
    (["<pad>"], None, "'<pad>'"), (["a"] * 25, None, "24 positions"), (None, "  ", "reference is empty")])
def test_force_refuses_what_the_model_cannot_read(tiny_translator, output, reference, message):
    with pytest.raises(InputError, match=message):
        tiny_translator.force(SENTENCE, output, reference)


def test_forced_is_frozen_and_plain(tiny_translator):
    f = tiny_translator.force(SENTENCE)
    with pytest.raises(AttributeError):
        f.output_tokens = ("a",)
    assert pickle.loads(pickle.dumps(f)) == f and isinstance(f, Forced)


def test_one_capture_gives_the_maps_a_translation_shows(tiny_translator):
    tr = tiny_translator
    f = tr.force(SENTENCE, ["a", "dog", "runs", "<eos>"])
    maps = capture_maps(tr.capture(f))
    r = tr.analyze(SENTENCE, list(f.output_ids))
    for kind, shown in (("enc", r.encoder_attentions), ("dec", r.decoder_attentions), ("cross", r.cross_attentions)):
        assert np.array_equal(maps[kind], shown), kind  # bit for bit


def captured_passes(translator, run) -> int:
    """How many forward passes with a capture `run` made through the translator's model."""
    seen = []
    hook = translator.model.register_forward_pre_hook(
        lambda m, args, kwargs: seen.append(1) if len(args) > 2 and args[2].capture is not None else None,
        with_kwargs=True)
    try:
        run()
    finally:
        hook.remove()
    return len(seen)


def test_the_explanations_of_one_output_come_from_one_captured_pass(tiny_translator):
    """Attention, norms, ALTI+ and value zeroing of the Faithfulness view are read off one capture (they took four
    passes before the forced pass was shared)."""
    out = [s.token for s in tiny_translator.translate(SENTENCE).steps]
    assert captured_passes(tiny_translator, lambda: explanations(tiny_translator, SENTENCE, out, ig_steps=[])) == 1


def test_attributions_leave_the_translator_as_it_was(tiny_translator):
    """captum's hooks run on a copy of the model kept beside it, never hung on the shared translator."""
    before = dict(vars(tiny_translator))
    attribute(tiny_translator, tiny_translator.force(SENTENCE), "input_x_gradient")
    assert vars(tiny_translator).keys() == before.keys()
    assert all(vars(tiny_translator)[k] is v for k, v in before.items())


def test_explanations_hold_plain_arrays_only(tiny_translator):
    scores = explanations(tiny_translator, SENTENCE, [s.token for s in tiny_translator.translate(SENTENCE).steps])
    found = [type(v) for side in scores.values() for v in side.values()]
    assert set(found) == {np.ndarray}
    data = pickle.dumps(scores)
    assert len(data) < 1_000_000 and b"torch" not in data


def test_faithfulness_scores_beside_two_threads_of_attributions_equal_their_solo_runs(tiny_translator):
    tr = tiny_translator
    out = [s.token for s in tr.translate(SENTENCE).steps]
    solo_scores = explanations(tr, SENTENCE, out, ig_steps=[0])
    solo_attr = attribute(tr, tr.force("Zwei Männer laufen."), "input_x_gradient").source
    stop, found, errors = threading.Event(), [], []

    def attributions():
        try:
            while not stop.is_set():
                found.append(attribute(tr, tr.force("Zwei Männer laufen."), "input_x_gradient").source)
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)
    threads = [threading.Thread(target=attributions) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        together = [explanations(tr, SENTENCE, out, ig_steps=[0]) for _ in range(3)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors and found
    for scores in together:
        for side in solo_scores:
            for method, a in solo_scores[side].items():
                np.testing.assert_array_equal(scores[side][method], a, err_msg=f"{side} {method}")
    for a in found:
        np.testing.assert_array_equal(a, solo_attr)


def test_an_attributor_reads_its_inputs_off_the_forced_pass(tiny_translator):
    f = tiny_translator.force(SENTENCE, reference="Two men run.")
    a = Attributor(tiny_translator, f)
    assert a.src.tolist() == [list(f.src_ids)] and a.tgt.tolist() == [list(f.tgt_ids)]
    assert a.out.tolist() == list(f.output_ids) and a.T == len(f.output_ids) and a.output_tokens == list(f.output_tokens)
    assert torch.equal(a.out, tiny_translator.inputs(f)[2])
