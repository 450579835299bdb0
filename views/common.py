"""What every view shares: the context it is given, the cached model calls, token chips and CLI hints."""

import contextvars
import json
import logging
import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model.batching import BatchingTranslator, TakeTurns
from model.checkpoint import CHECKPOINT_ENV, DEFAULT_CHECKPOINT, WEIGHTS
from model.device import DEVICE_ENV
from model.head_importance import head_importance_for_sentence
from model.errors import InputError
from model.heads import KIND_NAMES, Head, HeadSet
from model.result import Translation
from model.translator import Translator

log = logging.getLogger("explorer")


def nothing(*args) -> None:
    """A view that reads nothing from the link, or has nothing in it to judge."""


@dataclass(frozen=True)
class View:
    """One entry of the view switch (the registry is views.VIEWS): adding a view is adding one of these."""

    slug: str  # its name in the link: ?view=slug
    label: str  # its name on the view switch
    draw: Callable  # draw(ctx): the view itself
    read: Callable = nothing  # read(params, cfg, notes): set its widgets from the link; a note per unusable parameter
    write: Callable = lambda cfg: {}  # write(cfg) -> its state as link parameters (only what decides the picture)
    judge: Callable = nothing  # judge(result, notes): once the translation is there, what only it can check


@dataclass(frozen=True)
class Context:
    """What a view needs: which checkpoint (None: the shipped one), its translator, the current result, and its
    own entry of the view switch (which says what the view writes into the link)."""

    checkpoint: str | None
    translator: Translator
    result: Translation
    view: View

    @property
    def cfg(self):
        return self.translator.cfg


# --- the widgets' state: one spelling of each key, for the views and for the link that sets them ---------

MODEL_CHOICE = "(the model's choice)"  # the what-if box of the decoding trace when no word is forced


def layer_key(kind: str) -> str:
    """The layer picked in the attention view of this kind."""
    return f"{kind}_layer"


def head_key(kind: str) -> str:
    """The head picked in the attention view of this kind: a number from 0, or "mean"."""
    return f"{kind}_head"


def ablate_key(kind: str, layer: int) -> str:
    """The heads switched off in one layer of the ablation view (a list of numbers from 0)."""
    return f"ablate_{kind}_{layer}"


def pick_seq_key(kind: str) -> str:
    """How many times the server has picked the layer and head of this kind's attention view (a head opened from
    another view): the browser, which keeps its own picks (views/maps.js), takes the server's when it changes."""
    return f"{kind}_pick_seq"


def set_pick(kind: str, layer: int, head):
    """Set the attention view of this kind to a layer and a head (a number from 0, or MEAN): the browser takes it
    over its own picks (views/maps.js)."""
    st.session_state[layer_key(kind)], st.session_state[head_key(kind)] = layer, head
    st.session_state[pick_seq_key(kind)] = st.session_state.get(pick_seq_key(kind), 0) + 1


def pick_head(head: Head):
    """Set the attention view of the head's kind to its layer and head."""
    set_pick(head.kind, head.layer, head.head)


def open_head(head: Head):
    """Show one head in its attention view (each attention view is named on the switch as its kind is)."""
    pick_head(head)
    st.session_state.view = KIND_NAMES[head.kind]


def alternatives(result: Translation, t: int) -> list[str]:
    """The words step t could have said instead: its other top candidates (the trace and the comparison force one)."""
    return [tok for tok, _ in result.steps[t].top if tok != result.steps[t].token]


def offers(result: Translation, t: int, word: str | None, notes: list) -> bool:
    """Whether step t could have said a forced word from the link (no word at all passes); a note when not."""
    if word in (None, MODEL_CHOICE) or word in alternatives(result, t):
        return True
    notes.append(f"whatif={word[:40]!r} is not one of the words step {t + 1} could have said "
                 f"({', '.join(alternatives(result, t))})")
    return False


def text_box(where, label: str, key: str, what: str, on_change: Callable | None = None, **kwargs) -> str:
    """A text box that takes at most MAX_SENTENCE characters and says so when it cuts a longer text (a paste, or a
    client that sends more than the page would): the first MAX_SENTENCE are kept, never the whole megabytes.

    No `max_chars`: Streamlit's box then drops a longer paste whole, leaving the box empty with no word why."""
    def typed():
        text = st.session_state[key]
        if len(text) > MAX_SENTENCE:
            st.session_state[key] = text[:MAX_SENTENCE]
            st.session_state[f"{key}_cut"] = (f"{what} had {len(text):,} characters, more than the {MAX_SENTENCE:,} "
                                              f"the box takes: only the first {MAX_SENTENCE:,} were kept.")
        if on_change:
            on_change()

    value = where.text_input(label, key=key, on_change=typed, **kwargs)
    if cut := st.session_state.pop(f"{key}_cut", None):
        where.warning(cut)
    return value


def text_param(params: Mapping, key: str, what: str, notes: list) -> str | None:
    """A sentence from the link (s, s2, ref), or None (with a note) when it is longer than the box takes."""
    raw = params.get(key)
    if raw is not None and len(raw) > MAX_SENTENCE:
        notes.append(f"{what} has {len(raw):,} characters, more than the {MAX_SENTENCE:,} the box takes")
        return None
    return raw


NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits, few of them: str.isdigit takes "²", int() takes "١" and refuses
                                    # more than 4,300 digits


def whole_number(raw: str, low: int, high: int) -> int | None:
    """The one reader of a number from a link: ASCII digits (at most 9) in [low, high], or None."""
    raw = raw.strip()
    return int(raw) if NUMBER.fullmatch(raw) and low <= int(raw) <= high else None


def int_param(params: Mapping, key: str, low: int, high: int, notes: list) -> int | None:
    """A whole number in [low, high] from the link, or None (with a note) when it is missing or does not fit."""
    raw = params.get(key)
    if raw is None:
        return None
    number = whole_number(raw, low, high)
    if number is None:
        notes.append(f"{key}={raw[:40]!r} is not a number from {low} to {high}")
    return number


def choice_param(params: Mapping, key: str, options, notes: list) -> str | None:
    """A value from the link that must be one of `options`, or None (with a note) when it is not; None when missing."""
    raw = params.get(key)
    if raw is None or raw in options:
        return raw
    notes.append(f"{key}={raw[:40]!r} is not one of {', '.join(options)}")
    return None


MEAN = "mean"  # the head pickers' choice of the mean of a layer's heads, on the page and in the link


def head_param(params: Mapping, cfg, notes: list) -> int | str | None:
    """head= from the link: MEAN, or a head counted from 1 given back from 0; None (with a note) when it does not
    fit this model, or is missing."""
    if params.get("head") == MEAN:
        return MEAN
    head = int_param(params, "head", 1, cfg.n_heads, notes)
    return None if head is None else head - 1


def head_link(head) -> str:
    """A picked head as the link writes it: "mean", or counted from 1."""
    return MEAN if head in (None, MEAN) else str(head + 1)


def head_picker(where, n_heads: int, key: str, **kwargs):
    """The "Head" switch of a view: the mean of the layer's heads, then each head counted from 1."""
    return where.segmented_control("Head", [MEAN, *range(n_heads)], key=key, required=True,
                                   format_func=lambda h: "mean" if h == MEAN else str(h + 1), **kwargs)


def heads_param(params: Mapping, cfg, notes: list) -> HeadSet | None:
    """off=: heads from the link, counted from 1 (cross.3 is the whole layer); None (with a note) when it names
    no head of this model, or is missing."""
    if not params.get("off"):
        return None
    try:
        return HeadSet.parse(params["off"], cfg, base=1)
    except InputError:
        notes.append(f"off={params['off'][:60]!r} names no head of this model (e.g. cross.3 or enc.1.4)")
        return None


# --- the models the page offers -----------------------------------------------------------------

MAX_SENTENCE = 2000  # characters the sentence boxes take

SINUSOIDAL = DEFAULT_CHECKPOINT / "sinusoidal"  # the paper's fixed positions, same architecture
MODEL_NAMES = {"learned": "learned positions", "sinusoidal": "sinusoidal positions (the paper's)"}


def models() -> dict[str, str | None]:
    """slug -> checkpoint of the models to choose from; the first is the default (None: the shipped one).

    $TRANSFORMER_CHECKPOINT replaces the choice with that one checkpoint, as it does for every tool.
    """
    if os.environ.get(CHECKPOINT_ENV):
        return {"custom": os.environ[CHECKPOINT_ENV]}
    found = {"learned": None}
    if (SINUSOIDAL / WEIGHTS).is_file():
        found["sinusoidal"] = str(SINUSOIDAL)
    return found


def other_model(checkpoint: str | None) -> tuple[str, str | None] | None:
    """The other model on offer (its slug and checkpoint), or None when the page has only one."""
    others = [(slug, c) for slug, c in models().items() if c != checkpoint]
    return others[0] if others and len(models()) > 1 else None


# --- model calls, cached by their arguments: changing a view, layer, head or step never re-runs the model ---

# The models are owned by this module, not by st.cache_resource: any client can send Streamlit's `clear_cache`
# message (the page hides the menu item; the server still takes the message), and a cleared resource cache would
# load a second model beside the first while the first one's batching thread ran on for ever holding it. Cleared
# data caches only cost their entries' recomputation.
_MODELS: dict[tuple, BatchingTranslator] = {}
_MODELS_LOCK = threading.Lock()


def load_translator(checkpoint: str | None) -> Translator:
    """One model for every session; never mutated (head masks and the like are call arguments).

    Kept by checkpoint and by $TRANSFORMER_DEVICE, so a changed device is never served a stale model.
    """
    return _batcher(checkpoint).translator


def _batcher(checkpoint: str | None) -> BatchingTranslator:
    key = (checkpoint, os.environ.get(DEVICE_ENV) or None)
    with _MODELS_LOCK:  # sessions starting together load it once
        if key not in _MODELS:
            with st.spinner("Loading the model…"):
                _MODELS[key] = BatchingTranslator(Translator.load(*key))
        return _MODELS[key]


@st.cache_data(max_entries=128, show_spinner=False)
def translate(checkpoint: str | None, sentence: str, heads_off: str = "", force_step=None, force_token=None):
    """Greedy translation; sessions translating at the same moment share one batch (model/batching.py)."""
    if force_step is not None:
        return load_translator(checkpoint).translate(sentence, heads_off=heads_off, force={force_step: force_token})
    return _batcher(checkpoint).translate(sentence, heads_off)


@st.cache_data(max_entries=64, show_spinner=False)
def analyze(checkpoint: str | None, sentence: str, output_tokens: tuple, heads_off: str):
    tr = load_translator(checkpoint)
    return tr.analyze(sentence, tr.tgt_vocab.encode(list(output_tokens)), heads_off=heads_off)


@st.cache_data(max_entries=64, show_spinner=False)
def score_reference(checkpoint: str | None, sentence: str, reference: str):
    return load_translator(checkpoint).score_reference(sentence, reference)


# The computations that hold a core longest on a long sentence (bench/heavy_views.py) take turns across every
# session of this server, so that one student's 100-token sentence never takes both cores from the class. Only a
# computation that is not in the cache waits: the turn is taken inside the cached function.
HEAVY = TakeTurns(at_once=1)


def outside_cache(update):
    """`update` called as if from the view, not from the cached function that calls it: st.cache_data records every
    element call made while it runs, to replay on a hit, and a replayed call on an element made outside the cached
    function (a progress bar) fails with CacheReplayClosureError. The view's context (captured here) records none."""
    outer = contextvars.copy_context()
    return lambda *args: outer.run(update, *args)


@contextmanager
def waiting_notice(what: str) -> Iterator[Callable[[int], None]]:
    """A progress bar saying how many heavy computations are ahead, shown only while one waits; gone after."""
    box, most = st.empty(), [0]

    def waiting(ahead: int):
        most[0] = max(most[0], ahead)
        box.progress(1 - ahead / (most[0] + 1), text=f"{what}: waiting for {ahead} other heavy "
                     f"computation{'s' * (ahead > 1)} on this server (they take turns, so the class keeps its speed)…")
    try:
        yield outside_cache(waiting)  # called from inside the cached computations: not recorded for their replay
    finally:
        box.empty()


@st.cache_data(max_entries=32, show_spinner="Searching with beams…")
def beam(checkpoint: str | None, sentence: str, width: int, _waiting=None):
    """Beam search (a heavy computation: it takes its turn)."""
    with HEAVY.turn(_waiting):
        return load_translator(checkpoint).beam(sentence, width)


@st.cache_data(max_entries=32, show_spinner="Measuring each token's contribution (ALTI+)…")
def contributions(checkpoint: str | None, sentence: str, output_tokens: tuple, _waiting=None):
    """ALTI+ source and prefix contributions of every step of an output (a heavy computation on a long sentence:
    it takes its turn)."""
    with HEAVY.turn(_waiting):
        return load_translator(checkpoint).contributions(sentence, list(output_tokens))


@st.cache_data(max_entries=32, show_spinner="Decoding from every encoder layer (DecoderLens)…")
def decoder_lens(checkpoint: str | None, sentence: str, _waiting=None):
    """Greedy decoding from each encoder layer's output, one full decoding per layer (a heavy computation: it
    takes its turn)."""
    with HEAVY.turn(_waiting):
        return load_translator(checkpoint).decoder_lens(sentence)


@st.cache_data(max_entries=64, show_spinner=False)
def weighted_norms(checkpoint: str | None, sentence: str, output_tokens: tuple):
    """Norm-based attention of every head over an output: one teacher-forced pass, as cheap as the maps."""
    return load_translator(checkpoint).weighted_norms(sentence, list(output_tokens))


@st.cache_data(max_entries=4, show_spinner=False)
def position_tables(checkpoint: str | None) -> dict:
    return load_translator(checkpoint).position_tables()


@st.cache_data(max_entries=32, show_spinner="Switching each head off in turn…")
def sentence_importance(checkpoint: str | None, sentence: str, _waiting=None) -> tuple[dict, float]:
    """Loss rise of this sentence's greedy output with each head masked alone, and the seconds it took (a heavy
    computation: it takes its turn; the seconds are the computation's own)."""
    with HEAVY.turn(_waiting):
        start = time.perf_counter()
        rise = head_importance_for_sentence(load_translator(checkpoint), sentence)
        return rise, time.perf_counter() - start


@st.cache_data(max_entries=8, show_spinner=False)
def checkpoint_json(checkpoint: str | None, name: str) -> dict | None:
    """A JSON file that ships beside a checkpoint (head_importance.json, head_stats.json), or None."""
    path = Path(checkpoint or DEFAULT_CHECKPOINT) / name
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        log.exception("could not read %s", path)
        return None


# --- shared pieces of the page ------------------------------------------------------------------

# Chips follow the theme: translucent backgrounds over the page and the theme's own text colour, so
# they read in light and dark mode alike (white on pale grey was unreadable in dark mode).
# Pills and segmented controls wrap onto a second line where a column is narrow (the ablation view's 8 heads at
# 800 px, "Compare with" at 390 px), instead of hiding the last options in a horizontal scroll: inside a horizontal
# container or a column Streamlit keeps them on one scrolling row (their `wrap=None` default), so the rule is here,
# for every one of them. Below 1100 px, three or more charts side by side (the layers x heads grids of importance
# and statistics) stack instead: a third of 800 px left 11 px a head, too narrow for the numbers in the cells.
# Contrast (axe-core, tests/test_access.py; WCAG 2.1 AA asks 4.5:1 of text this size): Streamlit's caption grey
# reads 3.9:1 on the light theme's white, and the primary red of a picked segment or pill, and of a slider's value,
# 4.5:1 on its pink (light) and 3.6:1 (dark). Captions take the theme's text colour at 80% instead (6:1 light,
# 10:1 dark: still quieter than the body), and picked segments the text colour itself: the primary-coloured
# border and tint still mark them.
# A button cuts its label to one line with an ellipsis: the familiarity note's buttons (views/familiarity.py) hold
# whole training sentences, cut in half on a phone; they wrap instead.
# Focus: Streamlit's focus ring is the primary colour at 50% alpha, about 2:1 against the page, under the 3:1
# a focus indicator needs; a solid outline in the element's own text colour adds it, in both themes.
# !important where Streamlit's own class rules (`outline: none`, the primary colour) outrank a rule on the element.
CSS = """<style>
.chip {display:inline-block; padding:1px 7px; margin:2px 1px; border-radius:6px; color:inherit;
       background:rgba(128,128,128,0.16); border:1px solid rgba(128,128,128,0.38);
       font-family: ui-monospace, monospace; font-size:0.92em}
.chip.unk {background:rgba(224,80,26,0.12); border:1.5px dashed #e0501a}
.chip.now {background:#c03d00; border-color:#c03d00; color:#ffffff}
.chip.del {background:rgba(220,38,38,0.14); border-color:rgba(220,38,38,0.55); text-decoration:line-through}
.chip.add {background:rgba(22,163,74,0.18); border-color:rgba(22,163,74,0.65); font-weight:600}
.translation {font-size:1.6em; font-weight:600; margin:0.1em 0 0.3em 0}
div[data-testid="stCaptionContainer"] {color:inherit; opacity:0.8}
[data-testid="stButtonGroup"] button:is([aria-checked="true"], [aria-pressed="true"]) {color:inherit !important}
div[data-testid="stSliderThumbValue"] {color:inherit !important}
:is(button, a, summary):focus-visible {outline:2px solid currentColor !important; outline-offset:2px}
[data-testid="stButtonGroup"] :is([role="toolbar"], [role="radiogroup"]) {flex-wrap:wrap; overflow-x:visible}
[class*="st-key-neighbour_"] button :is(div, p) {white-space:normal; text-align:left}
@media (max-width: 1100px) {
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(3) [data-testid="stPlotlyChart"]) {
    flex-wrap:wrap}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(3) [data-testid="stPlotlyChart"])
    > [data-testid="stColumn"] {flex:1 1 100%; min-width:100%}
}
</style>"""


MARKDOWN_CHARS = {**{c: f"&#{ord(c)};" for c in "\\`*_{}[]()#+-.!|~$\"'="}, "<": "&lt;", ">": "&gt;", "&": "&amp;"}
# Streamlit's Markdown (remark-gfm) turns web and e-mail addresses in text into live links after character
# references are decoded, so escaping cannot stop it: an invisible word joiner (U+2060) inside each "://", after
# each "@" and after "www" breaks the patterns it looks for, and the text still reads as typed.
AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=@)|(?<=www)(?=\.)", re.IGNORECASE)


def literal(text: str) -> str:
    """User or model text for st.markdown/st.caption: shown as typed, never as markdown, LaTeX, HTML or a link.

    Every character markdown, math or HTML could act on becomes a character reference, which they
    show as the character itself (`**x**` stays two stars, `$$x$$` stays dollars); an address gets AUTOLINK's joiner.
    """
    return "".join(MARKDOWN_CHARS.get(c, c) for c in AUTOLINK.sub("\u2060", text))


def token_chips(tokens, unknown=None, current=None) -> str:
    """Tokens as HTML chips for st.markdown: the user's text is shown as text, never Markdown, LaTeX or HTML."""
    unknown = unknown or [False] * len(tokens)
    chips = []
    for i, (t, u) in enumerate(zip(tokens, unknown)):
        cls = "chip unk" if u else "chip now" if i == current else "chip"
        tip = ' title="unknown to the model: read as &lt;unk&gt;"' if u else ""
        chips.append(f'<span class="{cls}"{tip}>{literal(t) or "&nbsp;"}</span>')
    return " ".join(chips)


def table_labels(tokens, unknown=None) -> list[str]:
    """Row or column names of a map's table: 'i: token', marked ' [unk]' where the model does not know it.

    Positions keep repeated tokens apart (a table's names must be unique); blank tokens get the figures' stand-ins.
    """
    unknown = unknown if unknown is not None else [False] * len(tokens)
    return [f"{i}: {t if t.strip() else '␣' if t else '∅'}{' [unk]' if u else ''}"
            for i, (t, u) in enumerate(zip(tokens, unknown))]


def map_frame(values, row_labels, col_labels, masked=None, digits: int = 4) -> pd.DataFrame:
    """A map (R, C) as a DataFrame: row labels as the index, column labels as the columns, values rounded to
    `digits`, NaN where `masked` (R, C) is True (a future position the decoder may not see)."""
    v = np.asarray(values, dtype=float)
    assert v.shape == (len(row_labels), len(col_labels)), \
        f"a {v.shape} map needs as many row and column labels, got {len(row_labels)} and {len(col_labels)}"
    assert len(set(row_labels)) == len(row_labels) and len(set(col_labels)) == len(col_labels), \
        "table labels must be unique: name tokens with table_labels (their positions keep repeats apart)"
    if masked is not None:
        v = np.where(np.asarray(masked, bool), np.nan, v)
    return pd.DataFrame(v.round(digits), index=list(row_labels), columns=list(col_labels))


def map_table(values, row_labels, col_labels, caption: str, *, key: str, masked=None, digits: int = 4,
              corner: str = "", label: str = "Show as a table") -> pd.DataFrame | None:
    """The "show as a table" alternative under a chart, for screen readers and for reading exact numbers.

    A toggle (off: nothing is built or sent), then an HTML table (st.table: screen readers walk it cell by cell
    with its row and column names) of map_frame's numbers, and map_frame's DataFrame returned (None while off).
    caption: the table's accessible name (what the chart shows); corner: the index's name, e.g. "query \\ key".
    st.table renders Markdown, so every name goes through `literal`: a token such as **x** or <b> shows as typed.
    """
    if not st.toggle(label, key=key, help=f"The numbers of this chart as a table: {caption}."):
        return None
    df = map_frame(values, row_labels, col_labels, masked, digits)
    hidden = np.zeros(df.shape, bool) if masked is None else np.asarray(masked, bool)
    text = [["masked" if m else "–" if np.isnan(x) else f"{x:.{digits}f}" for x, m in zip(row, row_hidden)]
            for row, row_hidden in zip(df.to_numpy(), hidden)]  # –: a value the statistic does not define
    shown = pd.DataFrame(text, index=pd.Index([literal(r) for r in df.index], name=literal(corner) or None),
                         columns=[literal(c) for c in df.columns])
    # A height in pixels (about a row's, capped) makes the table a scroll region that takes the keyboard's focus:
    # without one, a wide table in a narrow column scrolls sideways out of the keyboard's reach.
    st.table(shown, alt=caption, height=min(37 * (len(df) + 1) + 3, 560))
    if hidden.any():
        st.caption("masked: a later position, which this step may not look at.")
    return df


def diff_chips(diff) -> str:
    style = {"same": "chip", "removed": "chip del", "added": "chip add"}
    return " ".join(f'<span class="{style[op]}">{literal(t)}</span>' for op, t in diff)


def subtitle(sentence: str, width: int = 120) -> str:
    """The sentence under a figure's title (escaped), shortened with an ellipsis so the line fits."""
    return viz.plain(sentence if len(sentence) <= width else sentence[:width - 1] + "…")


def chart(fig, key: str, name: str = "", **kwargs):
    """st.plotly_chart with the toolbar's camera set up: PNG at 2x, or SVG, as chosen in the export section."""
    fmt = st.session_state.get("image_format", "PNG (2×)")
    config = {"toImageButtonOptions": {"format": "svg" if fmt == "SVG" else "png", "scale": 2,
                                       "filename": (name or key).replace(" ", "_")[:80]},
              "displaylogo": False}
    return st.plotly_chart(fig, key=key, config=config, **kwargs)


def cli_command(sentence: str, *args: str) -> str:
    """The command line that gives the same result, quoted so that it pastes into a shell as it is."""
    return " ".join(["echo", shlex.quote(sentence), "|", "python -m model.translate", *(shlex.quote(a) for a in args)])


def cli_hint(sentence: str, *args: str) -> None:
    st.caption("The same on the command line (it counts layers, heads and steps from 0):")
    st.code(cli_command(sentence, *args), language="bash")
