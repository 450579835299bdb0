"""Interventions are exact: head masks, forced tokens, teacher-forced references, beams."""

import json
import threading

import numpy as np
import pytest
import torch

from conftest import ENGLISH, GERMAN, tiny_config
from model import evaluate, head_importance, translate
from model.errors import InputError
from model.transformer import Transformer
from model.translator import Translator
from model.vocab import Vocab

SENT = "Ein Hund läuft im Park."


@pytest.fixture
def tr():
    torch.manual_seed(3)
    return Translator(Transformer(tiny_config()).eval(), Vocab(GERMAN), Vocab(ENGLISH))


def test_masking_nothing_is_the_plain_model_bit_for_bit(tr):
    a, b = tr.translate(SENT), tr.translate(SENT, heads_off="")
    assert a.output_tokens == b.output_tokens
    assert np.array_equal(a.cross_attentions, b.cross_attentions)
    assert [s.prob for s in a.steps] == [s.prob for s in b.steps]


def test_masking_every_head_still_answers(tr):
    r = tr.translate(SENT, heads_off="*.*.*", max_len=6)
    ids = tr.tgt_vocab.encode([s.token for s in r.steps])
    forced = tr.analyze(SENT, ids, heads_off="*.*.*")  # a second route: one teacher-forced pass, same mask
    np.testing.assert_allclose([s.prob for s in r.steps], [s.prob for s in forced.steps], atol=1e-5)
    np.testing.assert_allclose(r.cross_attentions.sum(-1), 1.0, atol=1e-5)  # maps show what the heads computed


def test_a_masked_head_changes_the_probabilities(tr):
    plain, masked = tr.translate(SENT, max_len=6), tr.translate(SENT, heads_off="cross.1.*", max_len=6)
    assert plain.steps[0].prob != masked.steps[0].prob


def test_concurrent_users_with_different_masks_get_their_own_results(tr):
    """Two requests at once on one shared model equal the same requests alone."""
    specs = ["enc.0.1,cross.1.*", "dec.1.2"]
    alone = {s: tr.translate(SENT, heads_off=s, max_len=8) for s in specs}
    together, errors = {}, []

    def work(spec):
        try:
            for _ in range(5):
                together.setdefault(spec, []).append(tr.translate(SENT, heads_off=spec, max_len=8))
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in specs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for s in specs:
        for r in together[s]:
            assert r.output_tokens == alone[s].output_tokens
            np.testing.assert_allclose(r.cross_attentions, alone[s].cross_attentions, atol=1e-6)
            np.testing.assert_allclose([x.prob for x in r.steps], [x.prob for x in alone[s].steps], atol=1e-6)
    assert alone[specs[0]].steps[0].prob != alone[specs[1]].steps[0].prob  # the two really differ


def test_forcing_the_models_own_choice_changes_nothing(tr):
    plain = tr.translate(SENT, max_len=8)
    same = tr.translate(SENT, max_len=8, force={2: plain.steps[2].token})
    assert same.output_tokens == plain.output_tokens
    assert np.array_equal(same.cross_attentions, plain.cross_attentions)


def test_forcing_another_token_continues_from_it(tr):
    plain = tr.translate(SENT, max_len=8)
    other = next(t for t, _ in plain.steps[1].top if t != plain.steps[1].token)
    forced = tr.translate(SENT, max_len=8, force={1: other})
    assert forced.steps[1].token == other and forced.steps[0].token == plain.steps[0].token
    assert forced.steps[1].prob == pytest.approx(dict(plain.steps[1].top)[other], abs=1e-6)


def test_forcing_errors(tr):
    with pytest.raises(InputError, match="not in the model's English vocabulary"):
        tr.translate(SENT, force={0: "zebra"})
    with pytest.raises(InputError, match="outside the output"):
        tr.translate(SENT, force={80: "dog"})
    with pytest.raises(InputError, match="beyond the output, which ends after step 0"):
        tr.translate(SENT, force={0: "<eos>", 2: "dog"})  # <eos> first: nothing comes after it
    with pytest.raises(InputError, match="greedy decoding"):  # beam search would silently ignore it
        tr.translate(SENT, beam=3, force={0: "dog"})


def test_teacher_forced_probabilities_equal_free_running_where_they_agree(tr):
    free = tr.translate(SENT, max_len=8)
    ref = " ".join(s.token for s in free.steps if s.token != "<eos>")
    scored = tr.score_reference(SENT, ref)
    forced, loss = scored.translation, scored.loss
    k = len(free.steps)
    np.testing.assert_allclose([s.prob for s in forced.steps[:k]], [s.prob for s in free.steps[:k]], atol=1e-5)
    np.testing.assert_allclose(forced.cross_attentions[:, :, :k], free.cross_attentions[:, :, :k], atol=1e-5)
    # a reference that differs from step 2 on agrees before it
    diverging = tr.score_reference(SENT, f"{free.steps[0].token} {free.steps[1].token} zebra x").translation
    np.testing.assert_allclose([s.prob for s in diverging.steps[:2]], [s.prob for s in free.steps[:2]], atol=1e-5)
    assert diverging.steps[2].token == "<unk>"  # "zebra" is not in the tiny vocabulary
    assert loss == pytest.approx(-np.mean(np.log([s.prob for s in forced.steps])), rel=1e-6)
    assert scored.ppl == pytest.approx(np.exp(loss), rel=1e-12)


def test_empty_reference_is_a_clear_error(tr):
    with pytest.raises(InputError, match="reference is empty"):
        tr.score_reference(SENT, "   ")


def test_beam_width_one_equals_greedy_and_beam_trace(tr):
    greedy = tr.translate(SENT, max_len=10)
    one = tr.beam(SENT, beam=1, max_len=10)
    assert one.width == 1 and one.best.output_tokens == greedy.output_tokens
    four = tr.beam(SENT, beam=4, max_len=10)
    assert four.width == 4 and four.nbest[0].tokens == [s.token for s in four.best.steps]
    assert {c["status"] for step in four.trace for c in step} <= {"kept", "finished", "pruned"}
    assert all(sum(c["status"] == "kept" for c in step) <= 4 for step in four.trace)
    # two routes: the search's summed log-probability equals the teacher-forced pass over its output
    top = four.nbest[0]
    assert top.score == pytest.approx(sum(np.log(s.prob) for s in four.best.steps), abs=1e-4)
    assert top.normalized == pytest.approx(top.score / len(top.tokens) ** 0.6, rel=1e-9)
    with pytest.raises(InputError, match="beam width"):
        tr.beam(SENT, beam=0)


def test_cli_mask_heads_and_force(tmp_path, tiny_checkpoint, call):
    ck = tiny_checkpoint
    status, out, err = call(translate.main, "--checkpoint", ck, "--mask-heads", "enc.0.9", stdin="Ein Hund.\n")
    assert status == 2 and "no head 9" in err and "Traceback" not in err
    status, out, err = call(translate.main, "--checkpoint", ck, "--force", "0:zebra", stdin="Ein Hund.\n")
    assert status == 0 and out == "\n" and "not in the model's English vocabulary" in err
    status, out, err = call(translate.main, "--checkpoint", ck, "--force", "x", stdin="Ein Hund.\n")
    assert status == 2 and "STEP:TOKEN" in err
    status, out, err = call(translate.main, "--checkpoint", ck, "--force", "0:dog", "--mask-heads", "cross.1",
                            stdin="Ein Hund.\n")
    assert status == 0 and out.split()[0] == "dog"
    (tmp_path / "s").write_text("Ein Hund.\n")
    (tmp_path / "r").write_text("A dog.\n")
    status, out, err = call(evaluate.main, "--checkpoint", ck, "--src", tmp_path / "s", "--ref", tmp_path / "r",
                            "--mask-heads", "*.*.*")
    assert status == 0 and '"mask_heads": "*.*.*"' in out


def test_head_importance_cli_agrees_with_evaluate(tmp_path, tiny_checkpoint, call):
    """Two routes: the importance table's entry for a head equals evaluate --mask-heads for that head."""
    (tmp_path / "s").write_text("Ein Hund läuft im Park.\nZwei Männer.\n")
    (tmp_path / "r").write_text("A dog runs in the park.\nTwo men.\n")
    args = ["--checkpoint", tiny_checkpoint, "--src", tmp_path / "s", "--ref", tmp_path / "r"]
    status, _, err = call(head_importance.main, *args, "--out", tmp_path / "hi.json")
    assert status == 0, err
    table = json.loads((tmp_path / "hi.json").read_text())
    assert set(table["kinds"]) == {"enc", "dec", "cross"}
    assert all(len(v["loss"]) == 2 and len(v["loss"][0]) == 4 for v in table["kinds"].values())
    assert table["bootstrap"] == {"resamples": 1000, "seed": 1234, "level": 0.95}
    for v in table["kinds"].values():
        assert np.array(v["bleu_drop_ci"]).shape == np.array(v["loss_rise_ci"]).shape == (2, 4, 2)
        assert all(lo <= hi for row in v["bleu_drop_ci"] + v["loss_rise_ci"] for lo, hi in row)
    one = json.loads(call(evaluate.main, *args, "--mask-heads", "cross.1.2")[1])
    assert table["kinds"]["cross"]["loss"][1][2] == one["loss"]
    assert table["kinds"]["cross"]["bleu"][1][2] == one["bleu"]
    base = json.loads(call(evaluate.main, *args)[1])
    assert table["baseline"]["loss"] == base["loss"]
    assert table["kinds"]["cross"]["loss"][1][2] != base["loss"]


def test_cli_reference_and_beam_json(tmp_path, tiny_checkpoint, call):
    ck = tiny_checkpoint
    (tmp_path / "s").write_text("Ein Hund läuft.\nZwei Männer.\n")
    (tmp_path / "r").write_text("A dog runs.\n\n")
    status, out, err = call(translate.main, "--checkpoint", ck, "--input", tmp_path / "s", "--json", "--reference",
                            tmp_path / "r")
    assert status == 0, err
    first, second = (json.loads(line) for line in out.splitlines())
    ref = first["reference"]
    assert ref["tokens"] == ["a", "dog", "runs", ".", "<eos>"]
    assert ref["loss"] == pytest.approx(-np.mean(np.log(ref["probs"])), rel=1e-6)
    assert second["reference"] is None and "line 2: the reference is empty" in err
    status, out, err = call(translate.main, "--checkpoint", ck, "--input", tmp_path / "s", "--reference", tmp_path / "r")
    assert status == 2 and "add --json" in err
    status, out, err = call(translate.main, "--checkpoint", ck, "--input", tmp_path / "s", "--json", "--beam", "3")
    obj = json.loads(out.splitlines()[0])
    assert obj["nbest"][0]["tokens"] == [s["token"] for s in obj["steps"]]
    assert {c["status"] for step in obj["beam_trace"] for c in step} <= {"kept", "finished", "pruned"}
