"""Take the data out: every view offers the numbers behind what it shows as files.

The files are made only when a button is clicked (deferred), so drawing a view costs nothing extra:
- the whole result as JSON, line for line the `model.translate --json` format, plus its provenance;
- every attention map as a compressed .npz (arrays, tokens, provenance), and the same for BertViz;
- the map on screen and the step trace as CSV (positions kept, so repeated tokens stay apart; a decoder row named
  as the page names it, "<sos> → a": the token read → the token chosen);
- the whole result as one self-contained HTML page (viz/report.py: every map with layer and head switches, the
  trace; plotly.js inside, so it opens offline), byte for byte what `python -m viz.report` writes.
Every JSON and .npz file says how it numbers layers, heads and steps (model/export.py NUMBERING: from 0, where the
page counts from 1); the step trace's CSV and the HTML page count as the page does, from 1.
"""

import json

import streamlit as st

from model.export import bertviz_npz, map_csv, maps_npz, numbered, provenance, result_json, steps_csv
from model.i18n import _, kept
from viz.labels import token_labels
from viz.report import report_html

from . import Context

IMAGE_FORMATS = ["PNG (2×)", "SVG"]


def map_rows(result, query_tokens: list) -> list[str]:
    """The names of a map's rows in its CSV, as the page names them: a map whose rows are the result's decoder inputs
    (cross- or decoder self-attention, a rollout) by the token read and the token chosen, "<sos> → a"
    (viz.labels.predicting); any other map (the source's) by its tokens."""
    if list(query_tokens) == list(result.tgt_tokens):
        return token_labels(result, "tgt")[0]
    return list(query_tokens)


def downloads(ctx: Context, result=None, heads_off: str = "", force: dict | None = None, beam: int = 1,
              shown_map=None, extra: list | None = None):
    """The export section of a view.

    result: what the view shows (default: the page's greedy result), made with heads_off / force / beam;
    shown_map: (name, weights (Q, K), query tokens, key tokens) of the map on screen (its rows named as the page
    names them: map_rows);
    extra: further (label, file name, mime, make-bytes) entries.
    """
    result = result or ctx.result

    def prov():  # made on click with the file, not on every redraw of the view (it reads pyproject.toml)
        return provenance(ctx.translator, heads_off=heads_off, force=force, beam=beam)

    def stated(make):  # a JSON file of the views: its numbering said in it, as the result's provenance says it
        return lambda: json.dumps(numbered(json.loads(make())), ensure_ascii=False)

    stem = "translation" + ("-ablated" if heads_off else "-whatif" if force else f"-beam{beam}" if beam > 1 else "")
    files = [(_("Result (JSON)"), f"{stem}.json", "application/json",
              lambda: json.dumps(result_json(result, numbered(prov())), ensure_ascii=False)),
             (_("All maps (.npz)"), f"{stem}-maps.npz", "application/octet-stream",
              lambda: maps_npz(result, numbered(prov()))),
             (_("For BertViz (.npz)"), f"{stem}-bertviz.npz", "application/octet-stream", lambda: bertviz_npz(result)),
             (_("Step trace (CSV)"), f"{stem}-steps.csv", "text/csv", lambda: steps_csv(result)),
             (_("Download as an HTML page"), f"{stem}.html", "text/html",
              kept(lambda: report_html(result, prov(), ctx.names)))]
    if shown_map is not None:
        name, weights, q_tokens, k_tokens = shown_map
        files.insert(1, (_("This map (CSV)"), f"{name}.csv", "text/csv",
                         lambda: map_csv(weights, map_rows(result, q_tokens), k_tokens)))
    files += [(label, name, mime, stated(make) if mime == "application/json" else make)
              for label, name, mime, make in extra or []]
    # Made only while open (state tracked: opening it reruns the view): its buttons, its choice and its caption were
    # about a quarter of the script thread's samples per Enter (py-spy), on every pick and every Enter.
    section = st.expander(_("Download the data behind this view"), key="downloads_open", on_change="rerun")
    if not section.open:
        return
    with section:
        row = st.container(horizontal=True, gap="small")
        for label, file_name, mime, make in files:
            row.download_button(label, data=make, file_name=file_name, mime=mime, on_click="ignore",
                                key=f"download_{file_name}")
        # The choice is kept under its own key: a widget's state is dropped on a run that does not draw it.
        st.segmented_control(_("The chart toolbar's camera saves"), IMAGE_FORMATS, key="image_format_pick",
                             default=st.session_state.get("image_format", IMAGE_FORMATS[0]), required=True,
                             on_change=keep_image_format)
        st.caption(_("The JSON is exactly what `python -m model.translate --json` prints for this sentence and these "
                     "settings, with a `provenance` record (checkpoint and its hash, heads off, forced steps, beam, "
                     "versions, and the `numbering` below). Load the BertViz file with "
                     "`model.export.load_bertviz_npz(path)` and pass the result to `bertviz.model_view(**...)`. The "
                     "HTML page holds every map (a layer and head switch for each kind) and the trace, and opens from "
                     "disk with no network: for a slide or a course page. Numbering: the JSON and .npz files count "
                     "layers, heads, steps and positions from 0, as their arrays index them and the command-line tools "
                     "do, and say so in a `numbering` field; the file names, the step trace's steps and the HTML page "
                     "count as this page does, from 1 (a map CSV's positions from 0)."))


def keep_image_format():
    st.session_state.image_format = st.session_state.image_format_pick  # read by views/instant.show
