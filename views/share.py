"""The page's state in its address: a copied link opens the same picture.

    ?s=Zwei+Männer+...&view=cross&layer=3&head=3         an attention view, one head (or head=mean)
    ?s=...&view=trace&step=4&whatif=boys                   the decoding trace at step 4, step 4 forced
    ?s=...&view=ablate&off=cross.3,enc.1.4                 heads switched off (a whole layer, or one head)
    ?s=...&view=reference&ref=Two+men+...                  a reference to score
    ?s=...&view=beam&beam=5                                beam search of width 5
    ?s=...&view=cross&layer=2&draw=lines                  the line view of layer 2 (all heads)
    ?s=...&model=sinusoidal                                the sinusoidal-position model
    ?s=...&view=cross&vs=model                             compare with the other model (or vs=sentence&s2=...,
                                                           vs=off with off=..., vs=force with step and whatif)
    ?s=...&view=inside&kind=cross&layer=2&head=8&query=3   one query through one head (query counts from 0,
                                                           as the token positions on the page do)
    ?s=...&view=cross&values=norms                         norm-based attention instead of the weights
    ?s=...&view=contributions                              how much each word drew on the source (ALTI+)
    ?s=...&view=walk&stop=5                                the walk through the model, at its 5th stop

Layers, heads and steps count from 1, as on the page (the CLIs count from 0). Only the
parameters that decide the current view are written, so links stay short. This module reads
and writes what every page has (the sentence, the model, the view); each view reads and writes
its own parameters (its entry in views.VIEWS). A parameter that does not fit (an unknown view,
layer 9, a head spec that names no head, a sentence longer than the box takes, a forced word
the step does not offer) is dropped with a message, and the page shows its default.
"""

import functools
import os

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.common import user_key_from_element_id

from .common import MAX_SENTENCE, View, log, models, text_param

COUNT_RUNS = "EXPLORER_COUNT_RUNS"  # set (tests, benches): each view run shows the number of view runs so far


def read_model(available: dict) -> list[str]:
    """The `model` parameter, read before the model is loaded (it decides which one); a note if it names none."""
    slug = st.query_params.get("model")
    if slug is None or slug in available:
        if slug:
            st.session_state.model = slug
        return []
    return [f"model={slug[:40]!r} is not one of {', '.join(available)}"]


def read_url(cfg, views: dict[str, View]) -> list[str]:
    """Set the widgets' state from the URL, once per browser session; returns a note per dropped parameter.

    views: the view switch's registry (label -> View); the view the link names reads its own parameters.

    A page that lost its server (a replica killed behind the proxy) reconnects to a new session, and Streamlit's page
    reruns nothing when it reconnects while idle: the new session's first run is the student's next interaction,
    say a new sentence and Enter, sent with every widget's value as the page shows it and with the link as it was
    before. The link holds the rest (every run writes it, views/explorer.js adds the picks made in the browser), but
    not what was just typed: the text boxes' values the browser sent win.
    """
    params, notes = st.query_params, []
    sentence = text_param(params, "s", "the sentence", notes)
    if sentence is not None:
        st.session_state.sentence = sentence
    by_slug = {v.slug: v for v in views.values()}
    slug = params.get("view")
    if slug is not None and slug not in by_slug:
        notes.append(f"view={slug[:40]!r} is not one of {', '.join(by_slug)}")
    view = by_slug.get(slug)
    if view:
        st.session_state.view = view.label
        view.read(params, cfg, notes)
    ctx = get_script_run_ctx()
    for w in ctx.session_state.get_widget_states() if ctx else []:  # none when a page is opened
        if (key := user_key_from_element_id(w.id)) in ("sentence", "s2", "reference") and w.HasField("string_value"):
            st.session_state[key] = w.string_value[:MAX_SENTENCE]  # the boxes' keys (views.common.text_box), bounded
    return notes


def judge_url(result, views: dict[str, View]) -> list[str]:
    """What only the translation can judge in the link (a forced word must be a candidate of its step), checked
    once, right after read_url's first translation; returns a note per dropped parameter."""
    notes = []
    view = views.get(st.session_state.get("view"))  # on the first run, only the link has set it
    if view:
        view.judge(result, notes)
    return notes


def state_params(cfg, view: View | None) -> dict:
    """What decides the current picture, as URL parameters: the sentence, the model, the view and its own."""
    s = st.session_state
    sentence = s.get("sentence", "")
    params = {"s": sentence} if sentence else {}
    if s.get("model", "learned") != next(iter(models())):  # the default model is not written: links stay short
        params["model"] = s.model
    if view:
        params["view"] = view.slug
        params.update(view.write(cfg))
    return params


def write_url(cfg, view: View | None):
    """Put the current state into the address bar (only when it changed: each write is a browser message)."""
    params = state_params(cfg, view)
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
            write_url(ctx.cfg, ctx.view)
            if os.environ.get(COUNT_RUNS):  # tests: how often views ran (a pick drawn in the browser runs none)
                st.session_state.view_runs = st.session_state.get("view_runs", 0) + 1
                st.html(f"<span class='view-runs' hidden>{st.session_state.view_runs}</span>")
    return run
