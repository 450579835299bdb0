"""The view switch: every view of the page, by the slug that names it in the link (?view=slug).

VIEWS is the one list of them: app.py draws the switch from it (each view's label), views/state.py reads the link's
view with it, and the tests walk it. Adding a view is adding its entry here; this is the one module that imports the
views (they never import one another).
"""

from . import (View, alignment, attention, attributions, contributions, evidence, exercises, faithful, flow, importance,
               inside, interventions, patch, positions, stats, trace, training, walk)

# The view switch, in the order a newcomer meets them: the guided walk, then where the translation reads the source.
# Each entry: its slug in the link (?view=), its label on the switch, how it draws, what it reads from the link
# and writes into it (only what decides its picture), what of the link only the translation can judge, and its
# flags (asks a question first, drawn in the browser, heavy): every other list of views is read off these.
VIEWS = {v.slug: v for v in (
    View("walk", "Walk through the model", walk.walk_view, walk.read_link, walk.link_params, asks=True),
    View("exercises", "Exercises", exercises.exercises_view, heavy=True),
    attention.view_entry("cross"),
    attention.view_entry("enc"),
    attention.view_entry("dec"),
    View("inside", "Inside a head", inside.inside_view, inside.read_link, inside.link_params, asks=True,
         browser=True),
    View("trace", "Decoding trace", trace.trace_view, trace.read_link, trace.link_params, trace.judge_link,
         asks=True, browser=True),
    View("flow", "Source flow", flow.flow_view, heavy=True),
    View("contributions", "Contributions", contributions.contributions_view, heavy=True),
    View("attribute", "Attributions", attributions.attributions_view, attributions.read_link,
         attributions.link_params, heavy=True),
    View("faithful", "Faithfulness", faithful.faithful_view, faithful.read_link, faithful.link_params, heavy=True),
    View("patch", "Causes", patch.patch_view, patch.read_link, patch.link_params, heavy=True),
    View("align", "Alignment", alignment.alignment_view, alignment.read_link, alignment.link_params, heavy=True),
    View("training", "Training", training.training_view, training.read_link, training.link_params),
    View("evidence", "Training evidence", evidence.evidence_view, evidence.read_link, evidence.link_params),
    View("positions", "Positional encodings", positions.positions_view),
    View("ablate", "Ablate heads", interventions.ablation_view, interventions.read_ablation_link,
         interventions.ablation_link),
    View("stats", "Head statistics", stats.stats_view, stats.read_link, stats.link_params),
    View("importance", "Head importance", importance.importance_view, heavy=True),
    View("reference", "Reference", interventions.reference_view, interventions.read_reference_link,
         interventions.reference_link),
    View("beam", "Beam search", interventions.beam_view, interventions.read_beam_link, interventions.beam_link,
         heavy=True),
)}

DEFAULT_VIEW = "cross"  # what a new page shows (Cross-attention): the walk is one click away, first on the switch
