"""What the tests share, in one place: tiny vocabularies and models for unit tests, a tiny checkpoint for the
command-line tools, the shipped checkpoint and the data set when present, ways to run a tool, the page under
AppTest, and the app in headless Chromium (one server and one browser per session, a page, a download).

Four tiers, one folder each, all under this file (the README's "Run the tests"):
- tests/unit: tiny models built here or in the test, in this process; no shipped checkpoint, no data set, no AppTest,
  no browser, no `python -m` run. `python -m pytest tests/unit -n 2` is the everyday loop (the README gives its
  time); tests/unit/conftest.py gives each test one torch thread.
- tests/integration: the shipped models (shipped_models, translator: loaded once per session, read-only), the Multi30k
  data set, one real `python -m` run per tool, whole-corpus runs, and the slower tiny-model checks.
- tests/page: the page under AppTest on the shipped model.
- tests/browser: the app served (one server per session) and driven in headless Chromium (one browser per session;
  a module that needs a server of another environment starts its own).
`python -m pytest` runs them all (`-n 2`: on two workers, below); `-m "not slow"` still leaves out browsers,
AppTest, real processes and whole-corpus runs. tests/ is on the path (pyproject.toml), so `from conftest import ...`,
`from appserver import ...` and a tier's module (`from unit.test_cli import corpus`) import as they are.
"""

import base64
import gzip
import html
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from appserver import CHROMIUM, CHROMIUM_ARGS, INPUT_LABEL, free_port, start_app, stop_app, wait_idle
from model.config import ModelConfig
from model.data import default_data_dir
from model.transformer import Transformer
from model.translator import Translator
from model.vocab import Vocab
from views.state import COUNT_RUNS

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "checkpoints"

# Tiny vocabularies: 23 German and 19 English entries, the sizes of tiny_config().
GERMAN = ["<unk>", "<pad>", "<sos>", "<eos>", ".", "ein", "hund", "läuft", "im", "park", "zwei", "männer",
          "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
ENGLISH = ["<unk>", "<pad>", "<sos>", "<eos>", ".", "a", "dog", "runs", "in", "the", "park", "two", "men",
           "x", "y", "z", "u", "v", "w"]


# Two workers (`python -m pytest -n 2`; pyproject.toml's addopts put each file on one worker, so that a module's server
# and browser start once): each worker, and each process it starts (a tool run, a server), gets one torch thread, as the
# two cores are theirs to share (a tool's two threads beside the other worker ran 4x slower). A test marked `alone`
# times something against a bar: it waits for the other worker's test to end and holds that worker back while it runs (a
# readers-writer lock on two files that every worker of the run shares: the gate keeps a test waiting to run alone from
# being passed over by the next test of the other worker). And one browser test at a time (a file of tests/browser): two
# Chromium pages, each with its server, side by side starved both and failed two in a run, while a browser test beside a
# test of the other tiers keeps its timeouts.
def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"  # read by torch as a started process imports it
        torch.set_num_threads(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: nothing runs beside the test
        yield
        return
    import fcntl

    lock = Path(item.config.option.basetemp).parent / "turns"  # the run's folder: a worker's is popen-gwN in it
    alone = item.get_closest_marker("alone") is not None
    browser = item.path.parent.name == "browser"
    with open(f"{lock}.gate", "a") as gate, open(f"{lock}.room", "a") as room, open(f"{lock}.browser", "a") as tier:
        fcntl.flock(gate, fcntl.LOCK_EX)
        if alone:
            fcntl.flock(room, fcntl.LOCK_EX)  # waits for the other worker's test; the gate holds back its next
            fcntl.flock(gate, fcntl.LOCK_UN)
        else:
            fcntl.flock(gate, fcntl.LOCK_UN)
            fcntl.flock(room, fcntl.LOCK_SH)
        if browser:  # taken after the room, always in this order: no two workers wait on each other
            fcntl.flock(tier, fcntl.LOCK_EX)
        try:
            yield  # setup (a module's server too), the test, teardown
        finally:
            fcntl.flock(tier, fcntl.LOCK_UN)
            fcntl.flock(room, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def torch_threads():
    """app.py sets torch to one thread per call (for its sessions), and AppTest runs app.py inside this
    process: put the count back, so that later tests (and provenance, which names it) see the default."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def tiny_config(**kw) -> ModelConfig:
    base = dict(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_enc_layers=2, n_dec_layers=2,
                n_heads=4, d_ff=32, max_positions=24)
    return ModelConfig(**{**base, **kw})


@pytest.fixture
def tiny_model():
    torch.manual_seed(0)
    return Transformer(tiny_config()).eval()


def seeded_translator(seed: int = 3, **config) -> Translator:
    """A tiny Translator over the vocabularies above, its weights drawn from `seed` (config: tiny_config's changes)."""
    torch.manual_seed(seed)
    return Translator(Transformer(tiny_config(**config)).eval(), Vocab(GERMAN), Vocab(ENGLISH))


# The block shapes of the model families (model/convert.py), as tiny_config's changes: the paper's post-LN block;
# nn.Transformer's, with final norms; the Annotated Transformer's pre-LN block with its own LayerNorm; and that
# LayerNorm in a post-LN block, so that each analysis that reads a LayerNorm meets both variants in both places.
BLOCKS = {"post-LN": {}, "post-LN, final norms": dict(final_norm=True, positions="sinusoidal"),
          "pre-LN, std LayerNorm": dict(norm_position="pre", final_norm=True, layer_norm="std", norm_eps=1e-6),
          "post-LN, std LayerNorm": dict(layer_norm="std", norm_eps=1e-6)}


@pytest.fixture
def tiny_translator():
    return seeded_translator()


TRAINING_PAIRS = [("Ein Hund läuft im Park.", "A dog runs in the park."),
                  ("Zwei Männer spielen Fußball.", "Two men play soccer."),
                  ("Eine Frau liest ein Buch.", "A woman reads a book."),
                  ("Ein Kind spielt im Park.", "A child plays in the park."),
                  ("Zwei Hunde laufen im Schnee.", "Two dogs run in the snow."),
                  ("Ein Mann liest ein Buch.", "A man reads a book.")] * 4


def write_multi30k(folder: Path, pairs=TRAINING_PAIRS) -> Path:
    """A tiny Multi30k folder for model.train: train and val splits, both the given pairs (24 by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):
        for lang, col in (("de", 0), ("en", 1)):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(p[col] for p in pairs) + "\n")
    return folder


def random_batch(cfg, B=3, S=7, T=6, seed=0):
    """Source and target ids with <sos> first, <eos>, and right padding of different lengths."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, cfg.src_vocab_size, (B, S), generator=g)
    tgt = torch.randint(4, cfg.tgt_vocab_size, (B, T), generator=g)
    src[:, 0] = tgt[:, 0] = 2
    for b in range(B):
        s_len, t_len = S - b, T - b  # row b has b padding positions
        src[b, s_len - 1], tgt[b, t_len - 1] = 3, 3
        src[b, s_len:], tgt[b, t_len:] = 1, 1
    return src, tgt


@pytest.fixture(scope="session")
def data_dir():
    d = default_data_dir()
    if d is None:
        pytest.skip("Multi30k not found: set MULTI30K_DIR or put it in ../shared/data/multi30k")
    return d


@pytest.fixture(scope="session")
def shipped_models():
    """shipped_models(folder=CHECKPOINT) -> that shipped model's Translator on the CPU (`checkpoints/`, or
    `checkpoints/sinusoidal`), loaded once per session however many tests ask, or the test is skipped where the
    folder has no weights. Shared and read-only: a test must not change it (weights, attributes, hooks left on);
    one that would, loads its own copy."""
    loaded = {}

    def shipped(folder=CHECKPOINT) -> Translator:
        folder = Path(folder or CHECKPOINT).resolve()  # None: the shipped default, as for Translator.load
        if folder not in loaded:
            if not (folder / "model.safetensors").is_file():
                pytest.skip(f"no shipped checkpoint in {folder.relative_to(ROOT).as_posix()}/")
            loaded[folder] = Translator.load(folder, "cpu")
        return loaded[folder]

    return shipped


@pytest.fixture(scope="session")
def translator(shipped_models):
    """The shipped model (checkpoints/), once per session: shipped_models()."""
    return shipped_models(CHECKPOINT)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> str:
    """A checkpoint folder of tiny_model with the tiny vocabularies, saved once per session: for the
    command-line tools, which take a folder. Read-only: a test that writes beside a checkpoint makes its own."""
    from model.checkpoint import save_checkpoint

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny") / "ckpt"
    save_checkpoint(Transformer(tiny_config()).eval(), Vocab(GERMAN), Vocab(ENGLISH), folder)
    return str(folder)


# running the tools ----------------------------------------------------------------------------------


def run(*args, stdin="", env=None):
    """`python -m ARGS` in the project folder: for the one real process run each tool gets (slow tier)."""
    return subprocess.run([sys.executable, "-m", *args], input=stdin, capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, **(env or {})})


def assert_error_line(status, err: str, *fragments):
    """Exit status 2 and exactly one stderr line, `error: ...`, holding every fragment: no usage, no traceback."""
    assert status == 2, (status, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for f in fragments:
        assert f in lines[0], lines[0]


def assert_one_error_line(r, *fragments):
    """assert_error_line of a finished subprocess (run)."""
    assert_error_line(r.returncode, r.stderr, *fragments)


@pytest.fixture
def call(capsys, monkeypatch):
    """call(main, *argv, stdin="") -> (exit status, stdout, stderr) of a tool's main in this process."""
    def call(main, *argv, stdin: str | bytes = ""):
        data = stdin.encode() if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        try:
            status = main([str(a) for a in argv])
        except SystemExit as e:  # how argparse leaves on a bad option, after its one line
            status = e.code
        out, err = capsys.readouterr()
        return status, out, err

    return call


# the page under AppTest (slow tier) -----------------------------------------------------------------
APP = str(ROOT / "app.py")


def from_url(monkeypatch, **params):
    """app.py under AppTest with the shipped checkpoint, opened by a link with these parameters."""
    from streamlit.testing.v1 import AppTest

    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    monkeypatch.delenv("TRANSFORMER_CHECKPOINT", raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


@pytest.fixture
def app(monkeypatch):
    """The page as a new visitor sees it (no link parameters)."""
    return from_url(monkeypatch)


def literal_head_divergence(maps, first_row: int = 0) -> list:
    """model/head_stats.py head_divergence's second route: per layer, loops over head pairs, rows and keys with
    math.log2 (0 log 0 = 0), the Jensen-Shannon divergence (KL(p||m) + KL(q||m)) / 2 averaged."""
    import math

    out = []
    for layer in maps:
        total, count = 0.0, 0
        for a in range(len(layer)):
            for b in range(a + 1, len(layer)):
                for p, q in zip(layer[a][first_row:], layer[b][first_row:]):
                    js = 0.0
                    for x, y in zip(p, q):
                        m = (float(x) + float(y)) / 2
                        js += (float(x) * math.log2(float(x) / m) if x > 0 else 0.0) / 2
                        js += (float(y) * math.log2(float(y) / m) if y > 0 else 0.0) / 2
                    total, count = total + js, count + 1
        out.append(total / count if count else 0.0)
    return out


def show_view(at, slug: str):
    """Pick a view on the page's switch as a visitor does: its family (where another is open), then the view."""
    from views.registry import FAMILY_OF

    family = FAMILY_OF[slug].name
    if at.segmented_control(key="family").value != family:
        at.segmented_control(key="family").set_value(family).run()
    return at.segmented_control(key="view").set_value(slug).run()


def figure_data(app) -> list[dict]:
    """What each of the page's charts (views.widgets.chart) sends its component (views/figure.js), in page order."""
    return [json.loads(c.proto.json) for c in app.get("bidi_component") if c.proto.component_name == "explorer_figure"]


def charts(app):
    """The page's figures in order: its charts (views.widgets.chart, views/figure.js), then each browser-drawn view's
    figures as the server sends them. The maps components (views/maps.js) get each panel's figure for the server's
    pick (its line figure in the line view), the difference's, then the all-heads grid's, all without their cells: the
    browser fills them from the packed maps (read those with `decoded`; tests/test_instant.py and test_browser.py
    check what the browser draws). The decoding trace (views/trace.js): its step's three figures. Inside a head
    (views/inside.js): its figures."""
    found = [json.loads(c["figure"]) for c in figure_data(app)]
    for c in app.get("bidi_component"):
        data = json.loads(c.proto.json)
        if c.proto.component_name == "explorer_maps":
            lines = data["pick"]["draw"] == "lines"
            found += [json.loads(p["lines"]["figure"] if lines and p["lines"] else p["figure"]) for p in panels(data)]
            found.append(json.loads(data["grid"]))
        elif c.proto.component_name == "explorer_trace":
            found += [json.loads(f) for f in (data["bars"][data["step"]], data["self"]["figure"],
                                              data["cross"]["figure"])]
        elif c.proto.component_name == "explorer_inside":
            found += [json.loads(f) for f in data["figures"].values()]
    return found


def decoded(p: dict) -> np.ndarray:
    """An array as the server packs it for the browser, decoded as views/explorer.js `Explorer.decode` does:
    views.instant.packed's uint16 codes {b64, shape, offset, step} as offset + code * step, or views.instant.float32's
    {b64, shape} as its float32 values."""
    if "step" in p:
        codes = np.frombuffer(base64.b64decode(p["b64"]), dtype="<u2").astype(np.float64)
        return (p["offset"] + codes * p["step"]).reshape(p["shape"])
    return np.frombuffer(base64.b64decode(p["b64"]), dtype="<f4").reshape(p["shape"])


def panels(data: dict) -> list[dict]:
    """A maps component's panels in page order: each run's, then the difference (views/attention.py)."""
    return data["panels"] + ([data["difference"]] if data["difference"] else [])


def picked_maps(app) -> list[np.ndarray]:
    """The map of the server's pick (layer, and head or mean) in each maps component's panels, in page order: the
    packed maps as sent, decoded at that pick."""
    return [decoded(p["maps"])[data["pick"]["layer"], data["pick"]["head"]] for data in maps_data(app)
            for p in panels(data)]


def component_data(app, name: str) -> dict:
    """What the page's component `name` (trace, inside) was sent."""
    return next(json.loads(c.proto.json) for c in app.get("bidi_component") if c.proto.component_name == f"explorer_{name}")


def headers(app) -> str:
    """The maps components' panel headings (which run, and its translation), as the browser shows them."""
    return "\n".join(f"{p['header'][0]}: {p['header'][1]}" for data in maps_data(app)
                     for p in data["panels"] if p["header"])


def maps_data(app) -> list[dict]:
    """The data each maps component on the page was sent (views/attention.py builds it)."""
    return [json.loads(c.proto.json) for c in app.get("bidi_component") if c.proto.component_name == "explorer_maps"]


def shown(markdown_source: str) -> str:
    """What the browser shows of an element's Markdown source: character references decoded, the invisible word
    joiners that keep addresses from becoming links (views.widgets.literal) left out."""
    return html.unescape(markdown_source).replace("\u2060", "")


def markdown(app):
    return "\n".join(m.value for m in app.markdown)


def array(value) -> np.ndarray:
    """A data array of a chart's spec: plain JSON, or Plotly's typed-array form {"dtype", "bdata", "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")  # "11, 13" for a 2-D array
        return (a.reshape([int(n) for n in str(shape).split(",")]) if shape else a).astype(float)
    return np.asarray(value, dtype=float)


# the page in a real browser (slow tier) ---------------------------------------------------------------


def run_async(coro):
    """asyncio.run(coro) in a thread of its own: while the session's browser (sync Playwright) is open, this thread has
    an event loop running, and asyncio.run refuses to start another in it."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


# One server and one browser per session (per worker under `-n 2`), shared by every module of tests/browser that needs
# no environment of its own: its caches stay warm from module to module, and a module starts neither. Each test opens
# its own context and pages (a page is a Streamlit session of its own, with its own state) and closes them.
@pytest.fixture(scope="session")
def server():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    port = free_port()
    proc = start_app(port, env={COUNT_RUNS: "1"})  # each view run shows the count: tests/test_instant.py
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, or the test is skipped (the README says how to install it)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    """A page opened by a link to Cross-attention, where the attention views' tests start (a first visit opens the
    walk: tests/browser/test_first_visit.py)."""
    ctx = browser.new_context(viewport={"width": 1500, "height": 2200})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server + "/?view=cross")
    pg.get_by_label(INPUT_LABEL).wait_for(timeout=30_000)
    yield pg
    ctx.close()
    assert not errors, errors


def fresh_page(browser, url: str, **ctx_args):
    ctx = browser.new_context(**{"viewport": {"width": 1400, "height": 2200}, **ctx_args})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url)
    pg.get_by_label(INPUT_LABEL).wait_for(timeout=30_000)
    wait_idle(pg)
    return ctx, pg, errors


def download(page, label: str, tmp_path) -> Path:
    button = page.get_by_role("button", name=label)
    if not button.is_visible():  # the section is an expander: open it once
        page.get_by_text("Download the data behind this view").click()
    with page.expect_download(timeout=30_000) as info:
        button.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


def wait_for_title(page, text: str, timeout_ms=30_000):
    """Until a chart's title holds `text`: titles wrap into lines (views.widgets.chart, views/explorer.js), which
    the page draws as separate lines of one SVG text, so the words are found in the figure, not in the page's text."""
    page.wait_for_function("t => [...document.querySelectorAll('.js-plotly-plot')].some(g => g.layout && g.layout.title"
                           " && String(g.layout.title.text || g.layout.title).replace(/<br>/g, ' ').includes(t))",
                           arg=text, timeout=timeout_ms)
