"""Value zeroing: how much each token's value vector matters to every other token's layer output.

Mohebbi, Zuidema, Chrupala and Alishahi, EACL 2023, "Quantifying Context Mixing in Transformers" (authors' code:
hmohebbi/ValueZeroing; the encoder-decoder form in hmohebbi/ContextMixingASR). Shape legend: L layers, S source
length, T decoder inputs (<sos> then every output token but the last), D d_model.

One attention block (encoder self, decoder masked self or decoder cross-attention) in layer l, one key j:
    run layer l again from its real input with the value vector of key j set to zero in that block only (all heads,
    b_V included: the output of w_v at position j; the queries and keys, and so the attention weights, are kept as
    computed). For cross-attention j is a source position: the value of encoder output j in that layer's
    cross-attention. Read the layer's output x~_i^(-j) (after the block, its AddNorm, the FFN and its AddNorm) and
    compare it with the real output x_i:
    C[i, j] = 1 - cos(x~_i^(-j), x_i), clipped to [0, 2] (as sklearn's cosine_distances in the authors' code),
    keys a query may not see (causal future, padding) exactly 0, then each row divided by its sum.
Nothing after layer l is run: the score reads layer l's own output, as the paper's (section 3) does.

The cross block's residual column. ALTI+ (model/contributions.py) gives the cross block S + 1 columns: the S
encoder outputs and the residual x_i (the query's own input, which carries the prefix), and `rollout` passes that
residual share on through the self block. Value zeroing's analogue treats the residual the way ALTI+ does, as one
more vector of the block's sum, and zeroes it: the cross block's AddNorm reads 0 + attn_out_i instead of
x_i + attn_out_i (attn_out_i the real attention output, so the weights are still as computed), the FFN block runs
as usual, and C[i, S] = 1 - cos(that layer output, x_i). The row of S + 1 scores is then normalised like any
other. (Zeroing acts per query here, not per key, so one extra variant gives the whole column.) Self blocks get
no residual column: there, as in the authors' code, the residual is never zeroed, and a key's score is its value's
effect alone.

Layers combine by ALTI+'s rollout, reused unchanged (contributions.rollout): the encoder maps multiply into
source-token -> encoder-output mixing R, and decoder layer l is
D^l = [C_cross^l[:, :S] R | C_cross^l[:, S] * C_self^l] over [source | prefix], rolled out across decoder layers.
A row whose scores are all 0 (no zeroing changed anything; not seen on the shipped model) gives everything to the
query's own token (self blocks) or to the residual (cross), as contributions.block_contributions does.

Cost: every key of a block is one row of a batch, so each block is one batched run of one layer
(L_enc + 2 L_dec layer runs, S or T rows each) on top of the teacher-forced pass. The model is shared: the
zeroing is a forward hook on w_v that acts only in the thread that set it, and is removed on the way out.

Pre-LN models (the Annotated Transformer's): the same, read as that model computes. Layer l is run again from its
real input, the residual stream (`stream` in the capture; post-LN it is the heads' input itself), so the zeroed
value is that of LayerNorm(x_j); the cross block's residual zeroed reads 0 + attn_out_i, then the FFN block; the
layer's output compared is the stream after the layer (un-normalised), as the authors' ContextMixingASR compares
the hidden states of Whisper's pre-LN layers.
"""

import threading
from contextlib import contextmanager

import torch

from .contributions import rollout
from .extras import Extras


ZEROING = threading.local()  # .w_v: the value projection whose output this thread's call zeroes, row b at key b


@contextmanager
def values_zeroed(attn):
    """Inside, in this thread only: when `attn` projects keys to values, batch row b has key b's value zeroed.

    Other threads' calls pass through untouched, so the shared model serves them as before. (Matching the very
    tensor passed in would miss a pre-LN block, whose heads read LayerNorm(x), a tensor made inside the layer.)
    """
    def hook(module, args, out):
        if getattr(ZEROING, "w_v", None) is not module:
            return None
        rows = torch.arange(out.size(0), device=out.device)  # (B,), B <= Tk
        out = out.clone()
        out[rows, rows] = 0.0  # (B, Tk, D): all heads, b_V included
        return out

    handle = attn.w_v.register_forward_hook(hook)
    ZEROING.w_v = attn.w_v
    try:
        yield
    finally:
        ZEROING.w_v = None
        handle.remove()


def distance(new: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """1 - cos per position, clipped to [0, 2], float64: new (B, Tq, D) against real (Tq, D) -> (B, Tq)."""
    new, real = new.double(), real.double()[None]
    cos = (new * real).sum(-1) / (new.norm(dim=-1) * real.norm(dim=-1))
    return (1 - cos).clamp(0, 2)


def normalised(c: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
    """Rows of c (Tq, K) divided by their sums; an all-zero row goes wholly to its column `own` (Tq,)."""
    empty = c.sum(-1) == 0
    c[empty, own[empty]] = 1.0
    return c / c.sum(-1, keepdim=True)


def batch_of(t: torch.Tensor, n: int) -> torch.Tensor:
    """(1, T, D) -> (n, T, D): one copy per zeroed key."""
    return t.expand(n, -1, -1).contiguous()


@torch.no_grad()
def layer_value_zeroing(capture: dict, model) -> dict:
    """{"enc": (L, S, S), "dec": (L, T, T), "cross": (L, T, S + 1)} float64 tensors: each block's normalised C."""
    enc, dec, cross = [], [], []
    for layer, c in zip(model.encoder, capture["encoder"]):
        x, mask, real = c["self"]["stream"], c["self"]["mask"][0, 0].cpu(), c["output"][0]  # (1, S, D), (S, S), (S, D)
        S = x.size(1)
        with values_zeroed(layer.self_attn):
            out, _ = layer(batch_of(x, S), c["self"]["mask"])  # (S, S, D): row j zeroes key j
        enc.append(normalised(distance(out, real).T.cpu() * mask, torch.arange(S)))  # (S, S): [i, j]
    for layer, c in zip(model.decoder, capture["decoder"]):
        x, memory, real = c["self"]["stream"], c["cross"]["kv"], c["output"][0]  # (1, T, D), (1, S, D), (T, D)
        tgt_mask, src_mask = c["self"]["mask"], c["cross"]["mask"]  # (1, 1, T, T), (1, 1, T, S)
        T, S = x.size(1), memory.size(1)
        with values_zeroed(layer.self_attn):
            out = layer(batch_of(x, T), batch_of(memory, T), tgt_mask, src_mask)[0]  # (T, T, D)
        dec.append(normalised(distance(out, real).T.cpu() * tgt_mask[0, 0].cpu(), torch.arange(T)))  # (T, T)
        with values_zeroed(layer.cross_attn):
            out = layer(batch_of(x, S), batch_of(memory, S), tgt_mask, src_mask)[0]  # (S, T, D)
        # The residual zeroed: the cross block's connection and the FFN block, as DecoderLayer.forward runs them.
        attn_out = c["cross"]["attn_out"]  # (1, T, D), the real one
        y = layer.feed_forward(layer.ln_cross(torch.zeros_like(attn_out), attn_out), Extras())  # (1, T, D)
        scores = torch.cat([distance(out, real).T * src_mask[0, 0], distance(y, real).T], dim=-1)  # (T, S + 1)
        cross.append(normalised(scores.cpu(), torch.full((T,), S)))
    return {"enc": torch.stack(enc), "dec": torch.stack(dec), "cross": torch.stack(cross)}


def value_zeroing(capture: dict, model) -> dict:
    """Value zeroing of one teacher-forced pass over an output (`Translator.capture` of a `Translator.force`), numpy
    float64: "source" (T, S) and "prefix" (T, T, zero above the diagonal), each row of [source | prefix] summing to
    1, and "layers" ({"enc": (L, S, S), "dec": (L, T, T), "cross": (L, T, S + 1)}, the last column the residual)."""
    layers = layer_value_zeroing(capture, model)
    R, total = rollout(layers["enc"], layers["dec"], layers["cross"])
    S = R.size(0)
    last = total[-1]  # (T, S + T)
    return {"source": last[:, :S].numpy(), "prefix": last[:, S:].numpy(),
            "layers": {k: v.numpy() for k, v in layers.items()}}
