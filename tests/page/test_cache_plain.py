"""What the page keeps between runs is plain data: every view, opened on a 20-token sentence, leaves in
st.cache_data (which pickles each entry and unpickles it on every hit) no model, translator, tensor, hook or module,
and no entry over 1 MB. A live model inside a cached value cost 36-73 MB per entry and failed under other sessions'
attributions (captum's hooks on a shared copy)."""

import pickle
import pickletools

import numpy as np
import pytest
import streamlit as st

from conftest import from_url
from views import calls
from views.registry import VIEWS

pytestmark = pytest.mark.slow

S = "Ein kleines Mädchen in einem rosa Kleid klettert mit ihrem alten Vater heute auf einen großen Baum im Park ."
LIMIT = 1_000_000
LIVE = {"Translator", "BatchingTranslator", "Transformer", "Attributor", "Removals", "module"}  # never in a result


def cached_entries() -> dict:
    """{(function, key): pickled bytes} of every st.cache_data entry in this process (Streamlit's in-memory caches:
    runtime.caching.cache_data_api, the storage each cached function writes its pickles to)."""
    from streamlit.runtime.caching.cache_data_api import _data_caches

    found = {}
    for caches in _data_caches._function_caches.values():
        for cache in caches.values():
            storage = cache.storage
            memory = getattr(storage, "_mem_cache", None)
            assert memory is not None, f"{cache.display_name}: not kept in memory ({type(storage).__name__})"
            for key, blob in list(memory.items()):
                found[cache.display_name, key] = blob
    return found


def globals_named(blob: bytes) -> set[str]:
    """Every class or function a pickle names (the modules it would import to load it)."""
    names, strings = set(), []
    for op, arg, _ in pickletools.genops(blob):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            names.add(".".join(strings[-2:]))
        elif op.name in ("GLOBAL", "INST"):
            names.add(arg.replace(" ", "."))
    return names


def test_what_every_view_caches_is_plain_and_small(monkeypatch, translator):
    assert len(translator.source_ids(S)[0]) - 2 == 20
    st.cache_data.clear()
    for slug in VIEWS:
        at = from_url(monkeypatch, s=S, view=slug)
        assert not at.exception, (slug, at.exception)
    entries = cached_entries()
    functions = {name for name, _ in entries}
    assert len(functions) >= 15, functions  # most views keep something: the check is not empty
    for (name, _), blob in entries.items():
        assert len(blob) < LIMIT, (name, len(blob))
        live = {g for g in globals_named(blob) if g.split(".")[0] in ("torch", "captum") or g.split(".")[-1] in LIVE}
        assert not live, (name, live)
        value = pickle.loads(blob).value  # a CachedResult: what the function returned
        assert "Translator" not in type(value).__name__ and "Module" not in type(value).__name__, (name, type(value))
    # The one large value, Inside (every activation of one pass), is kept unpickled in views/calls.py instead:
    # numpy arrays only, read-only, so that the sessions sharing it cannot change it.
    insides = list(calls._insides.values())
    assert insides and len(insides) <= calls.INSIDE_KEPT
    for ins in insides:
        arrays = [a for group in (ins.sublayers, ins.embedding, ins.ffn) for d in group.values() for a in d.values()]
        assert arrays and all(isinstance(a, np.ndarray) and not a.flags.writeable for a in arrays)


def test_the_check_finds_a_live_model_in_a_pickle(tiny_translator):
    """The same check, on what the page once kept: a translator in a cached value is found."""
    blob = pickle.dumps({"scores": [1.0], "attributor": tiny_translator})
    assert "model.translator.Translator" in globals_named(blob)
    assert any(g.startswith("torch") for g in globals_named(blob))
