"""Positional encodings: the model's own tables next to the paper's sinusoids."""

import json
from pathlib import Path

import pandas as pd
import streamlit as st

import viz
from model.export import table_csv
from model.i18n import N_, _, kept

from . import Context
from .calls import load_translator, model_name, models, translate
from .export import downloads
from .state import page_view
from .widgets import chart, literal


LENGTHS = Path(__file__).resolve().parents[1] / "assets/train_lengths.json"  # python -m model.train_lengths
# Longer than any Multi30k training sentence (46 positions at most): five test-set scenes in one sentence.
LONG_SENTENCE = ("Ein Mann in einem pinken Hemd sitzt auf dem Gras und ein Ball ist in der Luft, fünf Leute in "
                 "Winterjacken und mit Helmen stehen im Schnee, ein kleines Kind in einem blau-weißen T-Shirt hält "
                 "glücklich einen gelben Plastik-Alligator, drei Jungen stehen in ihren Badehosen auf einem Pier und "
                 "ein Mädchen in einem Karateanzug bricht ein Brett mit einem Tritt.")


@st.cache_data(show_spinner=False)
def train_lengths() -> dict:
    return json.loads(LENGTHS.read_text(encoding="utf-8"))


@st.cache_data(max_entries=4, show_spinner=False)
def position_tables(checkpoint: str | None) -> dict:
    return load_translator(checkpoint).position_tables()


def default_dims(d_model: int) -> list[int]:
    """A few dimensions from fast (0, 1) to slow (near d_model), inside any model's range."""
    return sorted({d for d in (0, 1, d_model // 8, d_model // 4, d_model // 2) if 0 <= d < d_model})


@st.fragment
@page_view
def positions_view(ctx: Context):
    tables, result = position_tables(ctx.checkpoint), ctx.result
    ours = {"learned": _("This model's are learned (one row per position); the paper's sinusoids are shown for "
                         "comparison."),
            "halves": _("This model's are fixed sinusoids of the paper's angles, Marian's layout: all the sines in the "
                        "first half of each vector, all the cosines in the second (one row per position); the paper's "
                        "sinusoids are shown for comparison.")}.get(
        ctx.cfg.positions, _("This model's are the paper's fixed sinusoids (one row per position); the paper's "
                             "sinusoids are shown for comparison."))
    st.caption(_("The model adds a position vector to every token embedding.") + " " + ours + " "
               + _("Orange marks the positions this sentence uses."))
    P, D = tables["source"].shape
    # The switch's values (and the CSV's name) stay English; they are translated where shown
    choices = {N_("model, source (encoder)"): (tables["source"], len(result.src_tokens)),
               N_("model, target (decoder)"): (tables["target"], len(result.tgt_tokens)),
               N_("sinusoidal (the paper)"): (viz.sinusoidal(P, D), len(result.src_tokens))}
    which = st.segmented_control(_("Table"), list(choices), key="pos_table", default=list(choices)[0], required=True,
                                 format_func=kept(_))
    table, used = choices[which]
    c1, c2 = st.columns(2)
    with c1:
        chart(viz.position_heatmap(table, used, title=_("{table}: positions × dimensions").format(table=_(which))),
              key="pos_map")
    with c2:
        chart(viz.similarity_heatmap(table, used, title=_("Cosine similarity between positions")), key="pos_sim")
    dims = st.multiselect(_("Dimensions to draw"), list(range(D)), default=default_dims(D), key="pos_dims")
    if dims:
        chart(viz.dimension_curves(table, dims, used, title=_("Dimensions over position")), key="pos_curves")
    name = which.split(" (")[0].replace(", ", "-").replace(" ", "-")
    why_noise(ctx)
    downloads(ctx, extra=[(_("This table (CSV, positions × {D} dimensions)").format(D=D), f"positions-{name}.csv",
                           "text/csv",
                           lambda: table_csv(pd.DataFrame(table).rename_axis("position").reset_index()))])


def why_noise(ctx: Context):
    """The learned rows past the training sentences' lengths, against the sinusoids."""
    st.markdown(_("**Why the learned rows turn to noise**"))
    if ctx.translator.origin["family"] == "marian":
        st.info(_("Not shown for this model: its positions are a formula (no row is learned), and how long its "
                  "training sentences were is not known here; the shipped model (`checkpoints/`) shows it."))
        return
    data = train_lengths()
    src, tgt = ({int(k): v for k, v in data[side].items()} for side in ("source", "target"))
    longest = max(src)
    over30 = sum(v for k, v in src.items() if k > 30) / data["n"]
    # The sinusoidal model's table is the paper's formula (to float32 rounding: a test checks), so that model is not
    # loaded for it: its load was 0.18 s of this view's first visit.
    learned = position_tables(next(c for slug, c in models().items() if slug != "sinusoidal"))["source"]
    fixed_name = _("sinusoidal (source)") if "sinusoidal" in models() else _("sinusoidal (the paper)")
    tables = {_("learned (source)"): learned, fixed_name: viz.sinusoidal(*learned.shape)}
    st.caption(_("A learned position vector is trained only by the sentences long enough to reach it. Of the {n:,} "
                 "Multi30k training sentences, half use at most {median} positions (with `<sos>` and `<eos>`), "
                 "{over30:.1%} use more than 30, and the longest German one uses {longest}: rows {longest} and later "
                 "never received a gradient and keep their random start values (their spread is exactly that of the "
                 "Xavier-uniform initialisation, 0.075). Neighbouring learned rows are alike where many sentences "
                 "reach them and unrelated past that; the paper's sinusoids are a fixed formula, alike for neighbours "
                 "at every position, so a model built on them has at least seen the same kind of vector before.")
               .format(n=data["n"], median=median_positions(src), over30=over30, longest=longest))
    chart(viz.position_reach({_("German"): src, _("English"): tgt}, tables,
                             title=_("Training sentences reaching each position, and how alike neighbouring rows "
                                     "are")),
          key="pos_reach")
    fixed = tables[fixed_name]
    c1, c2 = st.columns(2)
    with c1:
        chart(viz.similarity_heatmap(learned, longest, title=_("Learned (source): cosine between positions")),
              key="pos_sim_learned")
    with c2:
        chart(viz.similarity_heatmap(fixed, longest, title=_("Sinusoidal: cosine between positions")),
              key="pos_sim_fixed")
    near, fixed_near = viz.neighbour_cosine(learned), viz.neighbour_cosine(fixed)
    ranges = [(near[:30], _("{mean:.2f} below position 30")), (near[30:longest - 1], _("{mean:.2f} from 30 to {last}")),
              (near[longest:], _("{mean:.2f} past it (unrelated vectors)"))]
    means = ", ".join(where.format(mean=part.mean(), last=longest - 1)
                      for part, where in ranges if part.size)  # a small model has fewer
    st.caption(_("Orange: the {longest} positions the longest training sentence reaches. Mean cosine of neighbouring "
                 "learned rows ({n} positions): {means}; the sinusoids' neighbours: {fixed:.2f} at every position.")
               .format(longest=longest, n=len(learned), means=means, fixed=fixed_near.mean()))
    long_sentence(ctx, longest)


def median_positions(counts: dict) -> int:
    total, seen = sum(counts.values()), 0
    for used in sorted(counts):
        seen += counts[used]
        if seen >= total / 2:
            return used
    return 0


def long_sentence(ctx: Context, longest: int):
    """A sentence longer than anything in training, through each model on offer: made when its fold is opened (a
    question first; and the second model's translation of a 66-token sentence was 0.4 s of the view's first visit)."""
    own = len(ctx.result.src_tokens) > longest
    sentence = ctx.result.source if own else LONG_SENTENCE
    fold = st.expander(_("A sentence longer than any in training (over {longest} positions): which model copes? "
                         "Guess, then open").format(longest=longest), key="pos_long_open", on_change="rerun")
    if not fold.open:
        return
    with fold:
        st.caption((_("Your sentence uses more positions than the longest training sentence ({longest}).") if own else
                    _("This sentence (five test-set scenes in one) uses more positions than the longest training "
                      "sentence ({longest}).")).format(longest=longest) + " " +
                   (_("Both models translate it; compare where each loses the thread.") if len(models()) > 1 else
                    _("Only this model is installed here; with checkpoints/sinusoidal beside it the page compares "
                      "both.")))
        if not own:
            st.markdown(f"> {literal(sentence)}")
        cols = st.columns(len(models()))
        for col, (slug, checkpoint) in zip(cols, models().items()):
            r = translate(checkpoint, sentence)
            col.markdown(_("**{model}** ({positions} source positions, {tokens} output tokens)").format(
                model=model_name(slug), positions=len(r.src_tokens), tokens=len(r.steps)))
            col.markdown(literal(r.text) or _("(empty)"))
