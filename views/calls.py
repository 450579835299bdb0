"""The models the page offers, and every call into them that more than one view makes: cached by its arguments, so
that changing a view, layer, head or step never runs the model again; the heavy ones take turns across sessions.

A view's own calls (beam search, a DecoderLens, ...) live in that view, made the same way: cached, and behind HEAVY's
turn when they hold a core long on a long sentence (bench/heavy_views.py measures which do).
"""

import contextvars
import functools
import gc
import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from model.batching import BatchingTranslator, TakeTurns
from model.checkpoint import CHECKPOINT_ENV, DEFAULT_CHECKPOINT, WEIGHTS
from model.device import DEVICE_ENV
from model.i18n import N_, _
from model.translator import Translator

log = logging.getLogger("explorer")


# --- the models the page offers ----------------------------------------------------------------------------------

SINUSOIDAL = DEFAULT_CHECKPOINT / "sinusoidal"  # the paper's fixed positions, same architecture
MODEL_NAMES = {"learned": N_("learned positions"), "sinusoidal": N_("sinusoidal positions (the paper's)")}


def models() -> dict[str, str | None]:
    """slug -> checkpoint of the models to choose from; the first is the default (None: the shipped one).

    $TRANSFORMER_CHECKPOINT replaces the choice with that checkpoint, as it does for every tool; or, where it names
    a folder of checkpoints (a student's converted models, model/convert.py), with each of them, by folder name.
    """
    env = os.environ.get(CHECKPOINT_ENV)
    if env:
        folder = Path(env)
        inside = [] if (folder / WEIGHTS).is_file() or not folder.is_dir() else \
            sorted(p for p in folder.iterdir() if (p / WEIGHTS).is_file())
        if not inside:
            return {"custom": env}
        found = {}
        for p in inside:
            slug = re.sub(r"[^a-z0-9_-]+", "-", p.name.lower()).strip("-") or "model"
            while slug in found:
                slug += "-"
            found[slug] = str(p)
        return found
    found = {"learned": None}
    if (SINUSOIDAL / WEIGHTS).is_file():
        found["sinusoidal"] = str(SINUSOIDAL)
    return found


MARIAN = "Hugging Face's MarianMTModel (Helsinki-NLP's opus-mt family, trained with Marian NMT)"


def family(checkpoint: str | None) -> str:
    """The tutorial family a checkpoint comes from (model/convert.py): a converted one says so in its config.json;
    the shipped models are the Trevett tutorial's architecture and vocabulary, trained here."""
    found = (checkpoint_json(checkpoint, "config.json") or {}).get("training", {}).get("family")
    return found if isinstance(found, str) else "tutorial"


def origin(checkpoint: str | None) -> str:
    """Where the model comes from, in a few words: a converted one names its tutorial (model/convert.py FAMILIES);
    the others (the shipped ones, or one trained by model/train.py) are the model of the Transformer tutorials."""
    from model.convert import FAMILIES

    converted = (checkpoint_json(checkpoint, "config.json") or {}).get("training", {}).get("family")
    if converted == "marian":
        return _("converted from {source}").format(source=MARIAN)
    if isinstance(converted, str) and converted in FAMILIES:
        return _("converted from a model of {tutorial}").format(tutorial=FAMILIES[converted].title)
    return _("the model Ben Trevett's tutorial (pytorch-seq2seq, “Attention is All You Need”) and its Korean edition "
             "build: the same architecture, vocabulary and data")


def model_name(slug: str) -> str:
    """A model's name in the switch: the shipped two by their positions; a converted one by its folder and family
    (config.json's "training", written by model/convert.py)."""
    if slug in MODEL_NAMES:
        return _(MODEL_NAMES[slug])
    checkpoint = models().get(slug)
    family = (checkpoint_json(checkpoint, "config.json") or {}).get("training", {}).get("family") if checkpoint \
        else None
    name = Path(checkpoint).name if checkpoint else slug
    return f"{name} ({family})" if isinstance(family, str) else name


# --- the calls into them, cached by their arguments --------------------------------------------------------------

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
            with st.spinner(_("Loading the model…")):
                _MODELS[key] = BatchingTranslator(Translator.load(*key))
            if len(_MODELS) == 1:
                threading.Thread(target=settle, name="settle", daemon=True).start()
        return _MODELS[key]


def settle():
    """Once per server, in the background after its first model load: captum's import, then the garbage collector
    told to leave alone everything the server holds by then.

    captum: the first visit to Attributions (or anything built on it) otherwise waits for its import, 0.8 s on a warm
    disk and 2 s on a cold one (`python -X importtime`: most of it matplotlib and IPython, which captum.attr imports),
    and took 1.7 s in all (bench/open_speed.py). A view that needs it meanwhile waits for this import (Python's
    import lock).

    gc.freeze(): torch, plotly, pandas, captum and the model are some 330,000 objects that live as long as the
    server. Python's full collection walks every one of them, holding the GIL, 0.11-0.26 s each time, and a class
    pressing Enter together allocates enough to run several: with captum imported and no freeze,
    `bench/load_test.py --sessions 40` took a median of 9.9 s (max 13.6 s) from Enter to the translation, against
    5.2 and 5.1 s (max 6.1, 6.4 s) frozen, the same hour. Frozen objects are never collected: what the first session
    holds at that moment is kept if it becomes garbage (once, a page's worth).

    Nothing else is done ahead: translating the positions view's long sentence here through both models, frozen as
    well, took that class to a median of 9.0 s in one run (max 11.4 s), as the wider warm-up reverted in 9eea771 had
    (measured while the benches' browsers could still raise their priority: tests/appserver.behind_the_servers). That
    view now needs neither the second model nor the sentence until its fold is opened (views/positions.py)."""
    try:
        import captum.attr  # noqa: F401
    except ImportError:  # the view that needs it says what is missing
        log.warning("captum could not be imported")
    gc.freeze()


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


def session_id() -> str | None:
    """The session whose script runs in this thread (None outside a session: a test, a bench)."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else None


# The computations that hold a core longest on a long sentence (bench/heavy_views.py) take turns across every
# session of this server, one at a time, one per session, the session served longest ago first (model/batching.py),
# so that one student's 100-token sentence never takes both cores from the class. A light session (under 10 s of
# turns in the last 10 minutes) takes a spare second turn when the first is held, so a student's Contributions never
# waits for a visitor's minute of faithfulness on a long sentence, and a session that is not light computes 10 steps
# nicer, so the light one beside it gets the larger share of the cores. Only a computation that is not in the cache
# waits: the turn is taken inside the cached function, in the session's own thread.
HEAVY = TakeTurns(at_once=1, asker=session_id, spare=1, heavy_nice=10)


def outside_cache(update):
    """`update` called as if from the view, not from the cached function that calls it: st.cache_data records every
    element call made while it runs, to replay on a hit, and a replayed call on an element made outside the cached
    function (a progress bar) fails with CacheReplayClosureError. The view's context (captured here) records none."""
    outer = contextvars.copy_context()
    return lambda *args: outer.run(update, *args)


@contextmanager
def waiting_notice(what: str) -> Iterator[Callable[[int], None]]:
    """A progress bar through the heavy computations' queue, shown only while one is computed (a cache miss): how
    many are ahead while it waits, then at once "computing now" (Streamlit's own spinner waits 0.5 s); gone after."""
    box, most = st.empty(), [0]

    def waiting(ahead: int):
        most[0] = max(most[0], ahead)
        box.progress(1 - ahead / (most[0] + 1), text=(
            _("{what}: waiting for its turn, {ahead} ahead of you (heavy computations take turns on this server, one "
              "session at a time, so the class keeps its speed)…") if ahead else
            _("{what}: computing now (a heavy computation: they take turns on this server)…")).format(what=what,
                                                                                                      ahead=ahead))
    try:
        yield outside_cache(waiting)  # called from inside the cached computations: not recorded for their replay
    finally:
        box.empty()


@st.cache_data(max_entries=32, show_spinner=False)  # its callers' waiting_notice says what it computes
def contributions(checkpoint: str | None, sentence: str, output_tokens: tuple, _waiting=None):
    """ALTI+ source and prefix contributions of every step of an output (a heavy computation on a long sentence:
    it takes its turn)."""
    with HEAVY.turn(_waiting):
        return load_translator(checkpoint).contributions(sentence, list(output_tokens))


@st.cache_data(max_entries=64, show_spinner=False)
def weighted_norms(checkpoint: str | None, sentence: str, output_tokens: tuple):
    """Norm-based attention of every head over an output: one teacher-forced pass, as cheap as the maps."""
    return load_translator(checkpoint).weighted_norms(sentence, list(output_tokens))


INSIDE_KEPT = 8  # Insides kept per process, the most recently used
_insides: OrderedDict = OrderedDict()
_insides_lock = threading.Lock()


def inside(checkpoint: str | None, sentence: str, output_tokens: tuple):
    """Everything one teacher-forced pass over the greedy output computes, per layer, kind and head (Inside a head
    and the walk).

    Kept here, the last INSIDE_KEPT, shared by every session and never pickled, not in st.cache_data: a full capture
    is 2.6 MB at 20 tokens (13 MB at 100), which st.cache_data would pickle on every miss and unpickle on every hit,
    32 entries at a time; every cached value stays under 1 MB (tests/page/test_cache_plain.py). Its arrays are
    read-only (model/translator.py), so sessions can share one."""
    key = (checkpoint, sentence, tuple(output_tokens))
    with _insides_lock:
        if key in _insides:
            _insides.move_to_end(key)
            return _insides[key]
    with st.spinner(_("Following the computation…")):
        found = load_translator(checkpoint).inside(sentence, list(output_tokens))
    with _insides_lock:
        _insides[key] = found
        while len(_insides) > INSIDE_KEPT:
            _insides.popitem(last=False)
    return found


@functools.lru_cache(maxsize=32)
def checkpoint_json(checkpoint: str | None, name: str) -> dict | None:
    """A JSON file that ships beside a checkpoint (head_importance.json, head_stats.json), or None; read once per
    process and shared by every session: read it, never change it.

    Not st.cache_data: that copies the table on every call (faithfulness.json, 0.8 MB, for every attention view's
    trust line, each run), and with its 8 entries for 2 models x 7 files it read the files anew over and over."""
    path = Path(checkpoint or DEFAULT_CHECKPOINT) / name
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        log.exception("could not read %s", path)
        return None


@functools.lru_cache(maxsize=8)
def faithfulness_table(checkpoint: str | None):
    """The test-set faithfulness table shipped beside a checkpoint (model/faithfulness.py's Table), or None; built
    once per process from checkpoint_json's file, shared like it: read it, never change it."""
    from model.faithfulness import Table

    shipped = checkpoint_json(checkpoint, "faithfulness.json")
    return None if shipped is None else Table.from_json(shipped)
