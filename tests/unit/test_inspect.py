"""Inside one head: the captured numbers explain the maps exactly, on a tiny model (on the shipped one: the same tests
in tests/integration/test_inspect.py).

Every identity is checked against a second route: the maps of a separate forward pass
without capture (Translator.analyze), the model's own weights applied in numpy, or the
next sublayer's captured input.
"""

import math

import numpy as np
import pytest
import torch

from conftest import assert_error_line, random_batch
from model import inspect as inspect_cli
from model.errors import InputError
from model.extras import KINDS, Extras
from model.flow import coverage, rollout
from model.result import Translation

SENTENCE = "Ein Hund läuft im Park."


@pytest.fixture(params=["tiny_translator"])
def any_translator(request):
    """The tiny model; tests/integration/test_inspect.py runs the tests that take it on the shipped checkpoint."""
    return request.getfixturevalue(request.param)


def sublayer_modules(model, kind, layer):
    """(attention module, its LayerNorm) of one sublayer."""
    if kind == "enc":
        m = model.encoder[layer]
        return m.self_attn, m.ln_self
    m = model.decoder[layer]
    return (m.self_attn, m.ln_self) if kind == "dec" else (m.cross_attn, m.ln_cross)


def linear(x, lin):
    """x @ W^T + b in float64 numpy: the second route to what an nn.Linear computed."""
    return x.astype(np.float64) @ lin.weight.detach().double().numpy().T + lin.bias.detach().double().numpy()


def layer_norm(x, ln):
    x = x.astype(np.float64)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + ln.eps) * ln.weight.detach().double().numpy() + ln.bias.detach().double().numpy()


def masked_softmax(scaled, mask):
    z = np.where(mask, scaled.astype(np.float64), -np.inf)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# capture in the model ---------------------------------------------------------------------------


def test_without_capture_nothing_changes_bit_for_bit(tiny_model, monkeypatch):
    src, tgt = random_batch(tiny_model.cfg, B=3)
    plain = tiny_model(src, tgt)
    capture = {}
    captured = tiny_model(src, tgt, Extras(capture=capture))
    assert torch.equal(plain.logits, captured.logits)
    for name in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
        for a, b in zip(getattr(plain, name), getattr(captured, name)):
            assert torch.equal(a, b)
    # the fast path still runs the fused kernel, once per attention sublayer; a capture takes the explicit one
    calls = []
    fused = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or fused(*a, **k))
    fast = tiny_model(src, tgt, Extras(need_weights=False))
    assert len(calls) == tiny_model.cfg.n_enc_layers + 2 * tiny_model.cfg.n_dec_layers
    assert fast.encoder_attentions is None
    calls.clear()
    tiny_model(src, tgt, Extras(capture={}, need_weights=False))
    assert calls == []


def test_capture_is_the_callers_and_nothing_stays_on_the_model(tiny_model):
    src, tgt = random_batch(tiny_model.cfg, B=2)
    before = {name: sorted(vars(m)) for name, m in tiny_model.named_modules()}
    first, second = {}, {}
    tiny_model(src, tgt, Extras(capture=first))
    tiny_model(src[:1], tgt[:1], Extras(capture=second))
    assert {name: sorted(vars(m)) for name, m in tiny_model.named_modules()} == before
    assert first["encoder"][0]["self"]["x"].shape[0] == 2 and second["encoder"][0]["self"]["x"].shape[0] == 1


def test_captured_values_have_the_documented_shapes_and_chain(tiny_model):
    cfg = tiny_model.cfg
    B, S, T, H, D = 3, 7, 6, cfg.n_heads, cfg.d_model
    hs = D // H
    src, tgt = random_batch(cfg, B, S, T)
    cap = {}
    out = tiny_model(src, tgt, Extras(capture=cap))
    for kind, layers, Tq, Tk in (("enc", [c["self"] for c in cap["encoder"]], S, S),
                                 ("dec", [c["self"] for c in cap["decoder"]], T, T),
                                 ("cross", [c["cross"] for c in cap["decoder"]], T, S)):
        for c in layers:
            assert c["x"].shape == c["attn_out"].shape == c["residual"].shape == c["normed"].shape == (B, Tq, D)
            assert c["kv"].shape == (B, Tk, D)
            assert c["q"].shape == c["heads"].shape == (B, H, Tq, hs)
            assert c["k"].shape == c["v"].shape == (B, H, Tk, hs)
            assert c["scores"].shape == c["scaled"].shape == c["weights"].shape == (B, H, Tq, Tk)
            assert c["mask"].dtype == torch.bool and c["mask"].shape == (B, 1, Tq, Tk)
            assert torch.equal(c["residual"], c["x"] + c["attn_out"])  # eval: dropout is the identity
    enc, dec = cap["encoder"], cap["decoder"]
    for i in range(len(enc) - 1):
        assert torch.equal(enc[i]["output"], enc[i + 1]["self"]["x"])
    for i in range(len(dec)):
        assert torch.equal(dec[i]["cross"]["kv"], enc[-1]["output"])  # the memory
        assert torch.equal(dec[i]["self"]["normed"], dec[i]["cross"]["x"])
        if i + 1 < len(dec):
            assert torch.equal(dec[i]["output"], dec[i + 1]["self"]["x"])
    assert torch.equal(tiny_model.generator(dec[-1]["output"]), out.logits)
    for i, m in enumerate(out.cross_attentions):
        assert torch.equal(dec[i]["cross"]["weights"], m)
    # padding: a padded source key may never be looked at
    assert torch.equal(cap["decoder"][0]["cross"]["mask"][:, 0, 0], src != cfg.pad_id)


# Inside: one sentence, one head ------------------------------------------------------------------


def test_a_head_trace_explains_the_map_and_the_layer(any_translator):
    tr = any_translator
    model, cfg = tr.model, tr.cfg
    inside = tr.inside(SENTENCE)
    ids = tr.tgt_vocab.encode(inside.output_tokens)
    maps = tr.analyze(SENTENCE, ids)  # a second forward pass, without capture
    assert inside.src_tokens == maps.src_tokens and inside.tgt_tokens == maps.tgt_tokens
    assert inside.output_tokens == [s.token for s in tr.translate(SENTENCE).steps]
    S, T = len(maps.src_tokens), len(maps.tgt_tokens)
    hs = cfg.d_model // cfg.n_heads
    for kind, expected in zip(KINDS, (maps.encoder_attentions, maps.decoder_attentions, maps.cross_attentions)):
        np.testing.assert_array_equal(inside.sublayers[kind]["weights"], expected)  # the same numbers, not close
        for layer in range(expected.shape[0]):
            attn, ln = sublayer_modules(model, kind, layer)
            kv = inside.sublayers[kind]["kv"][layer]  # (K, D)
            q_all = linear(inside.sublayers[kind]["x"][layer], attn.w_q)  # (Tq, D), each once per layer
            k_all, v_all = linear(kv, attn.w_k), linear(kv, attn.w_v)  # (K, D)
            for head in range(cfg.n_heads):
                for query in range(expected.shape[2]):
                    h = inside.head(kind, layer, head, query)
                    K = T if kind == "dec" else S
                    assert h.k.shape == h.v.shape == h.weighted_v.shape == (K, hs) and h.weights.shape == (K,)
                    assert h.key_tokens == (maps.tgt_tokens if kind == "dec" else maps.src_tokens)
                    assert h.query_token == (maps.src_tokens if kind == "enc" else maps.tgt_tokens)[query]
                    cols = slice(head * hs, (head + 1) * hs)
                    np.testing.assert_allclose(h.q, q_all[query, cols], rtol=1e-5, atol=1e-5)
                    np.testing.assert_allclose(h.k, k_all[:, cols], rtol=1e-5, atol=1e-5)
                    np.testing.assert_allclose(h.v, v_all[:, cols], rtol=1e-5, atol=1e-5)
                    np.testing.assert_allclose(h.scores, h.k.astype(np.float64) @ h.q, rtol=1e-5, atol=1e-5)
                    np.testing.assert_allclose(h.scaled, h.scores / math.sqrt(hs), rtol=1e-6, atol=0)
                    np.testing.assert_allclose(masked_softmax(h.scaled, h.mask), expected[layer, head, query],
                                               rtol=0, atol=1e-6)
                    assert (h.weights[~h.mask] == 0).all()
                    np.testing.assert_allclose(h.weighted_v.sum(0), h.head_output, rtol=0, atol=1e-6)
                    np.testing.assert_array_equal(h.head_output, h.all_heads[head])
                    np.testing.assert_allclose(linear(h.all_heads.reshape(-1), attn.w_o), h.attn_out,
                                               rtol=1e-5, atol=1e-5)
                    np.testing.assert_array_equal(h.residual, h.x + h.attn_out)
                    np.testing.assert_allclose(layer_norm(h.x + h.attn_out, ln), h.normed, rtol=1e-5, atol=1e-5)
                    if kind == "dec":  # causal: False exactly for the future keys
                        np.testing.assert_array_equal(h.mask, np.arange(T) <= query)
                    else:  # one sentence, no padding: every source key may be looked at
                        assert h.mask.all()


def test_each_output_is_the_next_input(any_translator):
    inside = any_translator.inside(SENTENCE)
    enc, dec, cross = (inside.sublayers[k] for k in KINDS)
    L_enc, L_dec = enc["x"].shape[0], dec["x"].shape[0]
    for layer in range(L_enc - 1):
        np.testing.assert_array_equal(enc["layer_output"][layer], enc["x"][layer + 1])
    for layer in range(L_dec):
        np.testing.assert_array_equal(cross["kv"][layer], enc["layer_output"][-1])
        np.testing.assert_array_equal(dec["normed"][layer], cross["x"][layer])
        np.testing.assert_array_equal(dec["layer_output"][layer], cross["layer_output"][layer])
        if layer + 1 < L_dec:
            np.testing.assert_array_equal(dec["layer_output"][layer], dec["x"][layer + 1])
    h = inside.head("enc", 0, 0, 2)
    np.testing.assert_array_equal(h.layer_output, enc["x"][1][2])
    with pytest.raises(ValueError):
        h.x[0] = 1.0  # results are shared: read-only


def test_given_output_tokens_are_teacher_forced(tiny_translator):
    inside = tiny_translator.inside(SENTENCE, ["a", "dog", "runs", "<eos>"])
    assert inside.tgt_tokens == ["<sos>", "a", "dog", "runs"]
    assert inside.sublayers["cross"]["weights"].shape[2] == 4
    maps = tiny_translator.analyze(SENTENCE, tiny_translator.tgt_vocab.encode(["a", "dog", "runs", "<eos>"]))
    np.testing.assert_array_equal(inside.sublayers["dec"]["weights"], maps.decoder_attentions)


def test_bad_arguments_say_the_valid_ranges(tiny_translator):
    inside = tiny_translator.inside(SENTENCE, ["a", "dog", "<eos>"])
    L, H = tiny_translator.cfg.n_dec_layers, tiny_translator.cfg.n_heads
    cases = [(("foo", 0, 0, 0), "'foo' is not one of enc, dec, cross"),
             (("cross", L, 0, 0), f"layer {L} is outside 0 to {L - 1}"),
             (("cross", 0, H, 0), f"head {H} is outside 0 to {H - 1}"),
             (("dec", 0, 0, 3), "query 3 is outside 0 to 2"),
             (("enc", 0, 0, -1), "query -1 is outside 0 to 7"),
             (("enc", True, 0, 0), "layer True"),
             (("enc", 0.0, 0, 0), "layer 0.0")]
    for args, message in cases:
        with pytest.raises(InputError, match=message):
            inside.head(*args)
    for tokens, message in (([], "non-empty list"), ("a dog", "non-empty list"), (["a", "zebra"], "zebra"),
                            (["<pad>"], "<pad>")):
        with pytest.raises(InputError, match=message):
            tiny_translator.inside(SENTENCE, tokens)
    with pytest.raises(InputError, match="empty"):
        tiny_translator.inside("   ")
    with pytest.raises(InputError, match="top_k"):
        tiny_translator.logit_lens(SENTENCE, top_k=0)


# logit lens --------------------------------------------------------------------------------------


def test_logit_lens_last_layer_is_the_real_distribution(any_translator):
    tr = any_translator
    lens = tr.logit_lens(SENTENCE, top_k=4)
    real = tr.analyze(SENTENCE, tr.tgt_vocab.encode(lens.output_tokens), top_k=4)
    L, T = tr.cfg.n_dec_layers, len(real.steps)
    assert lens.top_tokens.shape == lens.top_probs.shape == (L, T, 4) and lens.chosen_prob.shape == (L, T)
    assert lens.tgt_tokens == real.tgt_tokens
    for t, step in enumerate(real.steps):  # exactly: the same kernel on the same numbers
        assert lens.chosen_prob[-1, t] == step.prob
        assert list(lens.top_tokens[-1, t]) == [tok for tok, _ in step.top]
        assert lens.top_probs[-1, t].tolist() == [p for _, p in step.top]
    greedy = tr.translate(SENTENCE, top_k=4)  # the cached incremental route: equal to rounding
    np.testing.assert_allclose(lens.chosen_prob[-1], [s.prob for s in greedy.steps], rtol=1e-4, atol=1e-5)
    # every layer, second route: the generator in numpy on the captured layer outputs
    outputs = tr.inside(SENTENCE, lens.output_tokens).sublayers["dec"]["layer_output"]  # (L, T, D)
    logits = linear(outputs, tr.model.generator)  # (L, T, V)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    chosen = tr.tgt_vocab.encode(lens.output_tokens)
    np.testing.assert_allclose(lens.chosen_prob, p[:, np.arange(T), chosen], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(lens.top_probs, -np.sort(-p, -1)[..., :4], rtol=1e-4, atol=1e-6)


# flow: coverage and rollout ----------------------------------------------------------------------


def toy_translation(enc, cross) -> Translation:
    L, H, T, S = cross.shape
    return Translation(source="", src_tokens=["s"] * S, tgt_tokens=["t"] * T, output_tokens=[],
                       encoder_attentions=enc, decoder_attentions=np.zeros((L, H, T, T)), cross_attentions=cross,
                       steps=[])


def random_rows(rng, *shape):
    a = rng.random(shape)
    return a / a.sum(-1, keepdims=True)


def test_coverage_sums_each_steps_weight():
    rng = np.random.default_rng(0)
    cross = random_rows(rng, 2, 3, 5, 4)  # (L, H, T, S)
    c = coverage(toy_translation(random_rows(rng, 2, 3, 4, 4), cross))
    assert c.shape == (2, 3, 4)
    np.testing.assert_allclose(c.sum(-1), 5.0)  # each of T steps hands out 1 per head
    np.testing.assert_allclose(c[1, 2, 3], sum(cross[1, 2, t, 3] for t in range(5)))


def test_rollout_is_the_product_of_the_residual_mixed_maps():
    rng = np.random.default_rng(1)
    enc, cross = random_rows(rng, 2, 3, 4, 4), random_rows(rng, 2, 3, 5, 4)
    r = toy_translation(enc, cross)
    for layer in range(2):
        out = rollout(r, layer)
        assert out.shape == (5, 4)
        np.testing.assert_allclose(out.sum(-1), 1.0)
        a0, a1 = (0.5 * np.eye(4) + 0.5 * enc[i].mean(0) for i in range(2))
        np.testing.assert_allclose(out, cross[layer].mean(0) @ a1 @ a0)  # first layer applied first
    # an encoder where every token keeps to itself passes the cross-attention through unchanged
    eye = np.broadcast_to(np.eye(4), enc.shape)
    np.testing.assert_allclose(rollout(toy_translation(eye, cross), 1), cross[1].mean(0))


def test_flow_on_a_real_translation(any_translator):
    r = any_translator.translate(SENTENCE)
    T, S = len(r.tgt_tokens), len(r.src_tokens)
    np.testing.assert_allclose(coverage(r).sum(-1), T, rtol=1e-5)
    for layer in range(any_translator.cfg.n_dec_layers):
        out = rollout(r, layer)
        assert out.shape == (T, S) and (out >= 0).all()
        np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-6)
    with pytest.raises(InputError, match="outside 0 to"):
        rollout(r, any_translator.cfg.n_dec_layers)
    bare = any_translator.translate_batch([SENTENCE], with_maps=False)[0]
    with pytest.raises(InputError, match="no attention maps"):
        coverage(bare)


# the command line (in this process; test_cli.py runs the real process once) ----------------------------------


@pytest.mark.parametrize("args, message", [
    (["head", "--layer", "9"], "layer 9 is outside 0 to 1"),
    (["head", "--kind", "foo"], "kind 'foo' is not one of enc, dec, cross"),
    (["head", "--query", "99"], "query 99 is outside 0 to"),
    (["head", "--head", "x"], "--head: invalid int value"),
    (["lens", "--top-k", "0"], "top_k must be a whole number"),
])
def test_cli_bad_arguments_are_one_error_line(tiny_checkpoint, args, message, call):
    status, out, err = call(inspect_cli.main, *args, "--checkpoint", tiny_checkpoint, "--device", "cpu", SENTENCE)
    assert_error_line(status, err, message)
    assert out == ""


def test_cli_bad_sentence_checkpoint_or_device_is_one_error_line(tiny_checkpoint, tmp_path, call):
    for args, message in ((["head", "--checkpoint", tiny_checkpoint, "   "], "the sentence is empty"),
                          (["lens", "--checkpoint", tmp_path / "nope", SENTENCE], "does not exist"),
                          (["head", "--checkpoint", tiny_checkpoint, "--device", "tpu", SENTENCE], "unknown device")):
        status, _, err = call(inspect_cli.main, *args)
        assert_error_line(status, err, message)


def test_the_embedding_and_the_feed_forward_are_captured_and_chain(any_translator):
    """The walk through the model shows them: token embedding x sqrt(D) + position = the first layer's input;
    the FFN's hidden units give its residual, whose LayerNorm is the layer's output."""
    inside = any_translator.inside(SENTENCE)
    model = any_translator.model
    for side, kind, stack, layers in (("src", "enc", "encoder", model.encoder), ("tgt", "dec", "decoder", model.decoder)):
        e = inside.embedding[side]
        np.testing.assert_allclose(e["tokens"] + e["positions"], inside.sublayers[kind]["x"][0], atol=1e-6)
        ids = torch.tensor(any_translator.source_ids(SENTENCE)[1]) if side == "src" else None
        if ids is not None:
            np.testing.assert_allclose(e["tokens"], (model.src_embed.tok.weight[ids] * math.sqrt(model.cfg.d_model))
                                       .detach().numpy(), atol=1e-6)
        f = inside.ffn[stack]
        for layer, module in enumerate(layers):
            normed = inside.sublayers["cross" if kind == "dec" else kind]["normed"][layer]  # the FFN's input
            with torch.no_grad():
                out = module.ffn.fc2(torch.tensor(f["hidden"][layer])).numpy()
                again = module.ln_ffn(torch.tensor(f["residual"][layer]), torch.zeros(1)).numpy()
            np.testing.assert_allclose(f["residual"][layer], normed + out, atol=1e-5)
            np.testing.assert_allclose(again, inside.sublayers[kind]["layer_output"][layer], atol=1e-5)
            assert (f["hidden"][layer] >= 0).all()
