"""Where the information came from: source coverage and attention rollout, on a Translation.

Plain numpy on the maps a Translation already holds (no torch). Both read attention
weights only; they leave out the values, the residual stream's own norm, W_O and the
feed-forward blocks, so they are approximations of the flow, not a causal attribution
(Jain and Wallace, 2019; Abnar and Zuidema, 2020).
"""

import numpy as np

from .errors import InputError
from .result import Translation


def _maps(result: Translation) -> tuple[np.ndarray, np.ndarray]:
    enc, cross = np.asarray(result.encoder_attentions), np.asarray(result.cross_attentions)
    if enc.ndim != 4 or cross.ndim != 4:
        raise InputError("this Translation has no attention maps: translate with maps (with_maps=True)")
    return enc, cross  # (L, H, S, S), (L, H, T, S)


def coverage(result: Translation) -> np.ndarray:
    """(L, H, S): the cross-attention each source token received, summed over all T steps.

    Each step hands out a weight of 1 per head, so every (layer, head) row sums to T.
    A source token left near 0 by every head was hardly read (Tu et al., 2016).
    """
    _, cross = _maps(result)
    return cross.sum(axis=2)  # (L, H, S)


def rollout(result: Translation, layer: int) -> np.ndarray:
    """(T, S): how much each output step drew on each source token, through the encoder (`rollout_maps` of the
    Translation's maps)."""
    return rollout_maps(*_maps(result), layer)


def rollout_maps(enc: np.ndarray, cross: np.ndarray, layer: int) -> np.ndarray:
    """(T, S) from encoder self-attention (L, H, S, S) and cross-attention (L, H, T, S) maps.

    Attention rollout (Abnar and Zuidema, 2020): per encoder layer A = the mean of the
    heads, A' = 0.5 I + 0.5 A for the residual connection, rows renormalised; R =
    A'_{L-1} ... A'_0 (first layer applied first) maps source tokens to encoder outputs.
    The cross-attention of decoder layer `layer` (mean of the heads) reads encoder outputs,
    so C_layer @ R reads source tokens. Rows sum to 1. An approximation, not a causal
    attribution: it ignores values, W_O, the feed-forward blocks and the decoder's own
    mixing across steps.
    """
    L = cross.shape[0]
    if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or not 0 <= layer < L:
        raise InputError(f"layer {layer!r} is outside 0 to {L - 1} (there are {L} decoder layers)")
    S = enc.shape[-1]
    R = np.eye(S)  # (S, S)
    for A in enc.astype(np.float64).mean(axis=1):  # (S, S) per encoder layer, first layer first
        A = 0.5 * np.eye(S) + 0.5 * A
        A = A / A.sum(axis=-1, keepdims=True)
        R = A @ R
    return cross[layer].astype(np.float64).mean(axis=0) @ R  # (T, S)
