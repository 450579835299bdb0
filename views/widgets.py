"""The page's look and the pieces every view draws with: CSS, escaped text, token chips, tables, charts, the text
box and the head switch, and the command-line hint.

Anything a person or a link typed, and anything the model wrote, is shown through `literal` (as text: never Markdown,
LaTeX, HTML or a link); a figure's tokens go through viz/ (viz.labels.plain).
"""

import re
import shlex
from collections.abc import Callable
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import streamlit as st

from model.i18n import _, kept
from viz.labels import columns, wrap_title

from .calls import MARIAN, faithfulness_table, family
from .instant import figure_json, show
from .state import MAX_SENTENCE, MEAN

# Chips follow the theme: translucent backgrounds over the page and the theme's own text colour, so
# they read in light and dark mode alike (white on pale grey was unreadable in dark mode).
# Pills and segmented controls wrap onto a second line where a column is narrow (the ablation view's 8 heads at
# 800 px, "Compare with" at 390 px), instead of hiding the last options in a horizontal scroll: inside a horizontal
# container or a column Streamlit keeps them on one scrolling row (their `wrap=None` default), so the rule is here,
# for every one of them. Below 1100 px, three or more charts side by side (the layers x heads grids of importance
# and statistics) stack instead: a third of 800 px left 11 px a head, too narrow for the numbers in the cells.
# Contrast (axe-core, tests/*/test_access.py; WCAG 2.1 AA asks 4.5:1 of text this size): Streamlit's caption grey
# reads 3.9:1 on the light theme's white, and the primary red of a picked segment or pill, and of a slider's value,
# 4.5:1 on its pink (light) and 3.6:1 (dark). Captions take the theme's text colour at 80% instead (6:1 light,
# 10:1 dark: still quieter than the body), and picked segments the text colour itself: the primary-coloured
# border and tint still mark them.
# A button cuts its label to one line with an ellipsis: the familiarity note's buttons (views/familiarity.py) hold
# whole training sentences, cut in half on a phone; they wrap instead.
# Focus: Streamlit's focus ring is the primary colour at 50% alpha, about 2:1 against the page, under the 3:1
# a focus indicator needs; a solid outline in the element's own text colour adds it, in both themes.
# A command line (st.code: views.widgets.cli_hint and the views' own) wraps: with a long sentence it was a scroll region
# that the keyboard cannot reach (axe-core's scrollable-region-focusable); its copy button still takes the line whole.
# !important where Streamlit's own class rules (`outline: none`, the primary colour) outrank a rule on the element.
CSS = """<style>
.st-key-reconnect {display:none}
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
[data-testid="stCode"] :is(pre, code) {white-space:pre-wrap !important; overflow-wrap:anywhere}
.katex-display {overflow-x:auto; overflow-y:hidden; padding:2px 0}
@media (max-width: 640px) {
  .katex-display {font-size:0.86em}
  .js-plotly-plot .modebar-container {display:none}
}
@media (hover: none) and (pointer: coarse) {
  .keys-hint {display:none}
  .js-plotly-plot .modebar-container {display:none}
}
@media (max-width: 1100px) {
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(3) .explorer-figure) {
    flex-wrap:wrap}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(3) .explorer-figure)
    > [data-testid="stColumn"] {flex:1 1 100%; min-width:100%}
}
</style>"""

# The presenter layout (app.py, ?present=1): less padding above the frame, larger text for the back of the room.
PRESENT_CSS = """<style>
.block-container {padding-top:1.2rem !important}
.stMainBlockContainer {padding-top:1.2rem !important}
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li {font-size:1.15rem}
.translation {font-size:1.45em; margin:0}
</style>"""


MARKDOWN_CHARS = {**{c: f"&#{ord(c)};" for c in "\\`*_{}[]()#+-.!|~$\"'="}, "<": "&lt;", ">": "&gt;", "&": "&amp;"}
# Streamlit's Markdown (remark-gfm) turns web and e-mail addresses in text into live links, and its own plugins
# turn ":smile:" into an emoji, ":material/lock:" into an icon and ":red[x]" into coloured text, all after character
# references are decoded, so escaping cannot stop them: an invisible word joiner (U+2060) after each ":" that a
# letter, digit, "/", "+" or "-" follows, after each "@" and after "www" breaks the patterns they look for, and the
# text still reads as typed.
AUTOLINK = re.compile(r"(?<=:)(?=[\w/+-])|(?<=@)|(?<=www)(?=\.)", re.IGNORECASE)


DEFAULT_SERVER = "http://localhost:8501"  # where `streamlit run app.py` answers, when the page cannot tell its own


def server() -> str:
    """This page's own address (scheme, host, port, path), for links that leave the page: the worksheet's, a class's."""
    parts = urlsplit(st.context.url or "")
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/") if parts.netloc else DEFAULT_SERVER


MARK = "background:#ffe066; color:#1a1a1a"  # dark text on the yellow marker in both themes (white on it is unreadable)


def highlight(html: str) -> str:
    """Already escaped text (literal's) marked as the page marks a word: yellow with dark text in either theme."""
    return f"<mark style='{MARK}'>{html}</mark>"


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
        tip = ' title="' + _("unknown to the model: read as &lt;unk&gt;") + '"' if u else ""
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
              corner: str = "", label: str | None = None) -> pd.DataFrame | None:
    """The "show as a table" alternative under a chart, for screen readers and for reading exact numbers.

    A toggle (off: nothing is built or sent), then an HTML table (st.table: screen readers walk it cell by cell
    with its row and column names) of map_frame's numbers, and map_frame's DataFrame returned (None while off).
    caption: the table's accessible name (what the chart shows); corner: the index's name, e.g. "query \\ key".
    st.table renders Markdown, so every name goes through `literal`: a token such as **x** or <b> shows as typed.
    """
    if not st.toggle(label or _("Show as a table"), key=key,
                     help=_("The numbers of this chart as a table: {caption}.").format(caption=caption)):
        return None
    df = map_frame(values, row_labels, col_labels, masked, digits)
    hidden = np.zeros(df.shape, bool) if masked is None else np.asarray(masked, bool)
    masked_cell = _("masked")
    text = [[masked_cell if m else "–" if np.isnan(x) else f"{x:.{digits}f}" for x, m in zip(row, row_hidden)]
            for row, row_hidden in zip(df.to_numpy(), hidden)]  # –: a value the statistic does not define
    shown = pd.DataFrame(text, index=pd.Index([literal(r) for r in df.index], name=literal(corner) or None),
                         columns=[literal(c) for c in df.columns])
    # A height in pixels (about a row's, capped) makes the table a scroll region that takes the keyboard's focus:
    # without one, a wide table in a narrow column scrolls sideways out of the keyboard's reach.
    st.table(shown, alt=caption, height=min(37 * (len(df) + 1) + 3, 560))
    if hidden.any():
        st.caption(_("masked: a later position, which this step may not look at."))
    return df


def grid_table(values, caption: str, key: str, digits: int = 4):
    """The table under a layers x heads grid (head statistics and head importance draw such grids)."""
    L, H = np.shape(values)
    map_table(values, [_("layer {layer}").format(layer=i + 1) for i in range(L)],
              [_("head {head}").format(head=h + 1) for h in range(H)], caption, key=key,
              corner=_("layer \\ head"), digits=digits)


def diff_chips(diff) -> str:
    style = {"same": "chip", "removed": "chip del", "added": "chip add"}
    return " ".join(f'<span class="{style[op]}">{literal(t)}</span>' for op, t in diff)


TITLE_CHARS = 46  # a title line at Plotly's 17 px title font (about 7.5 px a character) that a 390 px phone shows whole


def chart(fig, key: str, name: str = "", width: str = "stretch"):
    """A figure drawn in the browser (views/figure.js, with the plotly.js the browser-drawn views share): as wide as
    its column ("stretch"), or its own width narrowed to the column ("content"); the toolbar's camera as the export
    section says (PNG at 2x, or SVG), the file named `name`; a long title wrapped into lines a phone shows whole (the
    top margin and the height grow by its new lines). Streamlit's own chart element loaded a 4.7 MB bundle on the
    page's first chart and drew a view's charts 0.5-0.8 s after its data had arrived (bench/open_speed.py)."""
    if width not in ("stretch", "content"):
        raise ValueError(f"width is 'stretch' or 'content', not {width!r}")
    title = fig.layout.title.text
    if title and columns(title) > TITLE_CHARS:
        text = wrap_title(title, TITLE_CHARS)
        added = 22 * (text.count("<br>") - title.count("<br>"))
        if added:
            fig.update_layout(title_text=text, margin_t=(fig.layout.margin.t or 80) + added)
            if fig.layout.height:
                fig.update_layout(height=fig.layout.height + added)
    return show("figure", {"figure": figure_json(fig), "file": (name or key).replace(" ", "_")[:80], "width": width},
                key=key)


def cli_command(sentence: str, *args: str) -> str:
    """The command line that gives the same result, quoted so that it pastes into a shell as it is."""
    return " ".join(["echo", shlex.quote(sentence), "|", "python -m model.translate", *(shlex.quote(a) for a in args)])


def cli_hint(sentence: str, *args: str) -> None:
    st.caption(_("The same on the command line (it counts layers, heads and steps from 0):"))
    st.code(cli_command(sentence, *args), language="bash")


# Moves the keyboard focus to the element whose key is data["key"] (its .st-key-KEY box): after a pick, into the view
# picked; after a guess, to its verdict (the clicked question is gone, and the focus would fall to the page's top).
# data["for"] tells one occasion from the next (the component runs again when its data change). A component, not an
# inline <script>: the deployed page's policy runs no inline script (deploy/security-headers.conf).
# data["phone"]: only on a phone-wide screen (640 px or less), where the element is scrolled to the screen's top
# instead of focused.
# Done twice: the rest of the run may still redraw the control that was clicked, which can take the focus back (seen
# on a loaded machine); the second time only moves a focus that is not inside the element already.
focus = st.components.v2.component("explorer_focus", js="""export default function ({data}) {
  const go = () => {
    const box = document.querySelector(".st-key-" + CSS.escape(data.key));
    if (!box || (data.phone && window.innerWidth > 640)) return;
    if (data.phone) return box.scrollIntoView({block: "start"});  // scrolled only: a focused box drew an outline
    if (!box.contains(document.activeElement)) {
      box.tabIndex = -1;
      box.focus({preventScroll: true});
    }
  };
  go();
  setTimeout(go, 300);
}""")


def tutorial_names(checkpoint: str | None) -> str:
    """One line: what the tutorial the model comes from calls the parts the page names (model/convert.py FAMILIES),
    so a student finds them in the code they trained."""
    from model.convert import FAMILIES

    found = family(checkpoint)
    title, theirs = (MARIAN, MARIAN_NAMES) if found == "marian" else (FAMILIES[found].title, FAMILIES[found].names)
    names = {"W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V", "W_O": "W_O", "scores": _("the scores q·k"),
             "d_model": "d_model", "d_ff": "d_ff", "generator": _("the output layer")}
    return _("In the code of {title}: {names}.").format(title=title, names=", ".join(
        _("{name} is {code}").format(name=names[k], code=f"`{v}`") for k, v in theirs.items()))


# Hugging Face's names (transformers' models/marian/modeling_marian.py) for the parts the page names
MARIAN_NAMES = {"W_Q": "q_proj", "W_K": "k_proj", "W_V": "v_proj", "W_O": "out_proj", "d_model": "d_model",
                "d_ff": "encoder_ffn_dim (fc1, fc2)", "generator": "lm_head (and final_logits_bias)"}


FAITHFULNESS = "faithfulness.json"  # the test-set table of model/faithfulness.py, beside each checkpoint


def trust_line(checkpoint: str | None, methods: dict, side: str = "source", names=("German", "English")) -> None:
    """One line under an explanation: how faithful (comprehensiveness against random orders) and how plausible
    (alignment error) its method was on the test set, from the checkpoint's faithfulness.json; nothing without it.

    methods: {label said in the line ("" for one method): method name in the table}, e.g. {"layer 1": "attention
    L1", ...}; names: what the page calls the source and the target (Context.names)."""
    shipped = faithfulness_table(checkpoint)
    if shipped is None:
        return
    rows = getattr(shipped, side).rows
    found = {label: rows[m] for label, m in methods.items() if m in rows}
    if not found:
        return
    with_label = lambda label, x: f"{x:.2f}" + (f" ({label})" if label else "")  # noqa: E731
    drop = ", ".join(with_label(k, e.comprehensiveness.mean) for k, e in found.items())
    aer = [with_label(k, e.aer) for k, e in found.items() if e.aer is not None]
    diagonal = (shipped.baselines or {}).get("diagonal", {}).get("aer")
    numbers = dict(n=shipped.n_sentences, drop=drop, random=getattr(shipped, side).random.comprehensiveness.mean,
                   source=names[0], target=names[1])
    line = (_("How far to trust it, on {n} test sentences (the Faithfulness view measures every method): removing the "
              "{source} tokens it ranks first lowers the probability of the word written by {drop} on average, random "
              "orders by {random:.2f}") if side == "source" else
            _("How far to trust it, on {n} test sentences (the Faithfulness view measures every method): removing the "
              "{target} words before the step it ranks first lowers the probability of the word written by {drop} on "
              "average, random orders by {random:.2f}")).format(**numbers)
    if aer and diagonal is not None:
        line += _("; its alignments' error rate is {aer}, a diagonal alignment's {diagonal:.2f}.").format(
            aer=", ".join(aer), diagonal=diagonal)
    st.caption(line if aer and diagonal is not None else line + ".")


def text_box(where, label: str, key: str, what: str, on_change: Callable | None = None, **kwargs) -> str:
    """A text box that takes at most MAX_SENTENCE characters and says so when it cuts a longer text (a paste, or a
    client that sends more than the page would): the first MAX_SENTENCE are kept, never the whole megabytes.

    No `max_chars`: Streamlit's box then drops a longer paste whole, leaving the box empty with no word why."""
    def typed():
        text = st.session_state[key]
        if len(text) > MAX_SENTENCE:
            st.session_state[key] = text[:MAX_SENTENCE]
            st.session_state[f"{key}_cut"] = len(text)  # said in the run: a callback runs before its language is set
        if on_change:
            on_change()

    value = where.text_input(label, key=key, on_change=typed, **kwargs)
    if cut := st.session_state.pop(f"{key}_cut", None):
        where.warning(_("{what} had {n:,} characters, more than the {max:,} the box takes: only the first {max:,} were "
                        "kept.").format(what=what, n=cut, max=MAX_SENTENCE))
    return value


def head_picker(where, n_heads: int, key: str, **kwargs):
    """The "Head" switch of a view: the mean of the layer's heads, then each head counted from 1."""
    return where.segmented_control(_("Head"), [MEAN, *range(n_heads)], key=key, required=True,
                                   format_func=kept(lambda h: _("mean") if h == MEAN else str(h + 1)), **kwargs)
