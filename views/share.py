"""The page's state in its address: a copied link opens the same picture (issue 10).

    ?s=Zwei+Männer+...&view=cross&layer=3&head=3         an attention view, one head (or head=mean)
    ?s=...&view=trace&step=4&whatif=boys                   the decoding trace at step 4, step 4 forced
    ?s=...&view=ablate&off=cross.3,enc.1.4                 heads switched off (a whole layer, or one head)
    ?s=...&view=reference&ref=Two+men+...                  a reference to score
    ?s=...&view=beam&beam=5                                beam search of width 5
    ?s=...&view=cross&layer=2&draw=lines                  the line view of layer 2 (all heads)
    ?s=...&model=sinusoidal                                the sinusoidal-position model (issue 14)
    ?s=...&view=cross&vs=model                             compare with the other model (or vs=sentence&s2=...,
                                                           vs=off with off=..., vs=force with step and whatif)
    ?s=...&view=inside&kind=cross&layer=2&head=8&query=3   one query through one head (query counts from 0,
                                                           as the token positions on the page do)

Layers, heads and steps count from 1, as on the page (the CLIs count from 0). Only the
parameters that decide the current view are written, so links stay short. A parameter
that does not fit (an unknown view, layer 9, a head spec that names no head, a sentence
longer than the box takes) is dropped with a message, and the page shows its default.
"""

import functools

import streamlit as st

from model.head_stats import STATS

from . import compare
from .common import KIND_NAMES, MAX_SENTENCE, log, models

VIEW_SLUGS = {"cross": "Cross-attention", "enc": "Encoder self-attention", "dec": "Decoder self-attention",
              "inside": "Inside a head", "trace": "Decoding trace", "flow": "Source flow", "positions": "Positional encodings", "ablate": "Ablate heads", "stats": "Head statistics",
              "importance": "Head importance", "reference": "Reference", "beam": "Beam search"}
SLUG_OF = {v: k for k, v in VIEW_SLUGS.items()}
MAX_BEAM = 8


def _int(params, key: str, low: int, high: int, notes: list) -> int | None:
    """A whole number in [low, high] from the URL, or None (with a note) when it is missing or does not fit."""
    raw = params.get(key)
    if raw is None:
        return None
    if raw.strip().isdigit() and low <= int(raw) <= high:
        return int(raw)
    notes.append(f"{key}={raw[:40]!r} is not a number from {low} to {high}")
    return None


def parse_off(spec: str, cfg) -> dict | None:
    """'cross.3,enc.1.4' (1-based) -> {(kind, layer): [heads]} (0-based), or None if any item names no head."""
    picked = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        parts = item.split(".")
        if len(parts) not in (2, 3) or parts[0] not in KIND_NAMES or not all(p.isdigit() for p in parts[1:]):
            return None
        kind, layer = parts[0], int(parts[1]) - 1
        n = cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers
        heads = [int(parts[2]) - 1] if len(parts) == 3 else list(range(cfg.n_heads))
        if not 0 <= layer < n or not all(0 <= h < cfg.n_heads for h in heads):
            return None
        picked[(kind, layer)] = sorted(set(picked.get((kind, layer), [])) | set(heads))
    return picked


def format_off(cfg) -> str:
    """The heads switched off on the page, as the URL writes them (1-based; a whole layer as 'kind.layer')."""
    items = []
    for kind in KIND_NAMES:
        n = cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers
        for layer in range(n):
            heads = sorted(st.session_state.get(f"ablate_{kind}_{layer}") or [])
            if len(heads) == cfg.n_heads:
                items.append(f"{kind}.{layer + 1}")
            else:
                items += [f"{kind}.{layer + 1}.{h + 1}" for h in heads]
    return ",".join(items)


def read_model(available: dict) -> list[str]:
    """The `model` parameter, read before the model is loaded (it decides which one); a note if it names none."""
    slug = st.query_params.get("model")
    if slug is None or slug in available:
        if slug:
            st.session_state.model = slug
        return []
    return [f"model={slug[:40]!r} is not one of {', '.join(available)}"]


def read_url(cfg) -> list[str]:
    """Set the widgets' state from the URL, once per browser session; returns a note per dropped parameter."""
    params, notes = st.query_params, []
    sentence = params.get("s")
    if sentence is not None:
        if len(sentence) > MAX_SENTENCE:
            notes.append(f"the sentence has {len(sentence):,} characters, more than the {MAX_SENTENCE:,} the box takes")
        else:
            st.session_state.sentence = sentence
    slug = params.get("view")
    if slug is not None and slug not in VIEW_SLUGS:
        notes.append(f"view={slug[:40]!r} is not one of {', '.join(VIEW_SLUGS)}")
    view = VIEW_SLUGS.get(slug)
    if view:
        st.session_state.view = view
    kind = slug if slug in KIND_NAMES else None
    if slug == "inside":
        kind = params.get("kind", "cross")
        if kind not in KIND_NAMES:
            notes.append(f"kind={kind[:40]!r} is not one of {', '.join(KIND_NAMES)}")
            kind = "cross"
        st.session_state.inside_kind = kind
        n = cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers
        layer, head = _int(params, "layer", 1, n, notes), _int(params, "head", 1, cfg.n_heads, notes)
        if layer is not None:
            st.session_state.inside_layer = layer - 1
        if head is not None:
            st.session_state.inside_head = head - 1
        query = _int(params, "query", 0, cfg.max_positions - 1, notes)
        if query is not None:
            st.session_state.inside_query = query  # the view clamps it to the sentence
        kind = None
    if kind:
        n = cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers
        layer = _int(params, "layer", 1, n, notes)
        if layer is not None:
            st.session_state[f"{kind}_layer"] = layer - 1
        if params.get("draw") in ("map", "lines"):
            st.session_state.draw_as = params["draw"]
        if params.get("head") == "mean":
            st.session_state[f"{kind}_head"] = "mean"
        else:
            head = _int(params, "head", 1, cfg.n_heads, notes)
            if head is not None:
                st.session_state[f"{kind}_head"] = head - 1
    step = _int(params, "step", 1, 10_000, notes)
    if step is not None:
        st.session_state.trace_step = step  # the trace clamps it to the output's length
    if params.get("whatif"):
        st.session_state.what_if = params["whatif"]  # the trace drops it unless it is a candidate of the step
    if params.get("off"):
        picked = parse_off(params["off"], cfg)
        if picked is None:
            notes.append(f"off={params['off'][:60]!r} names no head of this model (e.g. cross.3 or enc.1.4)")
        else:
            for (k, layer), heads in picked.items():
                st.session_state[f"ablate_{k}_{layer}"] = heads
    if params.get("ref") is not None:
        st.session_state.reference = params["ref"][:MAX_SENTENCE]
    read_compare(params, cfg, kind, notes)
    if params.get("stat") is not None:
        if params["stat"] in STATS:
            st.session_state.stats_stat = params["stat"]
        else:
            notes.append(f"stat={params['stat'][:40]!r} is not one of {', '.join(STATS)}")
    width = _int(params, "beam", 1, MAX_BEAM, notes)
    if width is not None:
        st.session_state.beam_width = width
    return notes


def read_compare(params, cfg, kind: str | None, notes: list):
    """An attention view's second run: vs=model, vs=sentence&s2=..., vs=off&off=..., vs=force&step=&whatif=."""
    vs = params.get("vs")
    if vs is None or kind is None:
        return
    if vs not in compare.OPTIONS:
        notes.append(f"vs={vs[:40]!r} is not one of {', '.join(compare.OPTIONS)}")
        return
    st.session_state.vs = vs
    if vs == "sentence":
        st.session_state.s2 = params.get("s2", "")[:MAX_SENTENCE]
    elif vs == "off" and params.get("off"):
        picked = parse_off(params["off"], cfg) or {}
        st.session_state.vs_off = [f"{k}.{layer}.{h}" for (k, layer), heads in picked.items() for h in heads]
    elif vs == "force":
        step = st.session_state.pop("trace_step", None)
        if step is not None:
            st.session_state.vs_step = step - 1  # the view drops it unless the output is that long
        if params.get("whatif"):
            st.session_state.vs_word = params["whatif"]


def compare_params(cfg) -> dict:
    """The second run of an attention view, as URL parameters."""
    s = st.session_state
    vs = s.get("vs", "none")
    params = {} if vs == "none" else {"vs": vs}
    if vs == "sentence" and s.get("s2"):
        params["s2"] = s.s2
    elif vs == "off" and s.get("vs_off"):
        picked = compare.picked_heads(s.vs_off)
        params["off"] = ",".join(f"{k}.{layer + 1}.{h + 1}" for (k, layer), heads in picked.items() for h in heads)
    elif vs == "force" and s.get("vs_word") is not None:
        params.update(step=str(s.get("vs_step", 0) + 1), whatif=s.vs_word)
    return params


def state_params(cfg) -> dict:
    """What decides the current picture, as URL parameters."""
    s = st.session_state
    sentence, view = s.get("sentence", ""), s.get("view")
    params = {"s": sentence} if sentence else {}
    if s.get("model", "learned") != next(iter(models())):  # the default model is not written: links stay short
        params["model"] = s.model
    slug = SLUG_OF.get(view)
    if slug:
        params["view"] = slug
    if slug in KIND_NAMES:
        layer, head = s.get(f"{slug}_layer"), s.get(f"{slug}_head", "mean")
        if layer is not None:
            params["layer"] = str(layer + 1)
        params["head"] = "mean" if head in (None, "mean") else str(head + 1)
        if s.get("draw_as") == "lines":
            params["draw"] = "lines"
        params.update(compare_params(cfg))
    elif slug == "inside":
        params.update(kind=s.get("inside_kind", "cross"), layer=str(s.get("inside_layer", 0) + 1),
                      head=str(s.get("inside_head", 0) + 1), query=str(s.get("inside_query", 0)))
    elif slug == "trace":
        params["step"] = str(s.get("trace_step", 1))
        if s.get("what_if") not in (None, "(the model's choice)"):
            params["whatif"] = s.what_if
    elif slug == "ablate" and format_off(cfg):
        params["off"] = format_off(cfg)
    elif slug == "reference" and s.get("reference"):
        params["ref"] = s.reference
    elif slug == "stats":
        params["stat"] = s.get("stats_stat", STATS[0])
    elif slug == "beam":
        params["beam"] = str(s.get("beam_width", 4))
    return params


def write_url(cfg):
    """Put the current state into the address bar (only when it changed: each write is a browser message)."""
    params = state_params(cfg)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def page_view(view):
    """Decorate a view: every run of it, a fragment's own reruns too, leaves its state in the URL, and an
    error inside it is logged with its traceback and shown as the page's own message, never a traceback."""
    @functools.wraps(view)
    def run(ctx, *args):
        try:
            return view(ctx, *args)
        except Exception as e:  # st.stop and st.rerun are BaseExceptions: they pass
            log.exception("view %s failed for %r", view.__name__, ctx.result.source)
            st.error(f"This view could not be drawn ({type(e).__name__}). Try another sentence or view.")
        finally:
            write_url(ctx.cfg)
    return run
