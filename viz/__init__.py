"""Figures for the explorer: numpy arrays and token lists in, Plotly figures out. No torch here."""

from .attention import COLORSCALE, MASKED_COLOR, attention_heatmap, causal_mask, heads_at_step, model_view, select_head
from .decoding import (beam_table, candidates_bar, importance_heatmap, probability_change, steps_table,
                       token_diff)
from .labels import plain
from .positions import cosine_similarity, dimension_curves, position_heatmap, similarity_heatmap, sinusoidal

__all__ = ["COLORSCALE", "MASKED_COLOR", "attention_heatmap", "beam_table", "candidates_bar", "causal_mask",
           "cosine_similarity", "dimension_curves", "heads_at_step", "importance_heatmap", "model_view", "plain",
           "position_heatmap", "probability_change", "select_head", "similarity_heatmap", "sinusoidal",
           "steps_table", "token_diff"]
