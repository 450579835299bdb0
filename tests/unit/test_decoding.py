"""Decoding: the cached incremental route must equal one teacher-forced pass; beam 1 is greedy."""

import numpy as np
import pytest
import torch

from conftest import random_batch
from model.decoding import beam_search, greedy_decode
from model.errors import InputError
from model.vocab import EOS_ID, SOS_ID, tokenize


def test_cached_decoding_equals_a_full_forward_pass(tiny_model):
    """Logits and every map of incremental decoding equal one teacher-forced pass over its output."""
    src, _ = random_batch(tiny_model.cfg, B=3)
    dec = greedy_decode(tiny_model, src, max_len=8, top_k=3)
    tgt_in = torch.cat([torch.full((3, 1), SOS_ID), dec.ids[:, :-1]], 1)  # (B, N)
    full = tiny_model(src, tgt_in)
    full_dec, full_cross = torch.stack(full.decoder_attentions), torch.stack(full.cross_attentions)
    torch.testing.assert_close(dec.encoder_attentions, torch.stack(full.encoder_attentions))
    for b in range(3):
        n = int(dec.lengths[b])  # past a sentence's <eos> the batch rows are junk
        # greedy's choices are the argmax of the full pass's logits
        assert torch.equal(full.logits[b, :n].argmax(-1), dec.ids[b, :n])
        probs = full.logits[b, :n].softmax(-1).gather(-1, dec.ids[b, :n, None]).squeeze(-1)
        torch.testing.assert_close(dec.probs[b, :n], probs, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(dec.decoder_attentions[:, b, :, :n, :n], full_dec[:, b, :, :n, :n],
                                   atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(dec.cross_attentions[:, b, :, :n], full_cross[:, b, :, :n], atol=1e-5, rtol=1e-4)
    assert dec.lengths.max() == 8 and dec.lengths.min() < 8  # both an unfinished and a finished sentence


def test_step_statistics_are_consistent(tiny_model):
    src, _ = random_batch(tiny_model.cfg, B=2)
    dec = greedy_decode(tiny_model, src, max_len=5, top_k=4)
    for b in range(2):
        n = int(dec.lengths[b])
        assert torch.equal(dec.top_ids[b, :n, 0], dec.ids[b, :n])  # greedy picks the most likely
        torch.testing.assert_close(dec.top_probs[b, :n, 0], dec.probs[b, :n])
    assert (dec.top_probs[..., :-1] >= dec.top_probs[..., 1:]).all()
    V = tiny_model.cfg.tgt_vocab_size
    assert ((dec.entropy >= 0) & (dec.entropy <= np.log(V) + 1e-5)).all()


def test_forcing_the_token_greedy_would_choose_changes_nothing(tiny_model):
    src, _ = random_batch(tiny_model.cfg, B=1)
    plain = greedy_decode(tiny_model, src, max_len=6)
    forced = greedy_decode(tiny_model, src, max_len=6, force={2: int(plain.ids[0, 2])})
    assert torch.equal(plain.ids, forced.ids)
    assert torch.equal(plain.cross_attentions, forced.cross_attentions)
    other = (int(plain.ids[0, 2]) + 1 - 4) % (tiny_model.cfg.tgt_vocab_size - 4) + 4
    changed = greedy_decode(tiny_model, src, max_len=6, force={2: other})
    assert int(changed.ids[0, 2]) == other
    assert torch.equal(changed.ids[0, :2], plain.ids[0, :2])


def test_beam_width_one_is_greedy(tiny_model):
    for seed in range(4):
        src, _ = random_batch(tiny_model.cfg, B=1, seed=seed)
        greedy = greedy_decode(tiny_model, src, max_len=10, need_weights=False)
        n = int(greedy.lengths[0])
        best = beam_search(tiny_model, src, beam=1, max_len=10).hypotheses[0]
        assert best.ids == greedy.ids[0, :n].tolist()


def test_beam_search_finds_at_least_as_likely_an_output(tiny_model):
    """Wider beams never return a hypothesis with a worse normalised score than width 1."""
    src, _ = random_batch(tiny_model.cfg, B=1, seed=5)
    one = beam_search(tiny_model, src, beam=1, max_len=10).hypotheses[0]
    four = beam_search(tiny_model, src, beam=4, max_len=10).hypotheses
    assert len(four) >= 1 and four[0].normalized >= one.normalized - 1e-6
    assert [h.normalized for h in four] == sorted((h.normalized for h in four), reverse=True)


def test_batched_translation_equals_one_at_a_time(tiny_translator):
    sentences = ["Ein Hund läuft im Park.", "Zwei Männer.", "Ein Hund."]
    batch = tiny_translator.translate_batch(sentences)
    for s, b in zip(sentences, batch):
        one = tiny_translator.translate(s)
        assert one.output_tokens == b.output_tokens
        np.testing.assert_allclose(one.cross_attentions, b.cross_attentions, atol=1e-5)
        np.testing.assert_allclose(one.encoder_attentions, b.encoder_attentions, atol=1e-5)


def test_result_object_from_decoding_equals_teacher_forced_analysis(tiny_translator):
    r = tiny_translator.translate("Ein Hund läuft im Park.", max_len=7)
    ids = tiny_translator.tgt_vocab.encode([s.token for s in r.steps])
    a = tiny_translator.analyze("Ein Hund läuft im Park.", ids)
    for x, y in [(r.encoder_attentions, a.encoder_attentions), (r.decoder_attentions, a.decoder_attentions),
                 (r.cross_attentions, a.cross_attentions)]:
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, atol=1e-5)
    assert [s.token for s in r.steps] == [s.token for s in a.steps]
    np.testing.assert_allclose([s.prob for s in r.steps], [s.prob for s in a.steps], atol=1e-5)


def test_result_shapes_and_labels(tiny_translator):
    r = tiny_translator.translate("Ein Hund xyz läuft.", max_len=6)
    L, H = 2, 4
    S, T = len(r.src_tokens), len(r.tgt_tokens)
    assert r.src_tokens == ["<sos>", "ein", "hund", "xyz", "läuft", ".", "<eos>"]
    assert r.src_unknown == [False, False, False, True, False, False, False]
    assert r.encoder_attentions.shape == (L, H, S, S)
    assert r.decoder_attentions.shape == (L, H, T, T)
    assert r.cross_attentions.shape == (L, H, T, S)
    assert len(r.steps) == T and r.tgt_tokens[0] == "<sos>"
    assert r.tgt_tokens[1:] == [s.token for s in r.steps[:-1]]
    ended = r.steps[-1].token == "<eos>"  # the output is every step's token but a final <eos>
    assert r.output_tokens == [s.token for s in r.steps][:len(r.steps) - ended]


def test_empty_and_whitespace_input_raise_input_error(tiny_translator):
    for bad in ["", "   ", "\n\t "]:
        with pytest.raises(InputError, match="empty"):
            tiny_translator.translate(bad)


def test_too_long_input_is_cut_to_the_positions(tiny_translator):
    r = tiny_translator.translate(" ".join(["hund"] * 40), max_len=3)
    assert len(r.src_tokens) == tiny_translator.cfg.max_positions
    assert r.truncated == 40 - (tiny_translator.cfg.max_positions - 2)


def test_any_unicode_is_accepted(tiny_translator):
    r = tiny_translator.translate("日本語 😀 <script>alert(1)</script> Ω", max_len=3)
    assert r.src_tokens[1:-1] == tokenize("日本語 😀 <script>alert(1)</script> Ω", "de")  # kept as text
    assert all(r.src_unknown[1:-1])  # none of it is in the tiny vocabulary


def test_beam_translation_has_maps(tiny_translator):
    r = tiny_translator.translate("Ein Hund läuft.", beam=3, max_len=6)
    assert r.cross_attentions.shape[2] == len(r.tgt_tokens)
    assert [s.token for s in r.steps] == tiny_translator.beam("Ein Hund läuft.", 3, max_len=6).nbest[0].tokens
    with pytest.raises(InputError):
        tiny_translator.translate("Ein Hund.", beam=0)


def test_max_output_respects_positions(tiny_translator):
    dec = greedy_decode(tiny_translator.model, torch.tensor([[SOS_ID, 5, EOS_ID]]), max_len=500)
    assert dec.ids.size(1) <= tiny_translator.cfg.max_positions
