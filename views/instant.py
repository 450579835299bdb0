"""What the page draws in the browser: a view's numbers reach the page once, and the browser redraws each pick.

A change of layer, head, mean of heads, drawing (map or lines), colour stretch, a token's lines or a tile of the
all-heads grid, of decoding step, or of layer, head and query in "Inside a head" is what people repeat most; it used to
rerun the whole script and redraw figures built in Python (0.25-0.6 s a click). Each such view mounts a Streamlit
components v2 component (`show`: inline JavaScript, no iframe, no build step): views/explorer.js, the small framework
they share (mount, decode, index, pick store), followed by the view's own maps.js, trace.js or inside.js. The page
sends the view's numbers once (`packed`: uint16 codes; Inside a head's float32), with the figures viz/ built for the
first pick, sent without their per-cell arrays (`skeleton`), the titles and colour ranges of every pick, and the
view's prose; the browser fills and swaps them with Plotly.react. viz/ stays the one place that says how a figure
looks. docs/contract.md, "The maps in the browser".

plotly.js is served by the app itself, gzipped once (`serve_plotly`: no CDN, the app works offline): plotly.js's own
cartesian bundle (assets/plotly/, heatmaps, scatter and bars: all these views draw) when it is the version the
installed plotly package writes figures for, otherwise the package's full plotly.js.
"""

import base64
import functools
import gzip
import os
from pathlib import Path

import numpy as np
import plotly
import streamlit as st
from plotly.offline import get_plotlyjs_version

from model.i18n import N_, SOURCE, _, language

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "static"  # served at app/static/ ([server] enableStaticServing in .streamlit/config.toml)
WEIGHT_STEP = 1e-4  # weights travel as multiples of 1e-4: the 4 decimals the hover, the table and the CSV show
MAX_CODE = 65535  # packed values are uint16


@functools.cache  # once per process: every view run asks for the address
def serve_plotly() -> str:
    """Copy plotly.js into static/ (once per version), beside a gzipped twin, and return the twin's address.

    Which plotly.js: the cartesian bundle that ships in assets/plotly/ (1.5 MB; everything these views draw, from
    plotly.js's own release) when its version is the one the installed plotly package writes figures for, otherwise
    that package's full plotly.js (4.8 MB). A fresh browser spends most of a link's opening evaluating it: 1.2 s for
    the full one on a 2-core machine, 0.5 s for the cartesian one (bench/open_speed.py). Copied rather than served
    from where it lies: static/ is the one folder Streamlit serves. The page fetches the twin and unzips it itself
    (views/explorer.js loadPlotly): Streamlit would gzip the plain file anew for every page (it compresses each
    app/static answer at level 9, ~0.1 s of the server's CPU; a class of 20 opening the page at once, 2-3 s), while a
    .gz goes out as it is (application/gzip). The plain copy is for a browser without DecompressionStream."""
    source = plotly_source()
    target = STATIC / source.name.replace("plotly.min.js", f"plotly-{get_plotlyjs_version()}.min.js")
    twin = target.with_name(target.name + ".gz")
    if not target.is_file() or target.stat().st_size != source.stat().st_size or not twin.is_file():
        STATIC.mkdir(exist_ok=True)
        code = source.read_bytes()
        partial = target.with_suffix(f".{os.getpid()}.part")  # each server its own: replicas may start together
        for path, content in ((target, code), (twin, gzip.compress(code, compresslevel=9, mtime=0))):
            partial.write_bytes(content)
            partial.replace(path)  # a server starting beside this one never serves half a file
    return f"app/static/{twin.name}"


def plotly_source() -> Path:
    """The plotly.js file to serve: the shipped cartesian bundle of the installed package's plotly.js version, or
    the package's own full bundle."""
    cartesian = ROOT / "assets" / "plotly" / f"plotly-cartesian-{get_plotlyjs_version()}.min.js"
    return cartesian if cartesian.is_file() else Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def packed(values, offset: float = 0.0, step: float | None = None) -> dict:
    """An array as uint16 codes (little-endian, base64): value = offset + code * step.

    step: WEIGHT_STEP by default (weights and their differences keep 4 exact decimals); for values with no
    upper bound (norms) the smallest step that fits the largest value. NaN (a masked cell) travels as 0: the
    component masks by the view's own rule.
    """
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=offset)
    if step is None:
        top = float(v.max() - offset) if v.size else 0.0
        step = max(WEIGHT_STEP, top / MAX_CODE)
    codes = np.rint((v - offset) / step)
    if codes.size and (codes.min() < 0 or codes.max() > MAX_CODE):
        raise ValueError(f"values in [{v.min():.4g}, {v.max():.4g}] do not fit offset {offset} and step {step}")
    raw = codes.astype("<u2").tobytes()
    return {"b64": base64.b64encode(raw).decode("ascii"), "shape": list(v.shape), "offset": offset, "step": step}


def float32(values) -> dict:
    """An array as little-endian float32 (base64), for numbers with no bound (Inside a head's vectors): the model's
    own values, which the hover shows to 4 decimals."""
    a = np.ascontiguousarray(np.asarray(values, dtype="<f4"))
    return {"b64": base64.b64encode(a.tobytes()).decode("ascii"), "shape": list(a.shape)}


def with_means(maps: np.ndarray) -> np.ndarray:
    """(L, H, Q, K) -> (L, H + 1, Q, K): each layer's heads, then their mean (the page's "mean" pick)."""
    m = np.asarray(maps, dtype=np.float64)
    return np.concatenate([m, m.mean(axis=1, keepdims=True)], axis=1)


def skeleton(fig, *fields: str):
    """The figure without its per-cell arrays (e.g. "z", "customdata"): the browser fills them from the packed maps
    and the token labels, so a 100-token map does not travel twice."""
    for trace in fig.data:
        for field in fields:
            trace[field] = None
    return fig


def figure_json(fig) -> str:
    """A figure as plotly's JSON (numpy arrays as typed arrays), without the default template: the component
    draws on the page's own background and text colour, in either theme."""
    fig.update_layout(template=None)
    return fig.to_json()


_components = {}


def component(name: str):
    """The registered component `name`, once per process: one module, views/explorer.js (the framework, which
    declares the one name `Explorer`) followed by views/<name>.js (which exports its view's function)."""
    if name not in _components:
        here = Path(__file__).parent
        js = (here / "explorer.js").read_text(encoding="utf-8") + "\n" + (here / f"{name}.js").read_text(encoding="utf-8")
        # In the page's own DOM, not a shadow root: plotly.js puts its hover and toolbar styles in the document.
        _components[name] = st.components.v2.component(f"explorer_{name}", js=js, isolate_styles=False)
    return _components[name]


# What the browser-drawn views write themselves (views/*.js, each through Explorer.say, in English there): sent to
# them in the page's language with every component's data (tests/unit/test_i18n.py holds this list to the scripts)
JS_WORDS = (
    N_("Download plot as a {format}"),
    N_("masked"),
    N_("Layer"),
    N_("Head"),
    N_("{kind}, layer {layer}, head {head}, query {query}: “{token}”"),
    N_("key"),
    N_("weight"),
    N_("(weight 0)"),
    N_("masked: a future position"),
    N_("head {head}"),
    N_("score q·k"),
    N_("scaled q·k / √{d}"),
    N_("query \\ key"),
    N_("mean"),
    N_("Draw as"),
    N_("map"),
    N_("lines"),
    N_("Show every token's lines (now only {side} {token})"),
    N_("query"),
    N_("◀ Previous"),
    N_("Next ▶"),
    N_("Where it learned this step"),
    N_("Step"),
    N_("Show as a table"),
    N_("Keyboard: the ← and → keys step back and forward (Tab to the slider and they move it instead)."),
    N_("What each decoder layer would say"),
    N_("(the logit lens)"),
    N_("The output layer applied to the state after each decoder layer (post-LN, so each is already normalised). "
       "The last row is the model's real choice; earlier rows show how the guess forms."),
    N_("step {step} of {n}"),
    N_("Step {step} of {n}."),
    N_("Output so far:"),
    N_("Reading {read}, the model chose {token} with probability {p}; entropy {entropy} nats; runner-up {runner} ({q})."),
    N_("Top candidates for step {step} and their probabilities"),
    N_("candidate"),
    N_("probability"),
    N_("head \\ key"),
    N_("The logit lens at step {step}"),
    N_("after decoder layer"),
    N_("top {k}"),
    N_("What if step {step} had said…"),
)


def words() -> dict:
    """JS_WORDS in the page's language, English -> translation (nothing for English: the scripts' own text)."""
    return {} if language() == SOURCE else {w: _(w) for w in JS_WORDS}


def show(name: str, data: dict, key: str, **callbacks):
    """Mount the component `name` (maps, trace) with `data` (its JavaScript says what it reads)."""
    image = "svg" if st.session_state.get("image_format") == "SVG" else "png"  # the export section's choice
    # key: the browser keeps a left view's drawn charts under it for the view's next visit (views/explorer.js)
    return component(name)(data={"plotly": serve_plotly(), "image_format": image, "key": key, "words": words(),
                                 **data}, key=key, **callbacks)
