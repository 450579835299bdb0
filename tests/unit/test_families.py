"""tests/families.py, the three published families re-implemented for the converter's parity tests: their
state_dict keys are the published ones, their attention is a distribution that respects the masks, their greedy
loops agree with their own logits, and the details that a converter must match (the Annotated Transformer's
LayerNorm, nn.MultiheadAttention's weights, the sinusoid buffers, the specials) are what the sources say."""

import numpy as np
import pytest
import torch

import families
from families import FAMILIES, attention, build, greedy, logits, special_ids, specials
from model.sinusoid import sinusoidal_table

SRC_V, TGT_V, D, L, H, D_FF = 23, 19, 16, 2, 4, 32


@pytest.fixture(scope="module")
def models():
    return {family: build(family, SRC_V, TGT_V, D, L, H, D_FF, seed=7) for family in FAMILIES}


def sentence(family, S=7, T=5, n_pad=0, seed=0):
    """One source (1, S) <sos> ... <eos> then n_pad pads, and decoder inputs (1, T) starting with <sos>."""
    ids = special_ids(family)
    g = torch.Generator().manual_seed(seed)
    src, tgt = torch.randint(4, SRC_V, (1, S), generator=g), torch.randint(4, TGT_V, (1, T), generator=g)
    src[0, 0], tgt[0, 0] = ids["sos"], ids["sos"]
    src[0, S - 1 - n_pad] = ids["eos"]
    if n_pad:
        src[0, S - n_pad:] = ids["pad"]
    return src, tgt


# the published keys ----------------------------------------------------------------------------------------------

LAYER_KEYS = {
    "tutorial": (
        ["encoder.layers.{l}." + k for k in (
            "self_attn_layer_norm.weight", "self_attn_layer_norm.bias", "ff_layer_norm.weight", "ff_layer_norm.bias",
            "self_attention.fc_q.weight", "self_attention.fc_q.bias", "self_attention.fc_k.weight",
            "self_attention.fc_k.bias", "self_attention.fc_v.weight", "self_attention.fc_v.bias",
            "self_attention.fc_o.weight", "self_attention.fc_o.bias", "positionwise_feedforward.fc_1.weight",
            "positionwise_feedforward.fc_1.bias", "positionwise_feedforward.fc_2.weight",
            "positionwise_feedforward.fc_2.bias")]
        + ["decoder.layers.{l}." + k for k in (
            "self_attn_layer_norm.weight", "self_attn_layer_norm.bias", "enc_attn_layer_norm.weight",
            "enc_attn_layer_norm.bias", "ff_layer_norm.weight", "ff_layer_norm.bias",
            "self_attention.fc_q.weight", "self_attention.fc_q.bias", "self_attention.fc_k.weight",
            "self_attention.fc_k.bias", "self_attention.fc_v.weight", "self_attention.fc_v.bias",
            "self_attention.fc_o.weight", "self_attention.fc_o.bias", "encoder_attention.fc_q.weight",
            "encoder_attention.fc_q.bias", "encoder_attention.fc_k.weight", "encoder_attention.fc_k.bias",
            "encoder_attention.fc_v.weight", "encoder_attention.fc_v.bias", "encoder_attention.fc_o.weight",
            "encoder_attention.fc_o.bias", "positionwise_feedforward.fc_1.weight",
            "positionwise_feedforward.fc_1.bias", "positionwise_feedforward.fc_2.weight",
            "positionwise_feedforward.fc_2.bias")]),
    "pytorch": (
        ["transformer.encoder.layers.{l}." + k for k in (
            "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
            "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
            "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias")]
        + ["transformer.decoder.layers.{l}." + k for k in (
            "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
            "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
            "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias",
            "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
            "norm3.weight", "norm3.bias")]),
    "annotated": (
        ["encoder.layers.{l}." + k for k in (
            *(f"self_attn.linears.{i}.{w}" for i in range(4) for w in ("weight", "bias")),
            "feed_forward.w_1.weight", "feed_forward.w_1.bias", "feed_forward.w_2.weight", "feed_forward.w_2.bias",
            "sublayer.0.norm.a_2", "sublayer.0.norm.b_2", "sublayer.1.norm.a_2", "sublayer.1.norm.b_2")]
        + ["decoder.layers.{l}." + k for k in (
            *(f"{a}.linears.{i}.{w}" for a in ("self_attn", "src_attn") for i in range(4) for w in ("weight", "bias")),
            "feed_forward.w_1.weight", "feed_forward.w_1.bias", "feed_forward.w_2.weight", "feed_forward.w_2.bias",
            "sublayer.0.norm.a_2", "sublayer.0.norm.b_2", "sublayer.1.norm.a_2", "sublayer.1.norm.b_2",
            "sublayer.2.norm.a_2", "sublayer.2.norm.b_2")]),
}

OTHER_KEYS = {  # key -> shape
    "tutorial": {"encoder.tok_embedding.weight": (SRC_V, D), "encoder.pos_embedding.weight": (100, D),
                 "decoder.tok_embedding.weight": (TGT_V, D), "decoder.pos_embedding.weight": (100, D),
                 "decoder.fc_out.weight": (TGT_V, D), "decoder.fc_out.bias": (TGT_V,)},
    "pytorch": {"transformer.encoder.norm.weight": (D,), "transformer.encoder.norm.bias": (D,),
                "transformer.decoder.norm.weight": (D,), "transformer.decoder.norm.bias": (D,),
                "generator.weight": (TGT_V, D), "generator.bias": (TGT_V,),
                "src_tok_emb.embedding.weight": (SRC_V, D), "tgt_tok_emb.embedding.weight": (TGT_V, D),
                "positional_encoding.pos_embedding": (5000, 1, D)},
    "annotated": {"encoder.norm.a_2": (D,), "encoder.norm.b_2": (D,), "decoder.norm.a_2": (D,),
                  "decoder.norm.b_2": (D,), "src_embed.0.lut.weight": (SRC_V, D), "src_embed.1.pe": (1, 5000, D),
                  "tgt_embed.0.lut.weight": (TGT_V, D), "tgt_embed.1.pe": (1, 5000, D),
                  "generator.proj.weight": (TGT_V, D), "generator.proj.bias": (TGT_V,)},
}


@pytest.mark.parametrize("family", FAMILIES)
def test_state_dict_keys_are_the_published_ones(models, family):
    state = models[family].state_dict()
    expected = {k.format(l=l) for k in LAYER_KEYS[family] for l in range(L)} | set(OTHER_KEYS[family])
    assert set(state) == expected, f"extra {sorted(set(state) - expected)}, missing {sorted(expected - set(state))}"
    for key, shape in OTHER_KEYS[family].items():
        assert tuple(state[key].shape) == shape, key


def test_spot_keys_named_in_the_brief(models):
    assert "encoder.layers.0.self_attention.fc_q.weight" in models["tutorial"].state_dict()
    assert "transformer.encoder.layers.0.self_attn.in_proj_weight" in models["pytorch"].state_dict()
    assert {"encoder.layers.0.sublayer.0.norm.a_2", "src_embed.0.lut.weight", "src_embed.1.pe"} \
        <= set(models["annotated"].state_dict())


def test_state_dict_round_trips_through_torch_save(models, tmp_path):
    for family in FAMILIES:
        torch.save(models[family].state_dict(), tmp_path / f"{family}.pt")
        fresh = build(family, SRC_V, TGT_V, D, L, H, D_FF, seed=8)
        fresh.load_state_dict(torch.load(tmp_path / f"{family}.pt"))
        src, tgt = sentence(family)
        pad = special_ids(family)["pad"]
        assert torch.equal(logits(family, fresh, src, tgt, pad), logits(family, models[family], src, tgt, pad))


# build -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_build_is_seeded_eval_and_leaves_the_global_rng(family):
    before = torch.random.get_rng_state()
    a, b = (build(family, SRC_V, TGT_V, D, L, H, D_FF, seed=3) for _ in range(2))
    c = build(family, SRC_V, TGT_V, D, L, H, D_FF, seed=4)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert not a.training and not any(m.training for m in a.modules())
    for key, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[key]), key
    assert any(not torch.equal(v, c.state_dict()[k]) for k, v in a.state_dict().items())


@pytest.mark.parametrize("family", FAMILIES)
def test_redrawn_norms_are_not_the_identity(models, family):
    gains = [p for name, p in models[family].named_parameters() if "norm" in name and name.endswith(("weight", "a_2"))]
    biases = [p for name, p in models[family].named_parameters() if "norm" in name and name.endswith(("bias", "b_2"))]
    assert gains and len(gains) == len(biases)
    assert all((g - 1).abs().mean() > 0.05 for g in gains) and all(b.abs().mean() > 0.02 for b in biases)


def test_tutorial_max_len_sizes_its_learned_positions():
    model = build("tutorial", SRC_V, TGT_V, D, L, H, D_FF, seed=0, max_len=30)
    assert model.encoder.pos_embedding.weight.shape == (30, D) == model.decoder.pos_embedding.weight.shape


# logits and attention -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_logits_depend_on_the_source_and_ignore_padding(models, family):
    model, pad = models[family], special_ids(family)["pad"]
    src, tgt = sentence(family, S=7, n_pad=0)
    out = logits(family, model, src, tgt, pad)
    assert out.shape == (1, 5, TGT_V) and torch.isfinite(out).all()
    other, _ = sentence(family, S=7, seed=1)
    assert (logits(family, model, other, tgt, pad) - out).abs().max() > 0.1
    # the same sentence right-padded inside a batch: its rows' logits do not move
    padded = torch.cat([src, torch.full((1, 3), pad)], dim=1)
    longer, _ = sentence(family, S=10, seed=2)
    batch = logits(family, model, torch.cat([padded, longer]), torch.cat([tgt, tgt]), pad)
    torch.testing.assert_close(batch[:1], out, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_rows_are_distributions_that_respect_the_masks(models, family):
    model, pad = models[family], special_ids(family)["pad"]
    S, T, n_pad = 8, 5, 2
    src, tgt = sentence(family, S=S, T=T, n_pad=n_pad)
    maps = attention(family, model, src, tgt, pad)
    want = {"tutorial": {"cross_last": (H, T, S)}}.get(
        family, {"enc": (L, H, S, S), "dec": (L, H, T, T), "cross": (L, H, T, S)})
    assert {k: v.shape for k, v in maps.items()} == want
    for name, weights in maps.items():
        assert weights.dtype == np.float32 and (weights >= 0).all()
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5, err_msg=name)
        peak = weights.max(-1).mean()  # neither one-hot nor uniform on average (a causal first row is one-hot)
        assert 1.2 / weights.shape[-1] < peak < 0.95, f"{name}: mean largest weight {peak:.3f}"
    for name in ("cross_last", "enc", "cross"):
        if name in maps:
            assert (maps[name][..., S - n_pad:] == 0).all(), f"{name}: padding keys got weight"
    if "dec" in maps:
        assert (np.triu(np.ones((T, T)), 1) * maps["dec"] == 0).all(), "dec: future positions got weight"


def test_tutorial_attention_is_what_its_decoder_returns(models):
    model, ids = models["tutorial"], special_ids("tutorial")
    src, tgt = sentence("tutorial")
    last = model.decoder.layers[-1].encoder_attention
    seen = []
    handle = last.register_forward_hook(lambda m, a, out: seen.append(out[1]))
    try:
        maps = attention("tutorial", model, src, tgt, ids["pad"])
    finally:
        handle.remove()
    np.testing.assert_array_equal(maps["cross_last"], seen[0][0].numpy())


def test_pytorch_weights_times_values_give_the_layer_output(models):
    """What need_weights=True returns, multiplied back by the values and out_proj, is the attention output that the
    layer's own need_weights=False call produced: the maps are the layer's, not a second computation's."""
    model, pad = models["pytorch"], special_ids("pytorch")["pad"]
    src, tgt = sentence("pytorch", S=8, n_pad=2)
    calls = families.pytorch_attention_calls(model, src, tgt, pad)
    assert [c.name for c in calls] == [f"encoder.{l}.self_attn" for l in range(L)] + \
        [f"decoder.{l}.{a}" for l in range(L) for a in ("self_attn", "multihead_attn")]
    for call in calls:
        side, l, attr = call.name.split(".")
        mha = getattr(getattr(model.transformer, side).layers[int(l)], attr)
        Tk, B, _ = call.value.shape
        v = torch.nn.functional.linear(call.value, mha.in_proj_weight[2 * D:], mha.in_proj_bias[2 * D:])  # (Tk, B, D)
        v = v.view(Tk, B, H, D // H).permute(1, 2, 0, 3)  # (B, H, Tk, hs)
        heads = call.weights @ v  # (B, H, Tq, hs)
        mixed = mha.out_proj(heads.permute(2, 0, 1, 3).reshape(-1, B, D))  # (Tq, B, D)
        torch.testing.assert_close(mixed, call.output, rtol=1e-5, atol=1e-5, msg=call.name)
        torch.testing.assert_close(call.weighted_output, call.output, rtol=1e-5, atol=1e-5, msg=call.name)


def test_pytorch_cross_attention_reads_the_normed_memory(models):
    """The decoder's keys and values are nn.Transformer's memory, after its final encoder norm."""
    model, pad = models["pytorch"], special_ids("pytorch")["pad"]
    src, tgt = sentence("pytorch")
    calls = families.pytorch_attention_calls(model, src, tgt, pad)
    encoder = model.transformer.encoder
    with torch.no_grad():
        x = model.positional_encoding(model.src_tok_emb(src.t()))  # (S, 1, D)
        for layer in encoder.layers:
            x = layer(x)
        memory = encoder.norm(x)
    cross = [c for c in calls if c.name.endswith("multihead_attn")]
    assert len(cross) == L
    for c in cross:
        assert c.key is c.value
        torch.testing.assert_close(c.key, memory, rtol=1e-5, atol=1e-6)
        assert not torch.allclose(c.key, x, atol=1e-2), "the memory skipped nn.Transformer's final encoder norm"


def test_annotated_maps_are_each_layers_attn(models):
    model, pad = models["annotated"], special_ids("annotated")["pad"]
    src, tgt = sentence("annotated")
    maps = attention("annotated", model, src, tgt, pad)
    np.testing.assert_array_equal(maps["cross"][1], model.decoder.layers[1].src_attn.attn[0].numpy())
    np.testing.assert_array_equal(maps["enc"][0], model.encoder.layers[0].self_attn.attn[0].numpy())


# greedy -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seed", [0, 5])
def test_greedy_is_the_argmax_of_the_logits_fed_back(models, family, seed):
    model, ids = models[family], special_ids(family)
    src, _ = sentence(family, seed=seed)
    max_len = 9
    out = greedy(family, model, src, ids["sos"], ids["eos"], ids["pad"], max_len)
    assert 1 <= len(out) <= families.max_new_tokens(family, max_len)
    assert ids["eos"] not in out[:-1]
    if out[-1] != ids["eos"]:
        assert len(out) == families.max_new_tokens(family, max_len)
    prefix = [ids["sos"]]
    for token in out:
        scores = logits(family, model, src, torch.tensor([prefix]), ids["pad"])[0, -1]
        assert scores.argmax().item() == token
        prefix.append(token)


def test_greedy_raw_is_what_each_loop_returns(models):
    for family in FAMILIES:
        ids = special_ids(family)
        src, _ = sentence(family)
        raw = greedy(family, models[family], src, ids["sos"], ids["eos"], ids["pad"], 9, raw=True)
        cut = greedy(family, models[family], src, ids["sos"], ids["eos"], ids["pad"], 9)
        if family == "tutorial":
            assert raw == cut  # translate_sentence's trg_tokens[1:]
        else:
            assert raw[0] == ids["sos"] and raw[1:1 + len(cut)] == cut
        if family == "annotated":
            assert len(raw) == 9  # greedy_decode never stops early


def test_greedy_and_attention_take_one_sentence(models):
    src, tgt = sentence("annotated")
    with pytest.raises(ValueError, match="one sentence"):
        attention("annotated", models["annotated"], src.repeat(2, 1), tgt.repeat(2, 1), 2)
    with pytest.raises(ValueError, match="one sentence"):
        greedy("annotated", models["annotated"], src.repeat(2, 1), 0, 1, 2, 5)
    with pytest.raises(ValueError, match="unknown family"):
        specials("fairseq")


# what a converter must match ----------------------------------------------------------------------------------------

def test_annotated_layer_norm_is_the_literal_formula():
    norm = families.AnnotatedLayerNorm(D)
    families.redraw(norm, 0)
    x = torch.randn(3, 5, D, generator=torch.Generator().manual_seed(1)) * 2 + 1
    mean = x.sum(-1, keepdim=True) / D
    std = (((x - mean) ** 2).sum(-1, keepdim=True) / (D - 1)).sqrt()  # unbiased
    want = norm.a_2 * (x - mean) / (std + 1e-6) + norm.b_2
    torch.testing.assert_close(norm(x), want, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(norm(x), torch.nn.functional.layer_norm(x, (D,), norm.a_2, norm.b_2, 1e-6), atol=1e-3)


def test_the_sinusoid_buffers_are_the_papers_table():
    """Both published buffers hold the same float32 numbers, within float32 rounding of model/sinusoid.py's table."""
    ours = sinusoidal_table(5000, D)
    a = families.PytorchPositionalEncoding(D, 0.1).pos_embedding[:, 0].numpy()  # (5000, D)
    b = families.AnnotatedPositionalEncoding(D, 0.1).pe[0].numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a[:100], ours[:100], atol=1e-5)
    np.testing.assert_allclose(a, ours, atol=1e-3)


def test_masked_scores_use_the_published_fill_values():
    q = k = v = torch.randn(1, 1, 3, 4)
    mask = torch.tensor([[[[1, 1, 0]]]])
    _, weights = families.annotated_attention(q, k, v, mask)
    assert (weights[..., 2] == 0).all()
    tut = families.TutorialMultiHeadAttentionLayer(4, 1, 0.0, torch.device("cpu")).eval()
    _, weights = tut(torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4), mask.bool())
    assert (weights[..., 2] == 0).all()


def test_specials_are_the_published_vocabularies():
    assert specials("tutorial") == ["<unk>", "<pad>", "<sos>", "<eos>"]
    assert specials("pytorch") == ["<unk>", "<pad>", "<bos>", "<eos>"]
    assert specials("annotated") == ["<s>", "</s>", "<blank>", "<unk>"]
    for family in FAMILIES:
        ids, tokens = special_ids(family), specials(family)
        assert sorted(ids.values()) == [0, 1, 2, 3]
        assert tokens[ids["pad"]] in ("<pad>", "<blank>") and tokens[ids["unk"]] == "<unk>"
        assert tokens[ids["sos"]] in ("<sos>", "<bos>", "<s>") and tokens[ids["eos"]] in ("<eos>", "</s>")
