"""Positional encodings: the model's own tables next to the paper's sinusoids."""

import pandas as pd
import streamlit as st

import viz

from .common import Context, chart, position_tables
from .export import downloads
from .share import page_view


def default_dims(d_model: int) -> list[int]:
    """A few dimensions from fast (0, 1) to slow (near d_model), inside any model's range."""
    return sorted({d for d in (0, 1, d_model // 8, d_model // 4, d_model // 2) if 0 <= d < d_model})


@st.fragment
@page_view
def positions_view(ctx: Context):
    tables, result = position_tables(ctx.checkpoint), ctx.result
    kind = "learned" if ctx.cfg.positions == "learned" else "the paper's fixed sinusoids"
    st.caption(f"The model adds a position vector to every token embedding. This model's are {kind} (one row "
               "per position); the paper's sinusoids are shown for comparison. Orange marks the positions this "
               "sentence uses.")
    P, D = tables["source"].shape
    choices = {"model, source (encoder)": (tables["source"], len(result.src_tokens)),
               "model, target (decoder)": (tables["target"], len(result.tgt_tokens)),
               "sinusoidal (the paper)": (viz.sinusoidal(P, D), len(result.src_tokens))}
    which = st.segmented_control("Table", list(choices), key="pos_table", default=list(choices)[0], required=True)
    table, used = choices[which]
    c1, c2 = st.columns(2)
    with c1:
        chart(viz.position_heatmap(table, used, title=f"{which}: positions × dimensions"), key="pos_map")
    with c2:
        chart(viz.similarity_heatmap(table, used, title="Cosine similarity between positions"), key="pos_sim")
    dims = st.multiselect("Dimensions to draw", list(range(D)), default=default_dims(D), key="pos_dims")
    if dims:
        chart(viz.dimension_curves(table, dims, used, title="Dimensions over position"), key="pos_curves")
    name = which.split(" (")[0].replace(", ", "-").replace(" ", "-")
    downloads(ctx, extra=[(f"This table (CSV, positions × {D} dimensions)", f"positions-{name}.csv", "text/csv",
                           lambda: pd.DataFrame(table).rename_axis("position").to_csv())])
