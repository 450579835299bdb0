"""The page's views. Each takes a `Context` (the checkpoint, its translator, the current result) and draws itself.

app.py is the frame (sentence box, translation header, view switch); everything a view shows
lives here, one module per view or family of views. Views never read app.py's globals.
"""

from .attention import attention_view
from .common import Context
from .flow import flow_view
from .importance import importance_view
from .inside import inside_view
from .interventions import ablation_view, beam_view, reference_view
from .positions import positions_view
from .stats import stats_view
from .trace import trace_view

# The view switch, in the order a newcomer meets them: where the translation reads the source first.
VIEWS = {
    "Cross-attention": lambda ctx: attention_view(ctx, "cross"),
    "Encoder self-attention": lambda ctx: attention_view(ctx, "enc"),
    "Decoder self-attention": lambda ctx: attention_view(ctx, "dec"),
    "Inside a head": inside_view,
    "Decoding trace": trace_view,
    "Source flow": flow_view,
    "Positional encodings": positions_view,
    "Ablate heads": ablation_view,
    "Head statistics": stats_view,
    "Head importance": importance_view,
    "Reference": reference_view,
    "Beam search": beam_view,
}

__all__ = ["Context", "VIEWS"]
