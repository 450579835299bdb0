"""Token labels and input checks shared by every figure.

Plotly draws tick and hover text as a small subset of HTML, so a token like
"<script>" or "<sos>" would vanish or be read as markup. Every token shown in a
figure goes through `plain`, which escapes it: the user's text is always text.
"""

import html
import string
import unicodedata

import numpy as np

from model.i18n import N_, _

ARROW = " → "
# What one attention map of each kind shows, for the page and the HTML report (map_caption fills in the words, the
# languages and the decoder's start token, and escapes all of it: "<sos>" is text).
MAP_CAPTIONS = {
    "enc": N_("Each {src} token (row) builds its new representation as a weighted mix of all {src} tokens "
              "(columns). Each row sums to 1."),
    "dec": N_("Each decoder row reads the {tgt} produced so far (columns) while predicting the next word: "
              "the row “{a} → {b}” is where the model, having just written “{a}”, chose “{b}”. Grey cells are "
              "future positions, masked: the model cannot see them. The first row, “{start} → {first}”, has only "
              "{start} to look at, so every head gives {start} weight 1: by construction, not by choice."),
    "cross": N_("While predicting the next {tgt} word, each decoder row reads from the {src} tokens (columns). "
                "The row “{start} → {first}” is where the model, with nothing written yet, chose “{first}”. "
                "Rows sum to 1."),
}
def map_caption(kind: str, steps: list, escape=html.escape, names=("German", "English"), start="<sos>") -> str:
    """The caption of a map of this kind, its example rows named by the output's first words, the languages by
    `names` (model.languages.language_names) and the decoder's first input by `start`, all of it `escape`d.

    The template's own text is escaped too (its "<sos>" is text, not a tag), piece by piece between its
    {placeholders}: escaping the whole template first would also escape the braces `format` needs
    (views.widgets.literal does)."""
    words = dict(first=steps[0], a=steps[0], b=steps[1] if len(steps) > 1 else steps[0], src=names[0],
                 tgt=names[1], start=start)
    return "".join(escape(text) + (escape(words[name]) if name else "")
                   for text, name, _spec, _conv in string.Formatter().parse(_(MAP_CAPTIONS[kind])))


def plain(token: str) -> str:
    """Escape a token for Plotly text; empty or whitespace tokens get a visible stand-in."""
    if not token.strip():
        return "␣" if token else "∅"
    return html.escape(token, quote=False)


def positioned(tokens, unknown=None) -> list[str]:
    """Labels 'i: token' (escaped), marked ' [unk]' where the model does not know the token.

    The position makes repeated tokens ("a ... a") distinct in hover text.
    """
    unknown = unknown if unknown is not None else [False] * len(tokens)
    return [f"{i}: {plain(t)}{' [unk]' if u else ''}" for i, (t, u) in enumerate(zip(tokens, unknown))]


def tick_labels(tokens, unknown=None, width: int = 16) -> list[str]:
    """Axis labels: escaped, long tokens shortened to `width` characters (hover text keeps them whole).

    A decoder-row label "input → predicted" (see `predicting`) is shortened half by half.
    """
    unknown = unknown if unknown is not None else [False] * len(tokens)
    short = lambda t: t if len(t) <= width else t[:width - 1] + "…"  # noqa: E731
    return [plain(ARROW.join(short(part) for part in t.split(ARROW))) + (" [unk]" if u else "")
            for t, u in zip(tokens, unknown)]


def predicting(inputs, predicted) -> list[str]:
    """Decoder rows named by what they read and what they predict: "<sos> → two", "two → men", ...

    A decoder row at input token t is where the model chooses the *next* token; students read
    "<sos>" alone as "<sos> looks at the source", when the row is predicting "two".
    """
    if len(inputs) != len(predicted):
        raise ValueError(f"{len(inputs)} decoder inputs but {len(predicted)} predicted tokens")
    return [f"{a}{ARROW}{b}" for a, b in zip(inputs, predicted)]


# The tokens of each kind of map: its rows (queries), then its columns (keys): the source ("src"), the decoder rows
# named by what they read and predict ("tgt"), or the decoder's inputs as they are ("inputs"): a decoder self-attention
# key is a token already read, not a prediction.
SIDES = {"enc": ("src", "src"), "dec": ("tgt", "inputs"), "cross": ("tgt", "src")}


def token_labels(result, side: str) -> tuple[list, list | None]:
    """Tokens and <unk> flags of one side of a Translation (model/result.py), as the page and the HTML report label
    them: the source; the decoder rows named by what they read and predict (`predicting`; no flags); or the decoder's
    inputs, <sos> then every output token but the last (no flags)."""
    assert side in ("src", "tgt", "inputs"), f"a side is src, tgt or inputs, got {side!r}"
    if side == "src":
        return result.src_tokens, result.src_unknown
    if side == "inputs":
        return result.tgt_tokens, None
    return predicting(result.tgt_tokens, [s.token for s in result.steps]), None


def subtitle(sentence: str, width: int = 120) -> str:
    """The sentence under a figure's title (escaped), shortened with an ellipsis so the line fits."""
    return plain(sentence if len(sentence) <= width else sentence[:width - 1] + "…")


def columns(text: str) -> int:
    """A text's width in Latin characters: a wide character (Hangul, the CJK scripts: Unicode's East Asian Width W or
    F) draws about as wide as two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap_title(text: str, width: int) -> str:
    """A figure title longer than `width` characters broken into the fewest lines that width allows, each break at
    the space nearest an equal share (no short last word alone on its line), joined by Plotly's <br>; lines it
    already has are kept. Plotly neither wraps a title nor keeps it inside the chart."""
    lines = []
    for part in text.split("<br>"):
        n = -(-columns(part) // width)  # lines
        spaces = [i for i, c in enumerate(part) if c == " "]
        cuts = sorted({min(spaces, key=lambda i: abs(i - k * len(part) / n)) for k in range(1, n)} if spaces else ())
        starts = [0, *(c + 1 for c in cuts)]
        lines += [part[a:b].strip() for a, b in zip(starts, [*cuts, len(part)])]
    return "<br>".join(lines)


def check_tokens(tokens, name: str):
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"{name} must be a list of strings (tokens), got {type(tokens).__name__}")


def check_weights(weights, ndim: int, what: str, signed: bool = False) -> np.ndarray:
    """An attention array as float numpy, with a clear error saying what to pass instead.

    signed: a difference of two attention maps, so in [-1, 1] instead of [0, 1].
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} dimensions, got shape {w.shape}")
    low = -1.0 if signed else 0.0
    if w.size and (not np.isfinite(w).all() or w.min() < low - 1e-6 or w.max() > 1 + 1e-6):
        raise ValueError(f"{what} must hold {'differences of ' if signed else ''}attention weights in "
                         f"[{low:g}, 1], got values in [{np.nanmin(w):.3g}, {np.nanmax(w):.3g}]")
    return w


# The feed-forward network's activation, by ModelConfig.activation: its name and its formula in LaTeX (the paper's
# ReLU; Marian's swish, x·sigmoid(x), Ramachandran et al. 2017; GELU, Hendrycks and Gimpel 2016)
ACTIVATIONS = {"relu": ("ReLU", r"\max(0,\, "), "swish": ("swish", r"\mathrm{swish}("),
               "gelu": ("GELU", r"\mathrm{GELU}(")}
