"""Head statistics: what each head does, summed up in numbers, for this sentence and for the test set.

72 pictures are hard to compare; one number per head and statistic is not. The sentence's own
values are computed from its maps (model/head_stats.py); the test-set means ship beside the
checkpoint (head_stats.json, `python -m model.head_stats`). A row picked in the table opens that
head in its attention view.
"""

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model.export import table_csv
from model.head_stats import APPLIES, DEFINITIONS, NAMES, STATS, translation_stats
from model.heads import KIND_NAMES, KIND_SHORT, Head
from model.i18n import _, kept
from model.tables import command_line

from . import Context
from .calls import checkpoint_json
from .export import downloads
from .state import choice_param, open_head, page_view
from .widgets import chart, grid_table, literal


def read_link(params, cfg, notes: list):
    """stat: the statistic shown."""
    stat = choice_param(params, "stat", STATS, notes)
    if stat is not None:
        st.session_state.stats_stat = stat


def link_params(cfg) -> dict:
    return {"stat": st.session_state.get("stats_stat", STATS[0])}


def table(stats: dict, cfg) -> pd.DataFrame:
    """One row per head (kind, layer, head from 1), one column per statistic; empty where undefined."""
    rows = []
    for kind in KIND_NAMES:
        values = {s: stats[s].get(kind) for s in STATS}
        L = next(np.shape(v)[0] for v in values.values() if v is not None)
        for layer in range(L):
            for head in range(cfg.n_heads):
                row = {"kind": KIND_SHORT[kind], "layer": layer + 1, "head": head + 1}
                for s, v in values.items():
                    x = None if v is None else np.asarray(v, dtype=float)[layer, head]
                    row[NAMES[s]] = None if x is None or not np.isfinite(x) else round(float(x), 4)
                rows.append(row)
    return pd.DataFrame(rows)


def shown_columns() -> dict:
    """`table`'s column headers as the page shows them (the CSV and the code keep the table's own)."""
    return {"kind": _("kind"), "layer": _("layer"), "head": _("head")} | {NAMES[s]: _(NAMES[s]) for s in STATS}


def row_picked(df: pd.DataFrame):
    """A picked row shows that head in its attention view (the view switch is outside this view: no fragment)."""
    rows = st.session_state.stats_table.selection.rows
    if rows:
        row = df.iloc[rows[0]]
        kind = next(k for k, short in KIND_SHORT.items() if short == row["kind"])
        open_head(Head(kind, int(row["layer"]) - 1, int(row["head"]) - 1))


@page_view
def stats_view(ctx: Context):
    mine = translation_stats(ctx.result, ctx.cfg.source_start)
    corpus = checkpoint_json(ctx.checkpoint, "head_stats.json")
    st.caption(_("One number per head for what its attention does, for this sentence and, where the file ships "
                 "beside the model, averaged over the 1,000 sentences of the test set: sharper or more uniform, near "
                 "or far, on special tokens or punctuation, in source order or not."))
    stat = st.selectbox(_("Statistic"), STATS, key="stats_stat", format_func=kept(lambda s: _(NAMES[s])))
    stat_name, definition = _(NAMES[stat]), literal(_(DEFINITIONS[stat]))
    st.caption(f"**{literal(stat_name)}**: {definition}.")
    kinds = APPLIES[stat]
    # Each source by its id (the widgets' keys, the "Table of" switch's values), named in words where shown
    sources = [("this", mine)]
    names = {"this": _("this sentence")}
    headings = {"this": _("**This sentence**")}
    if corpus:
        sources.append(("test", corpus["stats"]))
        names["test"] = _("test set ({n:,} sentences)").format(n=corpus["n"])
        headings["test"] = _("**Test set ({n:,} sentences)**").format(n=corpus["n"])
    grids = {(name, k): np.asarray(values[stat][k], dtype=float) for name, values in sources for k in kinds
             if values[stat].get(k) is not None}
    finite = np.concatenate([g[np.isfinite(g)] for g in grids.values()]) if grids else np.zeros(1)
    finite = finite if finite.size else np.zeros(1)  # every head undefined (a source without <sos>, one step)
    low, high = float(finite.min()), float(finite.max())  # one colour range: sentence and test set compare
    for name, _values in sources:
        st.markdown(headings[name])
        cols = st.columns(len(kinds))
        for col, kind in zip(cols, kinds):
            kind_name = _(KIND_NAMES[kind])
            with col:
                chart(viz.head_grid(grids[(name, kind)], title=kind_name, value=stat_name, low=low,
                                    high=high), key=f"stats_{name}_{kind}")
                grid_table(grids[(name, kind)], f"{stat_name}, {kind_name}, {names[name]}",
                           key=f"stats_{name}_{kind}_table")
    if not corpus:
        st.info(_("No test-set statistics beside this checkpoint: `{command}` writes them (this one alone: "
                  "`python -m model.head_stats --src test_2016_flickr.de.gz`).").format(
                      command=command_line(ctx.checkpoint)))
    if st.session_state.get("stats_of") not in names:  # the test set's, after a switch to a model without it
        st.session_state.pop("stats_of", None)
    which = st.segmented_control(_("Table of"), list(names), key="stats_of", default=sources[0][0], required=True,
                                 format_func=names.get)
    df = table(dict(sources)[which], ctx.cfg)
    st.caption(_("Click a column header to sort; pick a row to open that head in its attention view."))
    # placeholder: a statistic a kind of head does not have (monotonicity of the encoder) leaves its cell empty.
    # The page shows the headers in its language; the CSV and row_picked keep the table's own.
    headers = shown_columns()
    st.dataframe(df.rename(columns=headers), hide_index=True, key="stats_table", on_select=lambda: row_picked(df),
                 selection_mode="single-row", height=320, placeholder="",
                 column_config={headers[NAMES[s]]: st.column_config.NumberColumn(format="%.3f") for s in STATS})
    downloads(ctx, extra=[(_("This table (CSV)"), "head-stats.csv", "text/csv", lambda: table_csv(df))])
