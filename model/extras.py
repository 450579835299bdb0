"""What one call of the Transformer carries beside the paper's equations: `Extras`.

Heads switched off (a head mask, never an edit of the weights), the cache of step-by-step decoding and a
capture dict that receives every intermediate ride in one `Extras` object per call, so that
model/transformer.py reads like the paper and nothing is kept on the modules (one loaded model serves any
number of users). The object walks down the model: each layer and each sub-layer gets its own slice.

No torch import here: the tensors are the caller's, and torch-free modules can name the kinds too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

KINDS = ("enc", "dec", "cross")  # encoder self, decoder masked self, decoder-encoder attention

# A head mask maps a kind to an (L, H) tensor of 1.0 (keep) and 0.0 (switch off), the same for every batch
# row, or to a (B, L, H) tensor, one mask per batch row (many masked variants in one pass); missing kinds keep all.
HeadMask = dict[str, "torch.Tensor"]

# Which kind of attention each sub-layer of a stack is.
SUBLAYER_KINDS = {"encoder": {"self": "enc"}, "decoder": {"self": "dec", "cross": "cross"}}


def record(capture: dict | None, **values):
    """Keep intermediates for a caller who passed a capture dict; without one, do nothing."""
    if capture is not None:
        capture.update(values)


def part(capture: dict | None, key: str, n: int | None = None):
    """A fresh dict (or a list of n) at capture[key] for a sub-module to record into; None without a capture.

    Fresh on every call: this call's values replace any earlier ones.
    """
    if capture is None:
        return None if n is None else [None] * n
    capture[key] = {} if n is None else [{} for _ in range(n)]
    return capture[key]


@dataclass(frozen=True)
class Extras:
    """The per-call extras that no equation of the paper needs; the defaults give the plain model.

    For encode / decode / forward:
        head_mask     HeadMask: {kind: (L, H) or (B, L, H)} of 1.0 keep / 0.0 off
        cache         decoder only: a list with one dict per layer, owned by the caller (`new_cache`), so
                      that step-by-step decoding feeds only the new position
        capture       a caller's dict that receives every intermediate (see `Transformer.forward`)
        patch         activation patching (model/patch.py): {site: edit} where a site is a tuple naming a point
                      of the forward pass -- ("encoder" | "decoder", "embed"), (stack, layer, "output"), (stack,
                      layer, "self" | "cross", "heads") -- and edit(value) returns the value to go on with; the
                      site (stack, layer, sub, "edges") gets edit(out, weights, v) inside attention, before the
                      head mask. Patched runs take the written-out attention path, as captured runs do, so that
                      patching a run with its own values changes nothing, bit for bit.
        need_weights  False runs the fused attention kernel and returns no maps (training: less memory)
    The same object walks down the model: `layers` gives each layer its slice (head masks keyed by
    sub-layer, its cache dict, its capture dict) and `sublayer` each sub-layer's: an attention sub-layer's
    head mask (H,) or (B, H), cache dict and capture dict; the feed-forward network's capture dict.
    """

    head_mask: dict | torch.Tensor | None = None
    cache: list | dict | None = None
    capture: dict | None = None
    need_weights: bool = True
    patch: dict | None = None

    @property
    def explicit(self) -> bool:
        """Attention needs its weights (to return, record or patch): the written-out path, not the fused kernel."""
        return self.need_weights or self.capture is not None or self.patch is not None

    def layers(self, stack: str, n: int) -> list[Extras]:
        """The extras of each of the n layers of the "encoder" or "decoder" stack."""
        kinds, masks = SUBLAYER_KINDS[stack], self.head_mask or {}
        captures = part(self.capture, stack, n)
        return [Extras({sub: masks[kind][..., i, :] for sub, kind in kinds.items() if kind in masks},
                       None if self.cache is None else self.cache[i], captures[i], self.need_weights,
                       below(self.patch, stack, i))
                for i in range(n)]

    def sublayer(self, name: str) -> Extras:
        """The extras of one layer's "self" or "cross" attention sub-layer, or of its "ffn" (the feed-forward
        network has no heads to mask and keeps nothing between decoding steps: a capture only)."""
        if name == "ffn":
            return Extras(capture=part(self.capture, name), need_weights=self.need_weights)
        cache = None if self.cache is None else self.cache.setdefault(name, {})
        return Extras((self.head_mask or {}).get(name), cache, part(self.capture, name), self.need_weights,
                      below(self.patch, name))

    def patched(self, point: str, value, *more):
        """The value at a point of this slice of the model, edited where a patch names it (unchanged otherwise)."""
        edit = None if self.patch is None else self.patch.get((point,))
        return value if edit is None else edit(value, *more)


def below(patch: dict | None, *prefix) -> dict | None:
    """The sites of a patch under a prefix (a stack and layer, or a sub-layer), the prefix taken off."""
    if patch is None:
        return None
    n = len(prefix)  # an empty dict, not None, where no site is below: the whole run stays on the written-out path
    return {site[n:]: edit for site, edit in patch.items() if site[:n] == prefix}
