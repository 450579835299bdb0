"""The view switch: every view of the page, by the slug that names it in the link (?view=slug).

VIEWS is the one list of them: app.py draws the switch from it (each view's label), views/state.py reads the link's
view with it, and the tests walk it. Adding a view is adding its entry here; this is the one module that imports the
views (they never import one another).
"""

from dataclasses import dataclass

from model.i18n import N_

from . import (View, alignment, attention, attributions, contributions, evidence, exercises, faithful, features, flow,
               importance, inside, interventions, patch, positions, stats, trace, training, walk)

# The views, in the order of their families on the switch (FAMILIES, below): the guided walk first.
# Each entry: its slug in the link (?view=), its label on the switch, how it draws, what it reads from the link
# and writes into it (only what decides its picture), what of the link only the translation can judge, and its
# flags (asks a question first, drawn in the browser, heavy): every other list of views is read off these.
VIEWS = {v.slug: v for v in (
    View("walk", N_("Walk through the model"), walk.walk_view, walk.read_link, walk.link_params, asks=True),
    View("exercises", N_("Exercises"), exercises.exercises_view, heavy=True),
    attention.view_entry("cross"),
    attention.view_entry("enc"),
    attention.view_entry("dec"),
    View("inside", N_("Inside a head"), inside.inside_view, inside.read_link, inside.link_params, asks=True,
         browser=True),
    View("trace", N_("Decoding trace"), trace.trace_view, trace.read_link, trace.link_params, trace.judge_link,
         asks=True, browser=True),
    View("stats", N_("Head statistics"), stats.stats_view, stats.read_link, stats.link_params),
    View("flow", N_("Source flow"), flow.flow_view, heavy=True),
    View("contributions", N_("Contributions"), contributions.contributions_view, heavy=True),
    View("attribute", N_("Attributions"), attributions.attributions_view, attributions.read_link,
         attributions.link_params, heavy=True),
    View("align", N_("Alignment"), alignment.alignment_view, alignment.read_link, alignment.link_params, heavy=True),
    View("features", N_("Feed-forward features"), features.features_view, features.read_link, features.link_params,
         heavy=True),
    View("ablate", N_("Ablate heads"), interventions.ablation_view, interventions.read_ablation_link,
         interventions.ablation_link),
    View("importance", N_("Head importance"), importance.importance_view, heavy=True),
    View("patch", N_("Causes"), patch.patch_view, patch.read_link, patch.link_params, heavy=True),
    View("faithful", N_("Faithfulness"), faithful.faithful_view, faithful.read_link, faithful.link_params, heavy=True),
    View("training", N_("Training"), training.training_view, training.read_link, training.link_params),
    View("evidence", N_("Training evidence"), evidence.evidence_view, evidence.read_link, evidence.link_params),
    View("positions", N_("Positional encodings"), positions.positions_view),
    View("reference", N_("Reference"), interventions.reference_view, interventions.read_reference_link,
         interventions.reference_link),
    View("beam", N_("Beam search"), interventions.beam_view, interventions.read_beam_link, interventions.beam_link,
         heavy=True),
)}


@dataclass(frozen=True)
class Family:
    """One row of the view switch: a few views of one kind, under a name and one line that says what they are for."""

    name: str  # its button on the switch
    line: str  # what its views show, said under the switch when it is picked
    views: tuple  # the slugs of its views, in VIEWS's order


# The view switch has two rows: these families, then the views of the one picked. Every view is in exactly one, in
# VIEWS's order (tests/unit/test_layout.py).
FAMILIES = (
    Family(N_("Start here"), N_("A guided walk through the model, one stop at a time, each with a question before its "
                                "picture; then exercises that check what you saw."), ("walk", "exercises")),
    Family(N_("Attention"), N_("Where every head of every layer looks: the three kinds of attention, one head from the "
                               "inside, the decoding step by step, and each head's habits over the test set."),
           ("cross", "enc", "dec", "inside", "trace", "stats")),
    Family(N_("Where words come from"), N_("How much each written word drew on each source word, by several methods, "
                                           "and how well each matches the word links people drew."),
           ("flow", "contributions", "attribute", "align")),
    Family(N_("Feed-forward"), N_("What the feed-forward half of each layer writes, as sparse features you can read "
                                  "and switch off."), ("features",)),
    Family(N_("Testing explanations"), N_("What switching heads off changes, which heads matter, the causes found by "
                                          "patching, and which explanations hold up."),
           ("ablate", "importance", "patch", "faithful")),
    Family(N_("How it learned"), N_("How the model learned, and the training sentences behind a word it writes."),
           ("training", "evidence")),
    Family(N_("More"), N_("Positional encodings, a translation of your own scored by the model, and beam search."),
           ("positions", "reference", "beam")),
)
FAMILY_OF = {slug: f for f in FAMILIES for slug in f.views}

DEFAULT_VIEW = "walk"  # what a new page shows: the guided walk, where a newcomer starts (a link names any other)
