"""Figures for the explorer: numpy arrays and token lists in, Plotly figures out. No torch here.

One command draws too: `python -m viz.report SENTENCE --out FILE.html` (viz/report.py), one translation as a
self-contained HTML page."""

import sys

# `python -m viz.report` imports this package first, with sys.argv[0] set to "-m" meanwhile: Ctrl-C while the
# figures' imports (plotly, pandas) load is one line too, as for model's commands (model/__init__.py, model/cli.py).
if getattr(sys, "argv", [])[:1] == ["-m"]:
    from model.cli import catch_early_interrupts

    catch_early_interrupts()

from .alignment import aer_grid, alignment_map, link_classes
from .attention import (COLORSCALE, GAP, MASKED_COLOR, NORM_LABEL, attention_heatmap, causal_mask, cell_px, check_norms,
                        heads_at_step, heat_scale, label_step, model_view, select_head, step_keys_axis)
from .attributions import attribution_map, share_comparison
from .classroom import class_votes
from .features import feature_histogram
from .contributions import (WEIGHT_NORM, contribution_map, ffn_logit_bars, low_steps, source_share_bars,
                            weights_and_norms)
from .decoding import (beam_table, candidates_bar, head_grid, importance_heatmap, probability_change, steps_table,
                       token_diff)
from .inside import CHAIN, MASKED_BAR, coverage_bars, score_chain, vector_strips
from .guess import mark_guess
from .labels import map_caption, plain, predicting
from .lines import attention_lines, layer_lines
from .training import heads_over_time, training_curve
from .positions import (cosine_similarity, dimension_curves, neighbour_cosine, position_heatmap, position_reach,
                        similarity_heatmap, sinusoidal)

__all__ = ["class_votes", "CHAIN", "MASKED_BAR", "WEIGHT_NORM", "aer_grid", "alignment_map", "attribution_map", "heads_over_time", "link_classes", "training_curve", "COLORSCALE", "GAP", "MASKED_COLOR", "NORM_LABEL", "attention_heatmap", "ffn_logit_bars", "feature_histogram", "attention_lines", "beam_table", "layer_lines",
           "candidates_bar", "causal_mask", "cell_px", "check_norms", "contribution_map", "cosine_similarity",
           "coverage_bars", "dimension_curves", "head_grid", "heads_at_step", "heat_scale", "importance_heatmap", "label_step",
           "low_steps", "map_caption", "mark_guess", "model_view", "neighbour_cosine", "plain", "position_heatmap", "position_reach", "predicting",
           "probability_change", "score_chain", "select_head", "share_comparison", "similarity_heatmap", "sinusoidal", "source_share_bars",
           "step_keys_axis", "steps_table", "token_diff", "vector_strips", "weights_and_norms"]
