"""Alignment: is cross-attention an alignment? Each head scored against hand-checked word links, and the links of
the sentence on the page drawn over the map they come from (model/align.py, docs/contract.md "Word alignment").

The scores ship beside the checkpoint (alignment.json, `python -m model.align`). For the sentence on the page the
links are read from one teacher-forced pass: over the English reference when the sentence is one of the 101
annotated test sentences (every built-in example is), so that the reference links can be set beside them, else over
the model's own translation.
"""

import numpy as np
import pandas as pd
import streamlit as st

import viz
from model import align
from model.errors import InputError
from model.i18n import N_, _, kept
from model.export import table_csv
from model.tables import command_line
from model.vocab import tokenize
from viz.labels import subtitle

from . import Context
from .calls import HEAVY, checkpoint_json, load_translator, waiting_notice
from .export import downloads
from .state import MEAN, choice_param, head_link, head_param, int_param, page_view
from .widgets import chart, grid_table, head_picker, literal, map_table, table_labels

SOURCES = {"attention": N_("attention weights"), "norms": N_("norm-based attention"), "alti": N_("ALTI+ contributions")}
RULES = {"argmax": N_("argmax (the step that writes the word)"), "shift": N_("Shift-Att (the step that reads it)"),
         "threshold": N_("threshold ≥ {threshold:g}")}
RULE_NAMES = {"argmax": "argmax", "shift": "Shift-Att", "threshold": RULES["threshold"]}  # a rule's short name


def rule_name(rule: str, short: bool = False) -> str:
    """A rule as the page says it: its name and what it reads, or (short) its name alone."""
    return _((RULE_NAMES if short else RULES)[rule]).format(threshold=align.THRESHOLD)


@st.cache_data(max_entries=4, show_spinner=False)
def annotated() -> dict:
    return align.annotated()


@st.cache_data(max_entries=32, show_spinner=False)  # its spinner is said where it is called, in the page's language
def alignment_maps(checkpoint: str | None, sentence: str, en_tokens: tuple, _waiting=None) -> dict:
    """The cross maps, norm-based maps and ALTI+ source contributions of one teacher-forced pass (ALTI+ is heavy on
    a long sentence: it takes its turn)."""
    with HEAVY.turn(_waiting):
        return align.maps_for(load_translator(checkpoint), sentence, list(en_tokens))


def read_link(params, cfg, notes: list):
    """from: attention | norms | alti; layer and head (from 1, or head=mean); rule: argmax | shift | threshold."""
    for key, state, options in (("from", "align_from", SOURCES), ("rule", "align_rule", RULES)):
        value = choice_param(params, key, options, notes)
        if value is not None:
            st.session_state[state] = value
    layer = int_param(params, "layer", 1, cfg.n_dec_layers, notes)
    if layer is not None:
        st.session_state.align_layer = layer - 1
    head = head_param(params, cfg, notes)
    if head is not None:
        st.session_state.align_head = head


def link_params(cfg) -> dict:
    s = st.session_state
    params = {"from": s.get("align_from", "attention"), "layer": str(s.get("align_layer", cfg.n_dec_layers - 1) + 1),
              "rule": s.get("align_rule", "argmax")}
    if params["from"] == "attention":
        params["head"] = head_link(s.get("align_head"))
    if params["from"] == "alti":
        del params["layer"]
    return params


def scores_section(report: dict, cfg, names=("German", "English")):
    """The per-head grid and the table of methods from the shipped alignment.json."""
    base, methods = report["baselines"], report["methods"]
    grid = np.asarray(report["heads"]["cross"], dtype=float)
    best_l, best_h = np.unravel_index(np.nanargmin(grid), grid.shape)
    best = report["best_method"]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric(_("Best head: layer {layer}, head {head}").format(layer=best_l + 1, head=best_h + 1),
              f"{grid[best_l, best_h]:.3f}",
              help=_("Alignment error rate (AER) of the head's argmax links; 0 is perfect, 1 is no overlap"))
    c2.metric(_("Best method"), f"{methods[best]['aer']:.3f}", help=best)
    c3.metric(_("Diagonal baseline"), f"{base['diagonal']['aer']:.3f}")
    if "silver" in base:
        c4.metric(_("Statistical aligner (eflomal)"), f"{base['silver']['aer']:.3f}")
    numbers = dict(n=report["n_pairs"], best=literal(best), diagonal=base["diagonal"]["aer"])
    if "silver" in base:
        st.caption(_("AER against the hand-checked links of {n} test sentences (Och & Ney, 2003): lower is better; "
                     "the red outline marks the best head. Best method: **{best}**. Baselines: the monotone diagonal "
                     "{diagonal:.3f}, eflomal with grow-diag-final-and {silver:.3f}.").format(
                       silver=base["silver"]["aer"], **numbers))
    else:
        st.caption(_("AER against the hand-checked links of {n} test sentences (Och & Ney, 2003): lower is better; "
                     "the red outline marks the best head. Best method: **{best}**. Baselines: the monotone diagonal "
                     "{diagonal:.3f}.").format(**numbers))
    grids = {r: np.asarray(g, dtype=float) for r, g in report["heads_by_method"].items()}
    low = min(float(np.nanmin(g)) for g in grids.values())
    high = max(float(np.nanmax(g)) for g in grids.values())
    for route, g in grids.items():  # one per row: eight heads across need the page's width for their numbers
        chart(viz.aer_grid(g, title=_("AER per head, {rule}").format(rule=rule_name(route, short=True)), low=low,
                           high=high), key=f"align_grid_{route}")
        grid_table(g, _("AER per cross-attention head, {rule}").format(rule=rule_name(route)),
                   key=f"align_grid_{route}_table")
    df = pd.DataFrame([{"method": m, **{k: r.get(k) for k in ("aer", "precision", "recall", "silver_aer")}}
                       for m, r in methods.items()]).sort_values("aer")
    df = df.rename(columns={"silver_aer": "AER against eflomal"})  # the CSV's names; the page's are said below
    shown = {"method": _("method"), "precision": _("precision"), "recall": _("recall"),
             "AER against eflomal": _("AER against eflomal")}
    with st.expander(_("Every method, scored")):
        st.dataframe(df, hide_index=True, column_config={
            "method": st.column_config.TextColumn(shown["method"]),
            **{c: st.column_config.NumberColumn(shown.get(c, c), format="%.3f") for c in df.columns if c != "method"}})
        st.caption(_("attention Lk: the mean of layer k's heads; norms: norm-based attention (Kobayashi et al., "
                     "2020); ALTI+: the source contributions (Ferrando et al., 2022); gradient, input x gradient, "
                     "leave-one-out and value zeroing: the Attributions view's scores of each {source} word for the "
                     "{target} word. argmax: the row that writes the {target} word; shift: the row that reads it "
                     "(Chen et al., 2020); threshold: every {source} word with at least {threshold:g} of the row.")
                   .format(source=names[0], target=names[1], threshold=align.THRESHOLD))
    return df


@page_view
def alignment_view(ctx: Context):
    cfg, result, (source_name, target_name) = ctx.cfg, ctx.result, ctx.names
    st.caption(_("A cross-attention map is often read as a word alignment: \"this {target} word came from that "
                 "{source} word\". Here that reading is measured against links a person checked by hand.").format(
                   target=target_name, source=source_name))
    gold = annotated().get(result.source.strip())
    tr, codes = ctx.translator, ctx.translator.origin["languages"]
    pieces = tr.tgt_vocab.pieces is not None  # a Marian model's: its maps are summed into words (model/align.py)
    if not pieces:
        en_tokens = tokenize(gold.en, "en") if gold else list(result.output_tokens)
        en_words = en_tokens
    else:
        en_tokens = tr.tgt_vocab.tokenize(gold.en, "en") if gold else list(result.output_tokens)
        en_words = align.words_of(gold.en if gold else result.text, codes[1])
    failed = groups = None
    try:  # first: its notice ("computing now") shows at once, not after the test set's tables and charts are drawn
        with waiting_notice(_("Reading the alignment")) as waiting, st.spinner(_("Reading the alignment off the "
                                                                                 "model…")):
            maps = alignment_maps(ctx.checkpoint, result.source, tuple(en_tokens),
                                  _waiting=waiting) if en_tokens else None
        if pieces and en_tokens:
            de_words = align.words_of(result.source, codes[0])
            groups = align.grouping(tr, result.source, en_tokens, de_words, en_words)
    except InputError as e:  # said under "This sentence", below the test set's scores
        failed = e
    report = checkpoint_json(ctx.checkpoint, "alignment.json")
    df = scores_section(report, cfg, ctx.names) if report else None
    if not report:
        st.info(_("No alignment scores beside this checkpoint: `{command}` writes them (this one alone: `python -m "
                  "model.align --src test_2016_flickr.de.gz --ref test_2016_flickr.en.gz --gold "
                  "assets/alignments/test2016.gold.jsonl`).").format(command=command_line(ctx.checkpoint)))

    st.markdown(_("**This sentence**"))
    if not en_tokens:
        st.info(_("The translation is empty: there is nothing to align."))
        return
    if failed:
        st.warning(literal(f"{failed}."))
        return
    de_tokens = list(result.src_tokens[1:-1]) if groups is None else de_words
    en_tokens = en_words
    if groups is not None:
        st.caption(_("This model reads and writes pieces, not words: each map is summed into words (spaCy's tokens) "
                     "before the rule reads it. A source word's column is the sum of its pieces' columns, a target "
                     "word's row the mean of its pieces' rows (Zenkel et al., 2019; inseq's subword aggregation); a "
                     "piece that spans two words counts for each."))
    s = st.session_state
    s.setdefault("align_from", "attention")
    s.setdefault("align_layer", cfg.n_dec_layers - 1)  # the last layer aligns best in both shipped models
    s.setdefault("align_head", MEAN)
    s.setdefault("align_rule", "argmax")
    source = st.segmented_control(_("Links from"), list(SOURCES), format_func=kept(lambda k: _(SOURCES[k])),
                                  key="align_from", required=True)
    rule = st.segmented_control(_("Rule"), list(RULES), format_func=kept(lambda r: rule_name(r, short=True)),
                                key="align_rule", required=True,
                                help=_("argmax: the row that writes the {target} word (Garg et al., 2019); Shift-Att: "
                                       "the row that reads it, one step later (Chen et al., 2020); threshold: every "
                                       "{source} word with at least {threshold:g} of the writing row").format(
                                    target=target_name, source=source_name, threshold=align.THRESHOLD))
    layer = head = None
    if source != "alti":
        layer = st.segmented_control(_("Layer"), list(range(cfg.n_dec_layers)), format_func=lambda i: str(i + 1),
                                     key="align_layer", required=True)
        if source == "attention":
            head = head_picker(st, cfg.n_heads, "align_head")
    if source == "alti":
        full, what = maps["alti"], _("ALTI+ source contributions")
    elif head in (None, MEAN):
        full = maps[source][layer].mean(0)
        what = _("{source}, layer {layer}, mean of heads").format(source=_(SOURCES[source]), layer=layer + 1)
    else:
        full = maps[source][layer][head]
        what = _("{source}, layer {layer}, head {head}").format(source=_(SOURCES[source]), layer=layer + 1,
                                                                head=head + 1)
    rows = align.word_rows(full, len(de_tokens), len(en_tokens), rule, groups)
    links = align.links_of(rows, rule)
    sure, possible = (gold.sure, gold.possible) if gold else (None, None)
    title = _("Alignment from {what}, {rule}").format(what=what, rule=rule_name(rule, short=True))
    if gold:
        r = align.score([(links, sure, possible)])
        st.markdown(_("Annotated test sentence (line {line}): the decoder is fed the {target} reference “{reference}”. "
                      "This sentence: AER **{aer:.3f}**, precision {precision:.3f}, recall {recall:.3f}.").format(
                        line=gold.line, target=target_name, reference=literal(gold.en), aer=r["aer"],
                        precision=r["precision"], recall=r["recall"]))
    else:
        st.markdown(_("Not one of the annotated test sentences (the built-in examples are): the links are read over "
                      "the model's own translation, with no reference to score them against."))
    chart(viz.alignment_map(rows, en_tokens, de_tokens, links, sure, possible, title=title,
                        subtitle=subtitle(result.source), norms=source == "norms", names=ctx.names), key="align_map",
          width="content")
    st.caption((_("Rows: the {target} words; the colours: the row the rule reads (shift: the step after the word). "
                  "Marks: white, a model link the reference calls sure; yellow, possible; red ×, not in the "
                  "reference; orange square, a sure link the model missed.") if gold else
                _("Rows: the {target} words; the colours: the row the rule reads; white dots: the model's links."))
               .format(target=target_name))
    map_table(rows, table_labels(en_tokens), table_labels(de_tokens),
              _("{title}; rows: {target} words, columns: {source} words").format(title=title, target=target_name,
                                                                                source=source_name),
              key="align_map_table", corner=f"{target_name} \\ {source_name}",
              label=_("Show the map as a table"))
    classes = viz.link_classes(links, sure, possible)
    table = pd.DataFrame([{f"{target_name} #": t, target_name: en_tokens[t], f"{source_name} #": i,
                           source_name: de_tokens[i], "link": name}
                          for name, cells in classes.items() for i, t in cells]
                         ).sort_values([f"{target_name} #", f"{source_name} #"]) if links or sure else pd.DataFrame()
    with st.expander(_("Show the links as a table")):  # the CSV's column names, the page's said in its own words
        st.dataframe(table, hide_index=True, column_config={"link": st.column_config.TextColumn(_("link"))})
    extra = [(_("These links (CSV)"), "alignment-links.csv", "text/csv", lambda: table_csv(table))]
    if df is not None:
        extra.append((_("Every method's scores (CSV)"), "alignment-methods.csv", "text/csv", lambda: table_csv(df)))
    downloads(ctx, extra=extra)
