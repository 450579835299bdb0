"""The model's invariants on tiny configurations, and routes that must agree."""

import math

import pytest
import torch
from torch import nn

from conftest import random_batch, tiny_config
from model import minimal
from model.config import ModelConfig
from model.extras import Extras
from model.sinusoid import sinusoidal_table
from model.transformer import Transformer, attention


def test_output_shapes(tiny_model):
    cfg = tiny_model.cfg
    src, tgt = random_batch(cfg, B=3, S=7, T=6)
    out = tiny_model(src, tgt)
    assert out.logits.shape == (3, 6, cfg.tgt_vocab_size)
    assert len(out.encoder_attentions) == cfg.n_enc_layers
    assert len(out.decoder_attentions) == len(out.cross_attentions) == cfg.n_dec_layers
    assert all(m.shape == (3, cfg.n_heads, 7, 7) for m in out.encoder_attentions)
    assert all(m.shape == (3, cfg.n_heads, 6, 6) for m in out.decoder_attentions)
    assert all(m.shape == (3, cfg.n_heads, 6, 7) for m in out.cross_attentions)


def test_rows_sum_to_one(tiny_model):
    src, tgt = random_batch(tiny_model.cfg)
    out = tiny_model(src, tgt)
    for maps in (out.encoder_attentions, out.decoder_attentions, out.cross_attentions):
        for m in maps:
            torch.testing.assert_close(m.sum(-1), torch.ones(m.shape[:-1]))


def test_decoder_self_attention_never_sees_the_future(tiny_model):
    src, tgt = random_batch(tiny_model.cfg, T=6)
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    for m in tiny_model(src, tgt).decoder_attentions:
        assert (m[..., future] == 0).all()
        assert (m[..., ~future] > 0).any()


def test_padding_keys_get_no_weight(tiny_model):
    src, tgt = random_batch(tiny_model.cfg, B=3)
    out = tiny_model(src, tgt)
    src_pad = (src == 1)[:, None, None, :]  # (B, 1, 1, S)
    tgt_pad = (tgt == 1)[:, None, None, :]
    assert src_pad.any() and tgt_pad.any()
    for m in out.encoder_attentions + out.cross_attentions:
        assert (m.masked_select(src_pad.expand_as(m)) == 0).all()
    for m in out.decoder_attentions:
        assert (m.masked_select(tgt_pad.expand_as(m)) == 0).all()


def test_padding_does_not_change_the_real_positions(tiny_model):
    """The same sentence alone and padded inside a batch gives the same logits and maps."""
    src, tgt = random_batch(tiny_model.cfg, B=3)
    batch = tiny_model(src, tgt)
    s_len, t_len = int((src[2] != 1).sum()), int((tgt[2] != 1).sum())
    alone = tiny_model(src[2:, :s_len], tgt[2:, :t_len])
    torch.testing.assert_close(batch.logits[2, :t_len], alone.logits[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(batch.cross_attentions[1][2, :, :t_len, :s_len], alone.cross_attentions[1][0],
                               atol=1e-6, rtol=1e-5)


def test_attention_equals_torch_multihead_attention(tiny_model):
    """Our multi-head attention against nn.MultiheadAttention given the same weights."""
    cfg = tiny_model.cfg
    ours = tiny_model.decoder[0].cross_attn
    ref = nn.MultiheadAttention(cfg.d_model, cfg.n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        ref.out_proj.bias.copy_(ours.w_o.bias)
    ref.eval()
    torch.manual_seed(1)
    x, mem = torch.randn(2, 5, cfg.d_model), torch.randn(2, 7, cfg.d_model)
    keep = torch.ones(2, 7, dtype=torch.bool)
    keep[1, 5:] = False
    out, w = ours(x, mem, keep[:, None, None, :])
    ref_out, ref_w = ref(x, mem, mem, key_padding_mask=~keep, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-5)


def test_fused_training_path_equals_explicit_path(tiny_model):
    src, tgt = random_batch(tiny_model.cfg)
    explicit = tiny_model(src, tgt, Extras(need_weights=True))
    fused = tiny_model(src, tgt, Extras(need_weights=False))
    assert fused.encoder_attentions is None
    torch.testing.assert_close(fused.logits, explicit.logits, atol=1e-5, rtol=1e-5)


def test_attention_function_matches_the_formula():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4)
    out, w = attention(q, k, v)
    scores = torch.tensor([[sum(q[0, 0, i, d] * k[0, 0, j, d] for d in range(4)) / 2.0 for j in range(3)]
                           for i in range(2)])
    torch.testing.assert_close(w[0, 0], scores.softmax(-1))
    torch.testing.assert_close(out[0, 0], scores.softmax(-1) @ v[0, 0])


def full_mask(cfg, value=1.0):
    return {"enc": torch.full((cfg.n_enc_layers, cfg.n_heads), value),
            "dec": torch.full((cfg.n_dec_layers, cfg.n_heads), value),
            "cross": torch.full((cfg.n_dec_layers, cfg.n_heads), value)}


def test_masking_nothing_is_the_plain_model_bit_for_bit(tiny_model):
    src, tgt = random_batch(tiny_model.cfg)
    assert torch.equal(tiny_model(src, tgt, Extras(full_mask(tiny_model.cfg))).logits,
                       tiny_model(src, tgt).logits)


@pytest.mark.parametrize("kind,layer,head", [("enc", 0, 1), ("dec", 1, 3), ("cross", 0, 0)])
def test_masked_head_contributes_exactly_nothing(tiny_model, kind, layer, head):
    """Masking a head per call equals zeroing that head's columns of w_o in a copy of the weights."""
    cfg = tiny_model.cfg
    src, tgt = random_batch(cfg)
    mask = full_mask(cfg)
    mask[kind][layer, head] = 0.0
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    masked = tiny_model(src, tgt, Extras(mask)).logits

    edited = Transformer(cfg).eval()
    edited.load_state_dict(tiny_model.state_dict())
    stack = {"enc": edited.encoder, "dec": edited.decoder, "cross": edited.decoder}[kind]
    sub = stack[layer].self_attn if kind != "cross" else stack[layer].cross_attn
    hs = cfg.head_size
    with torch.no_grad():
        sub.w_o.weight[:, head * hs:(head + 1) * hs] = 0
    torch.testing.assert_close(masked, edited(src, tgt).logits, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(masked, tiny_model(src, tgt).logits, atol=1e-4)
    # the shared model is untouched by the call: every tensor bit for bit as before
    assert all(torch.equal(before[k], v) for k, v in tiny_model.state_dict().items())


def test_masked_head_output_is_exactly_zero(tiny_model):
    sub = tiny_model.encoder[0].self_attn
    seen = {}
    hook = sub.w_o.register_forward_pre_hook(lambda m, args: seen.setdefault("x", args[0]))
    src, tgt = random_batch(tiny_model.cfg)
    mask = full_mask(tiny_model.cfg)
    mask["enc"][0, 2] = 0.0
    tiny_model(src, tgt, Extras(mask))
    hook.remove()
    hs = tiny_model.cfg.head_size
    assert (seen["x"][..., 2 * hs:3 * hs] == 0).all()
    assert (seen["x"][..., :2 * hs] != 0).any()


def test_reference_parameter_count():
    """docs/contract.md: 9,038,341 parameters with the real vocabularies (7,853 / 5,893)."""
    assert Transformer(ModelConfig(7853, 5893)).n_params() == 9_038_341
    # sinusoidal positions are a formula, not parameters: 2 x 100 x 256 fewer
    assert Transformer(ModelConfig(7853, 5893, positions="sinusoidal")).n_params() == 9_038_341 - 51_200


def test_sinusoidal_table_is_the_papers_formula():
    table = sinusoidal_table(50, 16)
    for pos, i in [(0, 0), (3, 2), (17, 5), (49, 7)]:
        angle = pos / 10000 ** (2 * i / 16)
        assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_model_runs_and_keeps_invariants():
    torch.manual_seed(0)
    model = Transformer(tiny_config(positions="sinusoidal")).eval()
    src, tgt = random_batch(model.cfg)
    out = model(src, tgt)
    torch.testing.assert_close(out.cross_attentions[0].sum(-1), torch.ones(3, 4, 6))
    assert "src_embed.pos_table" not in model.state_dict()


def test_too_long_input_fails_with_a_clear_message(tiny_model):
    src = torch.full((1, tiny_model.cfg.max_positions + 1), 5)
    with pytest.raises(AssertionError, match="cannot embed position"):
        tiny_model(src, src[:, :3])


def test_xavier_init_and_eval_is_deterministic(tiny_model):
    w = tiny_model.encoder[0].self_attn.w_q.weight
    bound = math.sqrt(6 / (w.shape[0] + w.shape[1]))
    assert w.abs().max() <= bound
    src, tgt = random_batch(tiny_model.cfg)
    assert torch.equal(tiny_model(src, tgt).logits, tiny_model(src, tgt).logits)


FAMILIES = {"ours": {}, "pytorch": dict(positions="sinusoidal", final_norm=True),
            "annotated": dict(positions="sinusoidal", norm_position="pre", final_norm=True, layer_norm="std",
                              norm_eps=1e-6)}


@pytest.mark.parametrize("options", [{}, dict(positions="sinusoidal"), dict(norm_position="pre"),
                                     dict(final_norm=True), dict(layer_norm="std", norm_eps=1e-6),
                                     *FAMILIES.values()])
def test_the_paper_only_functions_equal_the_model_bit_for_bit(options):
    """model/minimal.py is the paper's equations over the same weights: a second route to every logit, for every
    option the model families differ in."""
    torch.manual_seed(0)
    model = Transformer(tiny_config(**options)).eval()
    with torch.no_grad():  # non-trivial norms: gains and biases away from 1 and 0
        for name, p in model.named_parameters():
            if "ln_" in name or "_norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    src, tgt = random_batch(model.cfg, B=3)
    with torch.no_grad():
        assert torch.equal(minimal.forward(model.state_dict(), model.cfg, src, tgt), model(src, tgt).logits)


def test_the_layer_norm_variants_and_positions_are_their_formulas():
    """Pre-LN: the layer is x + Sublayer(LayerNorm(x)); "std": (x - mean) / (unbiased std + eps); final norms add
    two LayerNorms' parameters; and the shipped default stays the paper's post-LN model."""
    from model.transformer import LayerNorm

    assert ModelConfig(src_vocab_size=5, tgt_vocab_size=5).norm_position == "post"
    x = torch.randn(2, 3, 16)
    norm = LayerNorm(tiny_config(layer_norm="std", norm_eps=1e-6))
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)
        literal = norm.weight * (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, unbiased=True).sqrt()
                                                                 + 1e-6) + norm.bias
        torch.testing.assert_close(norm(x), literal, rtol=0, atol=1e-6)
    for options in FAMILIES.values():
        cfg = tiny_config(**options)
        assert Transformer(cfg).n_params() == cfg.n_params
    torch.manual_seed(0)
    model = Transformer(tiny_config(norm_position="pre")).eval()
    layer, x = model.encoder[0], torch.randn(1, 4, 16)
    mask = torch.ones(1, 1, 1, 4, dtype=torch.bool)
    with torch.no_grad():
        h = layer.ln_self.inner(x)
        x1 = x + layer.self_attn(h, h, mask)[0]
        want = x1 + layer.ffn(torch.nn.functional.layer_norm(x1, (16,), layer.ln_ffn.weight, layer.ln_ffn.bias))
        torch.testing.assert_close(layer(x, mask)[0], want, rtol=0, atol=1e-6)


def test_a_config_saved_before_the_family_options_loads_as_the_paper_model():
    d = tiny_config().to_dict()
    for key in ("norm_position", "final_norm", "layer_norm", "norm_eps"):
        del d[key]
    assert ModelConfig.from_dict(d) == tiny_config()
    with pytest.raises(ValueError, match="norm_position must be"):
        tiny_config(norm_position="middle")
