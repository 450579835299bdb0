"""The page's views. Each takes a `Context` (the checkpoint, its translator, the current result) and draws itself.

app.py is the frame (sentence box, translation header, view switch); everything a view shows
lives here, one module per view or family of views. Views never read app.py's globals.
VIEWS is the one list of them: the view switch, the link (views/share.py) and the tests read it.
"""

from . import alignment, attributions, evidence, inside, interventions, stats, trace, training, walk
from .attention import view_entry
from .common import Context, View
from .contributions import contributions_view
from .flow import flow_view
from .importance import importance_view
from .positions import positions_view

# The view switch, in the order a newcomer meets them: the guided walk, then where the translation reads the source.
# Each entry: its slug in the link (?view=), its label on the switch, how it draws, what it reads from the link
# and writes into it (only what decides its picture), and what of the link only the translation can judge.
VIEWS = {v.label: v for v in (
    View("walk", "Walk through the model", walk.walk_view, walk.read_link, walk.link_params),
    view_entry("cross"),
    view_entry("enc"),
    view_entry("dec"),
    View("inside", "Inside a head", inside.inside_view, inside.read_link, inside.link_params),
    View("trace", "Decoding trace", trace.trace_view, trace.read_link, trace.link_params, trace.judge_link),
    View("flow", "Source flow", flow_view),
    View("contributions", "Contributions", contributions_view),
    View("attribute", "Attributions", attributions.attributions_view, attributions.read_link,
         attributions.link_params),
    View("align", "Alignment", alignment.alignment_view, alignment.read_link, alignment.link_params),
    View("training", "Training", training.training_view, training.read_link, training.link_params),
    View("evidence", "Training evidence", evidence.evidence_view, evidence.read_link, evidence.link_params),
    View("positions", "Positional encodings", positions_view),
    View("ablate", "Ablate heads", interventions.ablation_view, interventions.read_ablation_link,
         interventions.ablation_link),
    View("stats", "Head statistics", stats.stats_view, stats.read_link, stats.link_params),
    View("importance", "Head importance", importance_view),
    View("reference", "Reference", interventions.reference_view, interventions.read_reference_link,
         interventions.reference_link),
    View("beam", "Beam search", interventions.beam_view, interventions.read_beam_link, interventions.beam_link),
)}

DEFAULT_VIEW = "Cross-attention"  # what a new page shows: the walk is one click away, first on the switch

__all__ = ["Context", "DEFAULT_VIEW", "VIEWS", "View"]
