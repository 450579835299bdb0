"""Head masks from a small text syntax, for the CLIs and the app.

    SPEC  := ITEM ("," ITEM)*
    ITEM  := KIND "." LAYER ["." HEAD]        (no HEAD: the whole layer)
    KIND  := enc | dec | cross | *            (encoder self, decoder self, cross attention)
    LAYER, HEAD := a 0-based number | *

Examples: "enc.0.3" (encoder layer 0, head 3), "cross.2.*" or "cross.2" (every head of
cross-attention layer 2), "*.*.0" (head 0 everywhere), "" (nothing masked).
"""

import torch

from .errors import InputError
from .transformer import KINDS


def n_layers(cfg, kind: str) -> int:
    return cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers


def parse_head_mask(spec: str | None, cfg) -> dict | None:
    """SPEC -> {kind: (L, H) float tensor of 1 keep / 0 off}, or None when nothing is masked."""
    if spec is None or not spec.strip():
        return None
    mask = {k: torch.ones(n_layers(cfg, k), cfg.n_heads) for k in KINDS}
    for item in spec.split(","):
        parts = item.strip().split(".")
        if len(parts) not in (2, 3) or not all(parts):
            raise InputError(f"head mask item {item.strip()!r} is not KIND.LAYER[.HEAD], e.g. enc.0.3 or cross.2.*")
        kind, layer, head = parts[0], parts[1], parts[2] if len(parts) == 3 else "*"
        if kind not in (*KINDS, "*"):
            raise InputError(f"head mask item {item.strip()!r}: kind must be one of enc, dec, cross or *")
        for k in (KINDS if kind == "*" else (kind,)):
            rows = _indices(layer, n_layers(cfg, k), f"{k} layer", item)
            cols = _indices(head, cfg.n_heads, "head", item)
            mask[k][torch.tensor(rows)[:, None], torch.tensor(cols)[None, :]] = 0.0
    return mask


def _indices(text: str, n: int, what: str, item: str) -> list[int]:
    if text == "*":
        return list(range(n))
    if not text.isdigit():
        raise InputError(f"head mask item {item.strip()!r}: {what} {text!r} is not a number or *")
    i = int(text)
    if i >= n:
        raise InputError(f"head mask item {item.strip()!r}: there is no {what} {i} (the model has {n}: 0 to {n - 1})")
    return [i]


def head_mask_spec(mask: dict | None) -> str:
    """The canonical SPEC of a mask (one ITEM per masked head, whole layers shortened): inverse of parse."""
    if not mask:
        return ""
    items = []
    for kind in KINDS:
        m = mask.get(kind)
        if m is None:
            continue
        for layer in range(m.shape[0]):
            off = [h for h in range(m.shape[1]) if m[layer, h] == 0]
            if len(off) == m.shape[1]:
                items.append(f"{kind}.{layer}")
            else:
                items += [f"{kind}.{layer}.{h}" for h in off]
    return ",".join(items)
