"""Attention heads by name: one type, `HeadSet`, and its three spellings (the CLIs', the link's, the page's).

    SPEC  := ITEM ("," ITEM)*
    ITEM  := KIND "." LAYER ["." HEAD]        (no HEAD: the whole layer)
    KIND  := enc | dec | cross | *            (encoder self, decoder self, cross attention)
    LAYER, HEAD := a number | *

The CLIs count from 0 (`--mask-heads enc.0.3,cross.2`); the page's link counts from 1, as the page
does (`off=enc.1.4,cross.3`), and takes numbers only. Examples from 0: "enc.0.3" (encoder layer 0,
head 3), "cross.2.*" or "cross.2" (every head of cross-attention layer 2), "*.*.0" (head 0
everywhere), "" (no head). On the page the same heads read "Encoder self-attention layer 1, head 4;
Cross-attention layer 3 (all heads)".
"""

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from .errors import InputError
from .extras import KINDS
from .i18n import _
from .result import KIND_NAMES

KIND_SHORT = {"enc": "encoder", "dec": "decoder", "cross": "cross"}  # table columns and chips


def n_layers(cfg, kind: str) -> int:
    """Layers with attention of this kind: the encoder's for its self-attention, the decoder's for the other two."""
    return cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers


@dataclass(frozen=True)
class Head:
    """One head, every number from 0 (as the model's arrays index it)."""

    kind: str  # enc, dec or cross
    layer: int
    head: int

    def spec(self, base: int = 0) -> str:
        """'cross.1.7' from 0 (the CLIs), 'cross.2.8' from 1 (the link)."""
        return _item_spec(self.kind, self.layer, self.head, base)

    def label(self) -> str:
        """'Cross-attention, layer 2, head 8': as the attention view titles it."""
        return _("{kind}, layer {layer}, head {head}").format(kind=_(KIND_NAMES[self.kind]), layer=self.layer + 1,
                                                              head=self.head + 1)

    def short(self) -> str:
        """'cross L2 H8': short, for the chips of a multiselect."""
        return f"{KIND_SHORT[self.kind]} L{self.layer + 1} H{self.head + 1}"

    def order(self) -> tuple:
        return KINDS.index(self.kind), self.layer, self.head

    def heads(self) -> tuple["Head", ...]:
        """Itself: a pick of one head (Layer.heads is a pick of a whole layer)."""
        return (self,)


@dataclass(frozen=True)
class Layer:
    """Every head of one layer, as one pick of the page's head picker (counted from 0, as Head)."""

    kind: str
    layer: int
    n_heads: int

    def heads(self) -> tuple[Head, ...]:
        return tuple(Head(self.kind, self.layer, h) for h in range(self.n_heads))

    def short(self) -> str:
        """'cross L3 (all 8 heads)': it starts as each of its heads' Head.short does, so a typed prefix such as
        "cross L3" finds the layer first, then its heads (HeadSet.choices lists it before them)."""
        return f"{KIND_SHORT[self.kind]} L{self.layer + 1} (all {self.n_heads} heads)"


@dataclass(frozen=True)
class HeadSet:
    """Heads of one model, for switching off or picking. Iterates in model order (encoder, decoder, cross;
    layer; head); every head of a layer picked is written as the whole layer."""

    heads: frozenset = frozenset()  # of Head
    n_heads: int = 0  # heads per layer of the model

    @classmethod
    def of(cls, cfg, picks: Iterable[Head | Layer] = ()) -> "HeadSet":
        """The heads picked: a Layer stands for each of its heads, and a head picked twice counts once."""
        return cls(frozenset(h for p in picks for h in p.heads()), cfg.n_heads)

    @classmethod
    def every(cls, cfg) -> "HeadSet":
        return cls.of(cfg, (Head(k, layer, h) for k in KINDS for layer in range(n_layers(cfg, k))
                            for h in range(cfg.n_heads)))

    @classmethod
    def parse(cls, text: str | None, cfg, base: int = 0) -> "HeadSet":
        """A SPEC counted from `base`: 0 for the CLIs, 1 for the link (whose items are numbers only, and where
        an empty item, as a trailing comma makes, is skipped). InputError saying what is wrong."""
        heads, text = set(), text or ""
        for item in text.split(",") if text.strip() else []:
            item = item.strip()
            if base and not item:
                continue
            parts = item.split(".")
            if len(parts) not in (2, 3) or not all(parts) or (base and "*" in parts):
                example = "enc.1.4 or cross.3" if base else "enc.0.3 or cross.2.*"
                raise InputError(f"head mask item {item!r} is not KIND.LAYER[.HEAD], e.g. {example}")
            kind, layer, head = parts[0], parts[1], parts[2] if len(parts) == 3 else "*"
            if kind not in (*KINDS, "*"):
                raise InputError(f"head mask item {item!r}: kind must be one of enc, dec, cross"
                                 + ("" if base else " or *"))
            for k in (KINDS if kind == "*" else (kind,)):
                heads |= {Head(k, i, h) for i in _indices(layer, n_layers(cfg, k), f"{k} layer", item, base)
                          for h in _indices(head, cfg.n_heads, "head", item, base)}
        return cls.of(cfg, heads)

    @classmethod
    def choices(cls, cfg) -> list[Head | Layer]:
        """What the page's head picker offers, in model order: each layer whole, then each of its heads."""
        layers = [Layer(k, i, cfg.n_heads) for k in KINDS for i in range(n_layers(cfg, k))]
        return [p for layer in layers for p in (layer, *layer.heads())]

    def picks(self) -> list[Head | Layer]:
        """These heads as the head picker shows them: a whole layer as its Layer, the rest head by head."""
        return [Head(k, layer, h) if h is not None else Layer(k, layer, self.n_heads) for k, layer, h in self.items()]

    def __iter__(self):
        return iter(sorted(self.heads, key=Head.order))

    def __len__(self) -> int:
        return len(self.heads)

    def in_layer(self, kind: str, layer: int) -> list[int]:
        """The heads picked in one layer, in order."""
        return [h.head for h in self if h.kind == kind and h.layer == layer]

    def items(self) -> list[tuple[str, int, int | None]]:
        """(kind, layer, head) in model order; head None where every head of the layer is picked (so a whole layer
        and one of its heads are never both named)."""
        out, layers = [], {}
        for h in self:
            layers.setdefault((h.kind, h.layer), []).append(h.head)
        for (kind, layer), heads in layers.items():
            out += [(kind, layer, None)] if len(heads) == self.n_heads else [(kind, layer, h) for h in heads]
        return out

    def spec(self, base: int = 0) -> str:
        """The canonical SPEC (one ITEM per head, whole layers shortened), from 0 for the CLIs or 1 for the link."""
        return ",".join(_item_spec(kind, layer, head, base) for kind, layer, head in self.items())

    def label(self) -> str:
        """'Cross-attention layer 3 (all heads); Encoder self-attention layer 1, head 4': as the page says it."""
        return "; ".join((_("{kind} layer {layer} (all heads)") if head is None else
                          _("{kind} layer {layer}, head {head}")).format(kind=_(KIND_NAMES[kind]), layer=layer + 1,
                                                                         head=None if head is None else head + 1)
                         for kind, layer, head in self.items())

    def mask(self, cfg) -> dict | None:
        """{kind: (L, H) float tensor of 1 keep / 0 off}, or None when no head is picked."""
        if not self.heads:
            return None
        mask = {k: torch.ones(n_layers(cfg, k), cfg.n_heads) for k in KINDS}
        for h in self.heads:
            mask[h.kind][h.layer, h.head] = 0.0
        return mask


def _item_spec(kind: str, layer: int, head: int | None, base: int) -> str:
    return f"{kind}.{layer + base}" + ("" if head is None else f".{head + base}")


def _indices(text: str, n: int, what: str, item: str, base: int) -> list[int]:
    if text == "*":
        return list(range(n))
    # ASCII digits, at most 6: str.isdigit() takes "²", which int() refuses, and int() refuses 4,301 digits.
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise InputError(f"head mask item {item!r}: {what} {text!r} is not a number or *")
    i = int(text)
    if not base <= i < n + base:
        raise InputError(f"head mask item {item!r}: there is no {what} {i} (the model has {n}: {base} to "
                         f"{n - 1 + base})")
    return [i - base]


def parse_head_mask(spec: str | None, cfg) -> dict | None:
    """SPEC (from 0) -> {kind: (L, H) float tensor of 1 keep / 0 off}, or None when nothing is masked."""
    return HeadSet.parse(spec, cfg).mask(cfg)
