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
    st.caption("One number per head for what its attention does, for this sentence and, where the file ships "
               "beside the model, averaged over the 1,000 sentences of the test set: sharper or more uniform, near "
               "or far, on special tokens or punctuation, in source order or not.")
    stat = st.selectbox("Statistic", STATS, key="stats_stat", format_func=NAMES.get)
    st.caption(f"**{literal(NAMES[stat])}**: {literal(DEFINITIONS[stat])}.")
    kinds = APPLIES[stat]
    sources = [("this sentence", mine)]
    if corpus:
        sources.append((f"test set ({corpus['n']:,} sentences)", corpus["stats"]))
    grids = {(name, k): np.asarray(values[stat][k], dtype=float) for name, values in sources for k in kinds
             if values[stat].get(k) is not None}
    finite = np.concatenate([g[np.isfinite(g)] for g in grids.values()]) if grids else np.zeros(1)
    finite = finite if finite.size else np.zeros(1)  # every head undefined (a source without <sos>, one step)
    low, high = float(finite.min()), float(finite.max())  # one colour range: sentence and test set compare
    for name, _ in sources:
        st.markdown(f"**{name.capitalize()}**")
        cols = st.columns(len(kinds))
        for col, kind in zip(cols, kinds):
            with col:
                chart(viz.head_grid(grids[(name, kind)], title=KIND_NAMES[kind], value=NAMES[stat], low=low,
                                    high=high), key=f"stats_{name.split()[0]}_{kind}")
                grid_table(grids[(name, kind)], f"{NAMES[stat]}, {KIND_NAMES[kind]}, {name}",
                           key=f"stats_{name.split()[0]}_{kind}_table")
    if not corpus:
        st.info(f"No test-set statistics beside this checkpoint: `{command_line(ctx.checkpoint)}` writes them (this "
                "one alone: `python -m model.head_stats --src test_2016_flickr.de.gz`).")
    which = st.segmented_control("Table of", [name for name, _ in sources], key="stats_of",
                                 default=sources[0][0], required=True)
    df = table(dict(sources)[which], ctx.cfg)
    st.caption("Click a column header to sort; pick a row to open that head in its attention view.")
    # placeholder: a statistic a kind of head does not have (monotonicity of the encoder) leaves its cell empty
    st.dataframe(df, hide_index=True, key="stats_table", on_select=lambda: row_picked(df),
                 selection_mode="single-row", height=320, placeholder="",
                 column_config={NAMES[s]: st.column_config.NumberColumn(format="%.3f") for s in STATS})
    downloads(ctx, extra=[("This table (CSV)", "head-stats.csv", "text/csv", lambda: table_csv(df))])
