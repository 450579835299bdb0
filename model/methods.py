"""The explanation methods, in one table (in the style of inseq's registry): each method's key (in code, the JSON
tables and the link's method=), its label on the page, whether its scores are signed, the sides it scores, whether
it is an attribution of model/attribute.py (and takes a foil), whether it is heavy, and its name in the alignment
table (alignment.json, model/align.py). A layer's or a head's explanation is a structured value (`Explanation`),
named for the tables and the page by `Explanation.name` and never parsed back from that name.
"""

from dataclasses import dataclass

SIDES = ("source", "prefix")


@dataclass(frozen=True)
class Method:
    key: str
    label: str  # on the page
    signed: bool = False  # a score below 0 speaks against the word (a diverging colour scale)
    sides: tuple = SIDES  # the tokens it scores: the source, and the prefix written before the step
    attribution: bool = False  # a method of model/attribute.py (the Attributions view's method=)
    foil: bool = False  # its target is log p(word) - log p(foil), not log p(word) (no faithfulness: p is not its target)
    heavy: bool = False  # seconds on a long sentence: the page gives it its turn (views/calls.py HEAVY)
    aligned: str | None = None  # its name in the alignment table, "argmax" links added; None: not scored there
    by_layer: bool = False  # one explanation per layer too (attention: each layer's heads' mean; norms: their sum)
    whole: bool = True  # one explanation of the whole model (norms: per layer only)


METHODS = {m.key: m for m in (
    Method("attention", "attention", by_layer=True),
    Method("rollout", "rollout", sides=("source",)),
    Method("norms", "norms", by_layer=True, whole=False),
    Method("ALTI+", "ALTI+", aligned="ALTI+"),
    Method("gradient", "gradient", attribution=True, aligned="gradient"),
    Method("input_x_gradient", "input × gradient", signed=True, attribution=True, aligned="input x gradient"),
    Method("integrated_gradients", "integrated gradients", signed=True, attribution=True, heavy=True),
    Method("leave_one_out", "leave-one-out", signed=True, attribution=True, aligned="leave-one-out"),
    Method("value_zeroing", "value zeroing", attribution=True, heavy=True, aligned="value zeroing"),
    Method("contrastive", "contrastive", signed=True, attribution=True, foil=True),
)}
ATTRIBUTIONS = tuple(k for k, m in METHODS.items() if m.attribution)  # model/attribute.py's methods, page order


@dataclass(frozen=True)
class Explanation:
    """One explanation of the Faithfulness view: a method, or one layer's heads of it (`layer`, from 0), or one head
    of that layer (`head`, from 0; cross-attention)."""

    method: str
    layer: int | None = None
    head: int | None = None

    @property
    def name(self) -> str:
        """Its name in the tables and on the page: "attention", "attention L1", "attention L1 H2"."""
        parts = [self.method]
        if self.layer is not None:
            parts.append(f"L{self.layer + 1}")
        if self.head is not None:
            parts.append(f"H{self.head + 1}")
        return " ".join(parts)

    @property
    def label(self) -> str:
        """On the page: the method's label, its layer and head as in the name."""
        return self.name.replace(self.method, METHODS[self.method].label, 1)

    def aligned(self) -> str | None:
        """Its name in the alignment table's methods (argmax links), or None where that table has no row for it."""
        m = METHODS[self.method]
        if self.head is not None:
            return None  # a head: the alignment table's grid of heads, not a method row
        if self.layer is not None:
            return f"{self.name} argmax"
        return f"{m.aligned} argmax" if m.aligned else None


def explanations(n_layers: int, heads=()) -> list[Explanation]:
    """Every explanation of the Faithfulness view, in its order: each method, each layer's for the layered ones right
    after it, the cross-attention heads in `heads` ((layer, head) from 0) after the layers' attention."""
    found = []
    for key, m in METHODS.items():
        if m.foil:
            continue
        if m.whole:
            found.append(Explanation(key))
        if m.by_layer:
            found += [Explanation(key, layer) for layer in range(n_layers)]
        if key == "attention":
            found += [Explanation(key, layer, head) for layer, head in heads]
    return found


def sides(e: Explanation) -> tuple:
    """The sides an explanation scores: a head's is its cross-attention, the source only."""
    return ("source",) if e.head is not None else METHODS[e.method].sides


def by_name(n_layers: int, heads=()) -> dict[str, Explanation]:
    """{name: Explanation} for the Faithfulness view's explanations of a model with `n_layers` layers: the names of
    the tables looked up, never parsed."""
    return {e.name: e for e in explanations(n_layers, heads)}
