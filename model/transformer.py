"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), written out so every
weight shows. Read it beside the paper: each class names the section it implements, from equation 1 (attention) up
to the whole model (figure 1). model/minimal.py is the same model in plain functions.

Shape legend: B batch, S source length, T target length, L layers, H heads,
D d_model, hs head size (D / H), V vocabulary.

One call returns the logits and every attention map (after softmax, before dropout) in a small `Output`;
nothing is kept on the modules, so one loaded model serves any number of users. What no equation of the
paper needs rides in one `Extras` object per call (model/extras.py): heads switched off (a head mask, never
an edit of the weights), the cache of step-by-step decoding, and a capture dict that receives every
intermediate. Every sub-layer takes its own slice of it as its last argument.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .extras import Extras, below, part, record
from .sinusoid import sinusoidal_table


def attention(q, k, v, mask=None, dropout_p=0.0, extras: Extras = Extras()):
    """Scaled dot-product attention (section 3.2.1, eq. 1): softmax(q k^T / sqrt(hs)) v, with the weights.

    q (B, H, Tq, hs), k and v (B, H, Tk, hs); mask broadcastable to (B, H, Tq, Tk), True where a query may
    look. Returns the output (B, H, Tq, hs) and the weights (B, H, Tq, Tk). When nobody needs the weights
    (`extras.explicit` false) the fused kernel runs and the weights come back as None: same numbers, less
    memory. A capture receives `scores` (q k^T), `scaled`, `mask` (expanded to (B, 1|H, Tq, Tk), or None)
    and `weights`.
    """
    if not extras.explicit:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None
    scores = q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    scaled = scores / math.sqrt(q.size(-1))
    # A masked score becomes the most negative finite float, not -inf: its weight is exactly 0 after the
    # softmax, and a row whose keys are all masked stays finite instead of NaN.
    masked = scaled if mask is None else scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min)
    weights = masked.softmax(dim=-1)
    out = F.dropout(weights, dropout_p) @ v if dropout_p > 0 else weights @ v  # (B, H, Tq, hs)
    B, H, Tq, Tk = scores.shape
    record(extras.capture, scores=scores, scaled=scaled, weights=weights,
           mask=None if mask is None else mask.expand(B, mask.size(-3), Tq, Tk))
    return out, weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention (section 3.2.2): H heads attend in parallel, each in its own hs-wide subspace,
    and W_O mixes their concatenated outputs.

    `cross` says which of the three uses of attention (section 3.2.3) this is, for the decoding cache only:
    self-attention (encoder, or masked in the decoder) appends each step's keys and values to the cache;
    cross-attention computes them from the encoder output once and reuses them at every later step.
    """

    def __init__(self, cfg: ModelConfig, cross: bool = False):
        super().__init__()
        self.n_heads, self.head_size = cfg.n_heads, cfg.head_size
        self.dropout = cfg.dropout
        self.cross = cross
        self.w_q = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_k = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_v = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_o = nn.Linear(cfg.d_model, cfg.d_model)

    def _split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.head_size).transpose(1, 2)  # (B, H, T, hs)

    def forward(self, x, kv, mask=None, extras: Extras = Extras()):
        """x (B, Tq, D) queries; kv (B, Tk, D) the keys' and values' source -> (B, Tq, D) and the weights.

        extras.head_mask: (H,) of 1.0/0.0 for every row, or (B, H) one per row; a 0.0 head's output is
        exactly zero before w_o, a 1.0 head's is unchanged bit for bit. A capture receives `x`, `kv`, `q`,
        `k`, `v` (all keys and values, cached ones included), what `attention` records, `heads`
        (B, H, Tq, hs) after the head mask and `attn_out` (B, Tq, D) after w_o.
        """
        q = self._split(self.w_q(x))  # (B, H, Tq, hs)
        k, v = self._keys_values(kv, extras.cache)  # (B, H, Tk, hs)
        out, weights = attention(q, k, v, mask, self.dropout if self.training else 0.0, extras)  # (B, H, Tq, hs)
        out = extras.patched("edges", out, weights, v)  # activation patching only (model/patch.py)
        B, H, Tq, hs = out.shape
        heads = out if extras.head_mask is None else out * self._per_head(extras.head_mask, out)
        heads = extras.patched("heads", heads)
        attn_out = self.w_o(heads.transpose(1, 2).reshape(B, Tq, H * hs))  # (B, Tq, D)
        record(extras.capture, x=x, kv=kv, q=q, k=k, v=v, heads=heads, attn_out=attn_out)
        return attn_out, weights

    def _keys_values(self, kv, cache: dict | None):
        """This call's keys and values (B, H, Tk, hs), with a decoding cache's earlier ones."""
        if cache is not None and self.cross and "k" in cache:
            return cache["k"], cache["v"]
        k, v = self._split(self.w_k(kv)), self._split(self.w_v(kv))
        if cache is not None and not self.cross and "k" in cache:
            k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v
        return k, v

    @staticmethod
    def _per_head(head_mask, out):
        B, H = out.shape[:2]
        assert head_mask.shape in ((H,), (B, H)), f"head mask {tuple(head_mask.shape)}: want ({H},) or ({B}, {H})"
        return head_mask.to(device=out.device, dtype=out.dtype)[..., None, None]  # (H, 1, 1) or (B, H, 1, 1)


ACTIVATIONS = {"relu": F.relu, "swish": F.silu, "gelu": F.gelu}  # swish(x) = x sigmoid(x); gelu: the exact erf form


class FeedForward(nn.Module):
    """The position-wise feed-forward network (section 3.3): FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, or with the
    activation the config names in place of max(0, .)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        self.activation = ACTIVATIONS[cfg.activation]

    def forward(self, x, extras: Extras = Extras()):
        """x (B, T, D) -> (B, T, D); a capture receives `input` x, `hidden` (B, T, d_ff) after the activation, and
        `out` (B, T, D), the block's output (a transcoder's input and target, model/transcoders.py)."""
        hidden = self.activation(self.fc1(x))
        out = self.fc2(self.dropout(hidden))
        record(extras.capture, input=x, hidden=hidden, out=out)
        return out


class LayerNorm(nn.LayerNorm):
    """Layer normalization (Ba et al., 2016), in the variant the config names: "standard" (torch's, the variance
    inside the root) or "std" (the Annotated Transformer's: the unbiased standard deviation, eps added to it)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg.d_model, eps=cfg.norm_eps)
        self.variant = cfg.layer_norm

    def forward(self, x):
        if self.variant == "standard":
            return super().forward(x)
        return self.weight * (x - x.mean(-1, keepdim=True)) / self.sigma(x) + self.bias

    def sigma(self, u):
        """The number this LayerNorm divides u - mean(u) by, per vector (u (..., D) -> (..., 1)): sqrt(Var(u) + eps)
        for the standard variant, std(u) + eps (unbiased) for the Annotated Transformer's."""
        if self.variant == "standard":
            return (u.var(-1, unbiased=False, keepdim=True) + self.eps).sqrt()
        return u.std(-1, keepdim=True) + self.eps


class AddNorm(LayerNorm):
    """The connection around every sub-layer (section 3.1, dropout from 5.4): LayerNorm(x + Dropout(Sublayer(x))).

    A LayerNorm with the residual step in front (post-LN, as in the paper). With norm_position "pre" (the
    Annotated Transformer, and most models since) the norm moves in front of the sub-layer instead:
    x + Dropout(Sublayer(LayerNorm(x))); `inner` gives the sub-layer's input and `forward` closes it. It records
    into the capture of the sub-layer it closes (the same extras): `stream` (x, the connection's input), `residual`
    (x + the dropped-out sub-layer output) and `normed` (post: LayerNorm(residual), the output; pre: LayerNorm(x),
    the sub-layer's input).
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.p = cfg.dropout
        self.pre = cfg.norm_position == "pre"

    def inner(self, x):
        """The sub-layer's input: x itself (post-LN) or LayerNorm(x) (pre-LN)."""
        return super().forward(x) if self.pre else x

    def forward(self, x, sublayer_out, extras: Extras = Extras(), inner=None):
        """x the sub-layer connection's input, sublayer_out what the sub-layer made of `inner(x)` (pre-LN: pass
        that `inner` to record it) -> the connection's output."""
        residual = x + F.dropout(sublayer_out, self.p, self.training)
        if self.pre:
            record(extras.capture, stream=x, residual=residual, normed=inner)
            return residual
        normed = super().forward(residual)
        record(extras.capture, stream=x, residual=residual, normed=normed)
        return normed



class Layer(nn.Module):
    """What the encoder's and the decoder's layers share (section 3.1): each ends with the feed-forward network
    inside its AddNorm (`ffn`, `ln_ffn`), whose output is the layer's."""

    def feed_forward(self, x, extras: Extras):
        """x (B, T, D) -> the layer's output (B, T, D). A capture gets "ffn" and `output`; a patch may edit the
        feed-forward network's output at the site "ffn" (edit(out, its input): a transcoder, model/transcoders.py)."""
        ffn = extras.sublayer("ffn")
        inner = self.ln_ffn.inner(x)
        out = extras.patched("ffn", self.ffn(inner, ffn), inner)
        x = extras.patched("output", self.ln_ffn(x, out, ffn, inner))
        record(extras.capture, output=x)
        return x


class EncoderLayer(Layer):
    """One of the encoder's N identical layers (section 3.1): self-attention, then the feed-forward network,
    each inside an AddNorm."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg)
        self.ln_self = AddNorm(cfg)
        self.ffn = FeedForward(cfg)
        self.ln_ffn = AddNorm(cfg)

    def forward(self, x, src_mask, extras: Extras = Extras()):
        """x (B, S, D) -> (B, S, D) and the self-attention weights. A capture gets "self", "ffn", `output`."""
        attn = extras.sublayer("self")
        inner = self.ln_self.inner(x)
        a, weights = self.self_attn(inner, inner, src_mask, attn)
        x = self.ln_self(x, a, attn, inner)
        return self.feed_forward(x, extras), weights


class DecoderLayer(Layer):
    """One of the decoder's N identical layers (section 3.1): masked self-attention over the words written so
    far, cross-attention over the encoder output ("memory"), then the feed-forward network, each inside
    an AddNorm."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg)
        self.ln_self = AddNorm(cfg)
        self.cross_attn = MultiHeadAttention(cfg, cross=True)
        self.ln_cross = AddNorm(cfg)
        self.ffn = FeedForward(cfg)
        self.ln_ffn = AddNorm(cfg)

    def forward(self, x, memory, tgt_mask, src_mask, extras: Extras = Extras()):
        """x (B, T, D) -> (B, T, D), self- and cross-attention weights.

        A capture gets "self", "cross", "ffn" and `output`."""
        self_x, cross_x = extras.sublayer("self"), extras.sublayer("cross")
        inner = self.ln_self.inner(x)
        a, self_weights = self.self_attn(inner, inner, tgt_mask, self_x)
        x = self.ln_self(x, a, self_x, inner)
        inner = self.ln_cross.inner(x)
        a, cross_weights = self.cross_attn(inner, memory, src_mask, cross_x)
        x = self.ln_cross(x, a, cross_x, inner)
        return self.feed_forward(x, extras), self_weights, cross_weights


class Embedding(nn.Module):
    """Token embedding x sqrt(D) (section 3.4; x 1 where the config says embed_scale false) plus a position
    encoding (section 3.5: learned, or the paper's sinusoids), then dropout (section 5.4)."""

    def __init__(self, vocab_size: int, cfg: ModelConfig):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, cfg.d_model)
        self.scale = math.sqrt(cfg.d_model) if cfg.embed_scale else 1.0
        self.max_positions = cfg.max_positions
        if cfg.positions == "learned":
            self.pos = nn.Embedding(cfg.max_positions, cfg.d_model)
        else:  # not a parameter and not saved: it is a formula (model/sinusoid.py, float64 rounded to float32)
            table = sinusoidal_table(cfg.max_positions, cfg.d_model, halves=cfg.positions == "halves")
            table = torch.from_numpy(table).float()  # (P, D)
            self.register_buffer("pos_table", table, persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)

    def position_table(self) -> torch.Tensor:
        return self.pos.weight if hasattr(self, "pos") else self.pos_table  # (P, D)

    def forward(self, ids, start: int = 0, capture: dict | None = None):
        """ids (B, T) at positions start..start+T-1 -> (B, T, D). A capture receives `tokens` (B, T, D), the
        embeddings times sqrt(D), and `positions` (T, D)."""
        T = ids.size(1)
        assert start + T <= self.max_positions, f"cannot embed position {start + T - 1}: the model has {self.max_positions}"
        tokens, positions = self.tok(ids) * self.scale, self.position_table()[start:start + T]  # (B, T, D), (T, D)
        record(capture, tokens=tokens, positions=positions)
        return self.dropout(tokens + positions)


@dataclass
class Output:
    """What one forward call returns. Attention lists hold one (B, H, Tq, Tk) tensor per layer."""

    logits: torch.Tensor  # (B, T, V)
    encoder_attentions: list | None = None  # L x (B, H, S, S)
    decoder_attentions: list | None = None  # L x (B, H, T, T), future positions exactly 0
    cross_attentions: list | None = None  # L x (B, H, T, S), padding keys exactly 0


class Transformer(nn.Module):
    """The encoder-decoder model (section 3, figure 1): an encoder stack reads the source, a decoder stack
    writes the target one position at a time, and a linear "generator" gives the next word's logits (3.4)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(cfg.src_vocab_size, cfg)
        self.tgt_embed = Embedding(cfg.tgt_vocab_size, cfg)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_dec_layers))
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)  # ours: no weight tying (docs/contract.md)
        if cfg.final_norm:  # nn.Transformer's and the Annotated Transformer's last LayerNorm of each stack
            self.enc_norm, self.dec_norm = LayerNorm(cfg), LayerNorm(cfg)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        self.tie()

    def tie(self):
        """Makes the tables the config shares one Parameter, the target embedding's (the state_dict still names each
        place): the generator's weight (tie "target", "all") and the source embedding (tie "all")."""
        if self.cfg.tie != "none":
            self.generator.weight = self.tgt_embed.tok.weight
        if self.cfg.tie == "all":
            self.src_embed.tok.weight = self.tgt_embed.tok.weight

    # masks -----------------------------------------------------------------
    def src_mask(self, src):
        return (src != self.cfg.pad_id)[:, None, None, :]  # (B, 1, 1, S): padding keys get no weight

    def tgt_mask(self, tgt):
        """(B, 1, T, T) for decoder inputs from position 0: causal, and no weight on padding after the output. The
        first input is the start token, a key like any word even where it is the pad id (Marian starts from <pad>)."""
        T = tgt.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()  # (T, T)
        keys = tgt != self.cfg.pad_id
        keys[:, 0] = True
        return keys[:, None, None, :] & causal  # (B, 1, T, T)

    # the two halves --------------------------------------------------------
    def encode(self, src, extras: Extras = Extras()):
        """src (B, S) -> memory (B, S, D), L x (B, H, S, S) weights (Nones without need_weights).

        A capture gets "src_embed" (see Embedding) and "encoder", one dict per layer (see EncoderLayer).
        """
        assert extras.cache is None, "the encoder reads the whole source at once: no decoding cache"
        mask = self.src_mask(src)
        x = self.src_embed(src, capture=part(extras.capture, "src_embed"))
        if extras.patch is not None:
            x = Extras(patch=below(extras.patch, "encoder")).patched("embed", x)
        maps = []
        for layer, layer_x in zip(self.encoder, extras.layers("encoder", len(self.encoder))):
            x, weights = layer(x, mask, layer_x)
            maps.append(weights)
        return self.memory(x), maps

    def memory(self, x):
        """The encoder's output from its last layer's (B, S, D): the final norm where the model has one."""
        return self.enc_norm(x) if self.cfg.final_norm else x

    def logits(self, x):
        """The next word's logits (B, T, V) from a decoder layer's output (B, T, D): the final norm where the model
        has one, then the generator (the logit lens reads every layer this way)."""
        return self.generator(self.dec_norm(x) if self.cfg.final_norm else x)

    def decode(self, tgt, memory, src_mask, start: int = 0, extras: Extras = Extras()):
        """tgt (B, T) decoder inputs at positions start..start+T-1 -> logits (B, T, V) and both kinds of maps.

        With a cache (extras.cache, one dict per layer) only the new positions are fed; earlier keys and
        values come from the cache, so no causal mask is needed. A capture gets "tgt_embed" and "decoder", one dict per
        layer (see DecoderLayer), for this call's positions.
        """
        cached = extras.cache is not None
        assert not (cached and tgt.size(1) > 1 and start), "a cached decode of several positions must start at 0"
        tgt_mask = None if cached and tgt.size(1) == 1 else self.tgt_mask(tgt)
        x = self.tgt_embed(tgt, start, part(extras.capture, "tgt_embed"))
        if extras.patch is not None:
            x = Extras(patch=below(extras.patch, "decoder")).patched("embed", x)
        self_maps, cross_maps = [], []
        for layer, layer_x in zip(self.decoder, extras.layers("decoder", len(self.decoder))):
            x, self_weights, cross_weights = layer(x, memory, tgt_mask, src_mask, layer_x)
            self_maps.append(self_weights)
            cross_maps.append(cross_weights)
        return self.logits(x), self_maps, cross_maps

    def forward(self, src, tgt, extras: Extras = Extras()) -> Output:
        """Teacher forcing: src (B, S), tgt (B, T) decoder inputs -> Output with logits (B, T, V).

        extras.capture, a dict owned by the caller, receives every intermediate of this call (batch dim
        kept; the written-out attention runs even with need_weights=False):
            capture["encoder"][l]["self"], capture["decoder"][l]["self"], capture["decoder"][l]["cross"]:
                x (B, Tq, D) query-side input, kv (B, Tk, D) key/value-side input,
                q (B, H, Tq, hs), k, v (B, H, Tk, hs), scores (B, H, Tq, Tk) = q k^T,
                scaled = scores / sqrt(hs), mask (B, 1, Tq, Tk) True = may look, weights,
                heads (B, H, Tq, hs) after the head mask, attn_out (B, Tq, D) after w_o, stream (B, Tq, D) the
                connection's input (post-LN: x itself; pre-LN: what x = LayerNorm(stream) was made of),
                residual = stream + attn_out (dropout off in eval), normed (B, Tq, D) = LayerNorm(residual)
                (pre-LN: LayerNorm(stream), the same tensor as x)
            capture["encoder"][l]["ffn"], capture["decoder"][l]["ffn"]: hidden (B, Tq, d_ff) after the ReLU,
                residual = normed + FFN(normed), normed = LayerNorm(residual), which is the layer's output
            capture["encoder"][l]["output"], capture["decoder"][l]["output"]: (B, Tq, D) after the FFN block
            capture["src_embed"], capture["tgt_embed"]: tokens (B, T, D) = embedding x sqrt(D), positions (T, D);
                their sum is the first layer's x (dropout off in eval)
        """
        memory, enc_maps = self.encode(src, extras)
        logits, dec_maps, cross_maps = self.decode(tgt, memory, self.src_mask(src), extras=extras)
        if not extras.need_weights:
            return Output(logits)
        return Output(logits, enc_maps, dec_maps, cross_maps)

    def tied(self) -> tuple:
        """The state_dict's names of the tables that are the target embedding itself (config tie)."""
        return {"none": (), "target": ("generator.weight",),
                "all": ("generator.weight", "src_embed.tok.weight")}[self.cfg.tie]

    def stored_state(self) -> dict:
        """The state_dict with each shared table once (under tgt_embed.tok.weight): what a checkpoint stores."""
        return {k: v for k, v in self.state_dict().items() if k not in self.tied()}

    def new_cache(self) -> list:
        return [{} for _ in self.decoder]

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())  # a shared Parameter once
