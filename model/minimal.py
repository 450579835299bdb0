"""The same Transformer in plain functions over its weights: the paper's equations and nothing else.

No head masks, no cache, no capture, no dropout (inference only): read this first, on its own (it needs
only the config), then model/transformer.py, which adds those. Given the weights of a `Transformer`
(its state_dict), `forward` returns the same logits bit for bit (tests/unit/test_transformer.py checks it).
"""

import math

import torch
import torch.nn.functional as F

from .config import ModelConfig


def linear(w: dict, name: str, x):
    return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])


def layer_norm(w: dict, name: str, x, cfg: ModelConfig):
    """(x - mean) / sqrt(var + eps), scaled and shifted; or, as the Annotated Transformer writes it ("std"),
    (x - mean) / (std + eps) with the unbiased std."""
    if cfg.layer_norm == "standard":
        return F.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], cfg.norm_eps)
    mean, std = x.mean(-1, keepdim=True), x.std(-1, keepdim=True)
    return w[f"{name}.weight"] * (x - mean) / (std + cfg.norm_eps) + w[f"{name}.bias"]


def sublayer(w: dict, name: str, x, f, cfg: ModelConfig):
    """Section 3.1: LayerNorm(x + Sublayer(x)); pre-LN models: x + Sublayer(LayerNorm(x))."""
    if cfg.norm_position == "pre":
        return x + f(layer_norm(w, name, x, cfg))
    return layer_norm(w, name, x + f(x), cfg)


def multi_head_attention(w: dict, name: str, x, kv, mask, H: int):
    """Sections 3.2.1-3.2.2: softmax(Q K^T / sqrt(d_k)) V in H heads, concatenated, then W_O."""
    B, Tq, D = x.shape
    split = lambda t: t.view(B, t.size(1), H, D // H).transpose(1, 2)  # noqa: E731  (B, H, T, hs), hs = D / H
    q, k, v = (split(linear(w, f"{name}.w_{p}", src)) for p, src in (("q", x), ("k", kv), ("v", kv)))
    scaled = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)  # (B, H, Tq, Tk)
    weights = scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min).softmax(dim=-1)
    heads = (weights @ v).transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, D): the heads side by side
    return linear(w, f"{name}.w_o", heads)


def feed_forward(w: dict, name: str, x, cfg: ModelConfig):
    """Section 3.3: max(0, x W_1 + b_1) W_2 + b_2; Marian's swish x sigmoid(x), or GELU, where the config says."""
    h = linear(w, f"{name}.fc1", x)
    act = {"relu": lambda: h.clamp(min=0), "swish": lambda: h * torch.sigmoid(h), "gelu": lambda: F.gelu(h)}
    return linear(w, f"{name}.fc2", act[cfg.activation]())


def sinusoidal_table(n_positions: int, d_model: int, halves: bool = False):
    """Section 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...), in float64, then float32.
    halves: Marian's layout of the same angles, every sine first, then every cosine."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (P, 1)
    angle = pos / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (P, D/2)
    if halves:
        return torch.cat([angle.sin(), angle.cos()], dim=-1).float()  # (P, D): sines, then cosines
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1).float()  # (P, D): sin, cos, sin, cos, ...


def embed(w: dict, name: str, ids, cfg: ModelConfig):
    """Sections 3.4-3.5: token embedding x sqrt(d_model) (x 1 without embed_scale) plus the position's vector."""
    T = ids.size(1)
    positions = (w[f"{name}.pos.weight"][:T] if cfg.positions == "learned"
                 else sinusoidal_table(T, cfg.d_model, cfg.positions == "halves"))
    return F.embedding(ids, w[f"{name}.tok.weight"]) * (math.sqrt(cfg.d_model) if cfg.embed_scale else 1) + positions


def forward(w: dict, cfg: ModelConfig, src, tgt):
    """src (B, S), tgt (B, T) decoder inputs -> logits (B, T, V), teacher forcing (figure 1)."""
    H, T = cfg.n_heads, tgt.size(1)
    src_mask = (src != cfg.pad_id)[:, None, None, :]  # (B, 1, 1, S)
    keys = torch.cat([torch.ones_like(tgt[:, :1], dtype=torch.bool), tgt[:, 1:] != cfg.pad_id], 1)  # the start is a key
    tgt_mask = keys[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril()  # (B, 1, T, T)
    x = embed(w, "src_embed", src, cfg)
    for i in range(cfg.n_enc_layers):
        n = f"encoder.{i}"
        x = sublayer(w, f"{n}.ln_self", x, lambda h: multi_head_attention(w, f"{n}.self_attn", h, h, src_mask, H), cfg)
        x = sublayer(w, f"{n}.ln_ffn", x, lambda h: feed_forward(w, f"{n}.ffn", h, cfg), cfg)
    memory = layer_norm(w, "enc_norm", x, cfg) if cfg.final_norm else x
    y = embed(w, "tgt_embed", tgt, cfg)
    for i in range(cfg.n_dec_layers):
        n = f"decoder.{i}"
        y = sublayer(w, f"{n}.ln_self", y, lambda h: multi_head_attention(w, f"{n}.self_attn", h, h, tgt_mask, H), cfg)
        y = sublayer(w, f"{n}.ln_cross", y,
                     lambda h: multi_head_attention(w, f"{n}.cross_attn", h, memory, src_mask, H), cfg)
        y = sublayer(w, f"{n}.ln_ffn", y, lambda h: feed_forward(w, f"{n}.ffn", h, cfg), cfg)
    return linear(w, "generator", layer_norm(w, "dec_norm", y, cfg) if cfg.final_norm else y)
