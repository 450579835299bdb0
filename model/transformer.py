"""The encoder-decoder Transformer of "Attention Is All You Need", written out so every weight shows.

Shape legend: B batch, S source length, T target length, L layers, H heads,
D d_model, hs head size (D / H), V vocabulary.

One call returns the logits and, when asked, every attention map (after softmax,
before dropout) in a small `Output` object; nothing is kept on the modules, so one
loaded model serves any number of users. Heads are switched off per call with a
`head_mask`, never by editing weights. A caller-owned `capture` dict, when passed,
receives every intermediate of that call (see `Transformer.forward`).
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig

KINDS = ("enc", "dec", "cross")  # encoder self, decoder masked self, decoder-encoder attention

# A head mask maps a kind to an (L, H) tensor of 1.0 (keep) and 0.0 (switch off), the same for every batch
# row, or to a (B, L, H) tensor, one mask per batch row (many masked variants in one pass); missing kinds keep all.
HeadMask = dict[str, torch.Tensor]


def layer_mask(m: torch.Tensor | None, layer: int) -> torch.Tensor | None:
    """One layer of a HeadMask value: (L, H) -> (H,), per-row (B, L, H) -> (B, H)."""
    return None if m is None else m[..., layer, :]


def attention(q, k, v, mask=None, dropout_p=0.0, need_weights=True, capture=None):
    """Scaled dot-product attention (paper, eq. 1) that returns the output *and* the weights.

    q (B, H, Tq, hs), k and v (B, H, Tk, hs); mask broadcastable to (B, H, Tq, Tk),
    True where a query may look. With need_weights=False (and no capture) the fused kernel
    runs and the weights come back as None (the training path: same numbers, less memory).
    capture: a dict owned by the caller; it receives `scores` (q k^T), `scaled` (scores /
    sqrt(hs)), `mask` (expanded to (B, 1|H, Tq, Tk), or None) and `weights`.
    """
    if not need_weights and capture is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None
    scores = q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    scaled = scores / math.sqrt(q.size(-1))
    masked = scaled if mask is None else scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min)
    weights = masked.softmax(dim=-1)
    out = F.dropout(weights, dropout_p) @ v if dropout_p > 0 else weights @ v  # (B, H, Tq, hs)
    if capture is not None:
        B, H, Tq, Tk = scores.shape
        capture.update(scores=scores, scaled=scaled, weights=weights,
                       mask=None if mask is None else mask.expand(B, mask.size(-3), Tq, Tk))
    return out, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.dropout = cfg.dropout
        self.w_q = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_k = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_v = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_o = nn.Linear(cfg.d_model, cfg.d_model)

    def _split(self, x):
        B, T, D = x.shape
        return x.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2)  # (B, H, T, hs)

    def forward(self, x, kv_input, mask=None, head_mask=None, cache=None, static_kv=False, need_weights=True,
                capture=None):
        """x (B, Tq, D) queries; kv_input (B, Tk, D) keys/values source.

        cache: a dict owned by the caller. Self-attention (static_kv=False) appends this
        call's keys and values to it; cross-attention (static_kv=True) computes them from
        the encoder output once and reuses them at every later step.
        head_mask: (H,) of 1.0/0.0 for every row, or (B, H) one per row; a 0.0 head's output is
        exactly zero before w_o, a 1.0 head's is unchanged bit for bit.
        capture: a dict owned by the caller; it receives `x`, `kv`, `q`, `k`, `v` (all keys
        and values, cached ones included), what `attention` records, `heads` (B, H, Tq, hs)
        after the head mask and `attn_out` (B, Tq, D) after w_o.
        """
        q = self._split(self.w_q(x))  # (B, H, Tq, hs)
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self._split(self.w_k(kv_input)), self._split(self.w_v(kv_input))  # (B, H, Tk, hs)
            if cache is not None and not static_kv and "k" in cache:
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v
        p = self.dropout if self.training else 0.0
        out, weights = attention(q, k, v, mask, p, need_weights, capture)  # (B, H, Tq, hs)
        B, H, Tq, hs = out.shape
        if head_mask is not None:
            assert head_mask.shape in ((H,), (B, H)), f"head mask {tuple(head_mask.shape)}: want ({H},) or ({B}, {H})"
            out = out * head_mask.to(device=out.device, dtype=out.dtype)[..., None, None]  # (H, 1, 1) or (B, H, 1, 1)
        heads = out
        out = self.w_o(out.transpose(1, 2).reshape(B, Tq, H * hs))  # (B, Tq, D)
        if capture is not None:
            capture.update(x=x, kv=kv_input, q=q, k=k, v=v, heads=heads, attn_out=out)
        return out, weights


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


def sublayer_connection(x, a, norm, capture=None):
    """Post-LN: LayerNorm(x + a); a capture dict gets `residual` (x + a) and `normed`."""
    residual = x + a
    normed = norm(residual)
    if capture is not None:
        capture.update(residual=residual, normed=normed)
    return normed


class EncoderLayer(nn.Module):
    """Post-LN: x = LayerNorm(x + Dropout(sublayer(x))), one LayerNorm per sublayer."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg)
        self.ln_self = nn.LayerNorm(cfg.d_model)
        self.ffn = FeedForward(cfg)
        self.ln_ffn = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, src_mask, head_mask=None, need_weights=True, capture=None):
        """capture: a caller's dict; gets "self" (the sublayer's values, `residual` and `normed`
        included) and `output` (B, S, D)."""
        sub = None
        if capture is not None:
            capture["self"] = sub = {}
        a, w = self.self_attn(x, x, src_mask, head_mask, need_weights=need_weights, capture=sub)
        x = sublayer_connection(x, self.dropout(a), self.ln_self, sub)
        x = self.ln_ffn(x + self.dropout(self.ffn(x)))
        if capture is not None:
            capture["output"] = x
        return x, w


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg)
        self.ln_self = nn.LayerNorm(cfg.d_model)
        self.cross_attn = MultiHeadAttention(cfg)
        self.ln_cross = nn.LayerNorm(cfg.d_model)
        self.ffn = FeedForward(cfg)
        self.ln_ffn = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, memory, tgt_mask, src_mask, self_mask=None, cross_mask=None, cache=None,
                need_weights=True, capture=None):
        """capture: a caller's dict; gets "self" and "cross" (each sublayer's values) and `output` (B, T, D)."""
        self_cache = cross_cache = self_cap = cross_cap = None
        if cache is not None:
            self_cache, cross_cache = cache.setdefault("self", {}), cache.setdefault("cross", {})
        if capture is not None:
            capture["self"], capture["cross"] = self_cap, cross_cap = {}, {}
        a, w_self = self.self_attn(x, x, tgt_mask, self_mask, self_cache, need_weights=need_weights,
                                   capture=self_cap)
        x = sublayer_connection(x, self.dropout(a), self.ln_self, self_cap)
        a, w_cross = self.cross_attn(x, memory, src_mask, cross_mask, cross_cache, static_kv=True,
                                     need_weights=need_weights, capture=cross_cap)
        x = sublayer_connection(x, self.dropout(a), self.ln_cross, cross_cap)
        x = self.ln_ffn(x + self.dropout(self.ffn(x)))
        if capture is not None:
            capture["output"] = x
        return x, w_self, w_cross


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """The paper's fixed encodings: PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...)."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (P, 1)
    div = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (D/2,)
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div)
    return table.float()  # (P, D)


class Embedding(nn.Module):
    """Token embedding x sqrt(D) plus a position encoding (learned or sinusoidal), then dropout."""

    def __init__(self, vocab_size: int, cfg: ModelConfig):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, cfg.d_model)
        self.scale = math.sqrt(cfg.d_model)
        self.max_positions = cfg.max_positions
        if cfg.positions == "learned":
            self.pos = nn.Embedding(cfg.max_positions, cfg.d_model)
        else:  # not a parameter and not saved: it is a formula
            self.register_buffer("pos_table", sinusoidal_table(cfg.max_positions, cfg.d_model), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)

    def position_table(self) -> torch.Tensor:
        return self.pos.weight if hasattr(self, "pos") else self.pos_table  # (P, D)

    def forward(self, ids, start: int = 0):
        T = ids.size(1)
        assert start + T <= self.max_positions, f"cannot embed position {start + T - 1}: the model has {self.max_positions}"
        pos = self.position_table()[start:start + T]  # (T, D)
        return self.dropout(self.tok(ids) * self.scale + pos)


@dataclass
class Output:
    """What one forward call returns. Attention lists hold one (B, H, Tq, Tk) tensor per layer."""

    logits: torch.Tensor  # (B, T, V)
    encoder_attentions: list | None = None  # L x (B, H, S, S)
    decoder_attentions: list | None = None  # L x (B, H, T, T), future positions exactly 0
    cross_attentions: list | None = None  # L x (B, H, T, S), padding keys exactly 0


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(cfg.src_vocab_size, cfg)
        self.tgt_embed = Embedding(cfg.tgt_vocab_size, cfg)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_dec_layers))
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)  # no weight tying (docs/contract.md)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    # masks -----------------------------------------------------------------
    def src_mask(self, src):
        return (src != self.cfg.pad_id)[:, None, None, :]  # (B, 1, 1, S): padding keys get no weight

    def tgt_mask(self, tgt):
        T = tgt.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()  # (T, T)
        return (tgt != self.cfg.pad_id)[:, None, None, :] & causal  # (B, 1, T, T)

    # the two halves --------------------------------------------------------
    def encode(self, src, head_mask: HeadMask | None = None, need_weights=True, capture: dict | None = None):
        """src (B, S) -> memory (B, S, D), L x (B, H, S, S) weights (or Nones).

        capture: a caller's dict; gets "encoder", one dict per layer (see EncoderLayer).
        """
        mask = self.src_mask(src)
        x = self.src_embed(src)
        maps = []
        hm = (head_mask or {}).get("enc")
        layers = None
        if capture is not None:  # this call's values replace any earlier ones
            capture["encoder"] = layers = [{} for _ in self.encoder]
        for i, layer in enumerate(self.encoder):
            x, w = layer(x, mask, layer_mask(hm, i), need_weights, None if layers is None else layers[i])
            maps.append(w)
        return x, maps

    def decode(self, tgt, memory, src_mask, head_mask: HeadMask | None = None, cache: list | None = None,
               start: int = 0, need_weights=True, capture: dict | None = None):
        """tgt (B, T) decoder inputs at positions start..start+T-1 -> logits (B, T, V) and maps.

        With a cache (one dict per layer, owned by the caller) only the new positions are
        fed; earlier keys and values come from the cache, so no causal mask is needed.
        capture: a caller's dict; gets "decoder", one dict per layer (see DecoderLayer),
        for this call's positions.
        """
        tgt_mask = self.tgt_mask(tgt) if cache is None or tgt.size(1) > 1 else None
        if cache is not None and tgt.size(1) > 1:
            assert start == 0, "a cached decode of several positions must start at 0"
        x = self.tgt_embed(tgt, start)
        self_maps, cross_maps = [], []
        hm_self, hm_cross = (head_mask or {}).get("dec"), (head_mask or {}).get("cross")
        layers = None
        if capture is not None:  # this call's values replace any earlier ones
            capture["decoder"] = layers = [{} for _ in self.decoder]
        for i, layer in enumerate(self.decoder):
            x, ws, wc = layer(x, memory, tgt_mask, src_mask, layer_mask(hm_self, i), layer_mask(hm_cross, i),
                              None if cache is None else cache[i], need_weights,
                              None if layers is None else layers[i])
            self_maps.append(ws)
            cross_maps.append(wc)
        return self.generator(x), self_maps, cross_maps

    def forward(self, src, tgt, head_mask: HeadMask | None = None, need_weights=True,
                capture: dict | None = None) -> Output:
        """Teacher forcing: src (B, S), tgt (B, T) decoder inputs -> Output with logits (B, T, V).

        capture: a dict owned by the caller that receives every intermediate of this call
        (batch dim kept; the explicit attention path runs even with need_weights=False):
            capture["encoder"][l]["self"], capture["decoder"][l]["self"], capture["decoder"][l]["cross"]:
                x (B, Tq, D) query-side input, kv (B, Tk, D) key/value-side input,
                q (B, H, Tq, hs), k, v (B, H, Tk, hs), scores (B, H, Tq, Tk) = q k^T,
                scaled = scores / sqrt(hs), mask (B, 1, Tq, Tk) True = may look, weights,
                heads (B, H, Tq, hs) after the head mask, attn_out (B, Tq, D) after w_o,
                residual = x + attn_out (dropout off in eval), normed (B, Tq, D) = LayerNorm(residual)
            capture["encoder"][l]["output"], capture["decoder"][l]["output"]: (B, Tq, D) after the FFN block
        """
        memory, enc_maps = self.encode(src, head_mask, need_weights, capture)
        logits, dec_maps, cross_maps = self.decode(tgt, memory, self.src_mask(src), head_mask,
                                                   need_weights=need_weights, capture=capture)
        if not need_weights:
            return Output(logits)
        return Output(logits, enc_maps, dec_maps, cross_maps)

    def new_cache(self) -> list:
        return [{} for _ in self.decoder]

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
