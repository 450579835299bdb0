"""Figures for the explorer: numpy arrays and token lists in, Plotly figures out. No torch here."""

from .attention import (COLORSCALE, MASKED_COLOR, attention_heatmap, causal_mask, cell_px, heads_at_step, label_step,
                        model_view, select_head, tile_of)
from .decoding import (beam_table, candidates_bar, head_grid, importance_heatmap, probability_change, steps_table,
                       token_diff)
from .inside import coverage_bars, score_chain, vector_strips
from .labels import plain, predicting
from .lines import attention_lines, token_of
from .positions import (cosine_similarity, dimension_curves, neighbour_cosine, position_heatmap, position_reach,
                        similarity_heatmap, sinusoidal)

__all__ = ["COLORSCALE", "MASKED_COLOR", "attention_heatmap", "attention_lines", "beam_table", "candidates_bar", "causal_mask", "cell_px",
           "cosine_similarity", "coverage_bars", "dimension_curves", "head_grid", "heads_at_step", "importance_heatmap", "label_step", "model_view", "neighbour_cosine", "plain",
           "predicting",
           "position_heatmap", "position_reach", "probability_change", "score_chain", "select_head", "similarity_heatmap", "sinusoidal",
           "steps_table", "tile_of", "token_of", "token_diff", "vector_strips"]
