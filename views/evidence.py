"""Training evidence: where the model learned a word of this sentence, and which moments of training its decoder
state resembles at a step (model/evidence.py; ?view=evidence&word=N&step=N).

Students explain a model's output by its training data when they can see it: a word met once in 29,000 photo
descriptions, or never, explains a wrong translation better than any attention map.
"""

import re
import threading
from pathlib import Path

import pandas as pd
import streamlit as st

from model.checkpoint import DEFAULT_CHECKPOINT
from model.evidence import CORPUS_LEXICON, LEXICON, Lexicon, StepIndex, step_state, texts_of
from model.i18n import _
from model.vocab import WORD_START
from model.tables import command_line

from . import Context
from .calls import load_translator
from .export import downloads
from .state import int_param, page_view
from .widgets import highlight, literal, token_chips

_OWNED: dict = {}
_LOCK = threading.Lock()


def owned(key, make):
    """One lexicon and one step index per checkpoint for every session, like the models (views.calls)."""
    with _LOCK:
        if key not in _OWNED:
            _OWNED[key] = make()
        return _OWNED[key]


def lexicon(checkpoint: str | None) -> Lexicon | None:
    """The lexicon of the corpus beside the checkpoint (model.tables --corpus), else the shipped one of Multi30k's
    training split, except for a model that did not learn from it (a converted Marian model: None)."""
    folder = Path(checkpoint or DEFAULT_CHECKPOINT)
    if (folder / CORPUS_LEXICON).is_file():
        return owned(("lexicon", folder), lambda: Lexicon(folder / CORPUS_LEXICON))
    if load_translator(checkpoint).origin["family"] == "marian":
        return None
    return owned("lexicon", lambda: Lexicon() if LEXICON.is_file() else None)


def step_index(checkpoint: str | None) -> StepIndex | None:
    folder = Path(checkpoint or DEFAULT_CHECKPOINT)
    return owned(("steps", folder), lambda: StepIndex(folder) if StepIndex.exists(folder) else None)


def word_positions(result, first: int = 1) -> list[int]:
    """The source positions that hold a word (a letter or a digit), after <sos> where the source starts with it
    (first: 1) and before <eos>: what the word pick offers."""
    return [i for i, t in enumerate(result.src_tokens[first:-1], first) if any(c.isalnum() for c in t)]


def read_link(params, cfg, notes: list):
    """word: a source position (from 0, as the chips count); step: a step of the translation (from 1)."""
    word = int_param(params, "word", 1, cfg.max_positions, notes)
    if word is not None:
        st.session_state.evidence_word = word
    step = int_param(params, "step", 1, 10_000, notes)
    if step is not None:
        st.session_state.evidence_step = step - 1


def link_params(cfg) -> dict:
    s = st.session_state
    return {k: str(v) for k, v in (("word", s.get("evidence_word")),
                                   ("step", None if s.get("evidence_step") is None else s.evidence_step + 1))
            if v is not None}


def marked(sentence: str, word: str, pieces: bool = False) -> str:
    """A training sentence as escaped HTML, every whole-word occurrence of `word` (any case) marked; with pieces
    (a SentencePiece piece: "▁Hund", "nd"), every occurrence of its text, at a word's start where it starts one."""
    if pieces:
        at_start = r"(?<!\w)" if word.startswith(WORD_START) else ""
        pattern = at_start + f"({re.escape(word.removeprefix(WORD_START))})"
    else:
        pattern = rf"(?<!\w)({re.escape(word)})(?!\w)"
    parts = re.split(pattern, sentence, flags=re.IGNORECASE)
    return "".join(highlight(literal(p)) if i % 2 else literal(p) for i, p in enumerate(parts))


@st.fragment
@page_view
def evidence_view(ctx: Context):
    result, lex, folder = ctx.result, lexicon(ctx.checkpoint), Path(ctx.checkpoint or DEFAULT_CHECKPOINT)
    corpus = (folder / CORPUS_LEXICON).is_file()  # built from a corpus one gave (model.tables --corpus)
    if lex is None and ctx.translator.origin["family"] == "marian":
        st.info(_("No training evidence for this model: its training corpus is not known here (its makers trained it "
                  "on their own data). `{command} --corpus FILE` builds the evidence from a parallel corpus you have "
                  "(a pair a line: the sentence, a tab, its translation).").format(
                    command=command_line(ctx.checkpoint)))
        return
    n = len(texts_of(folder)["de"]) if corpus else 29_000
    st.caption(_("The corpus the indexes beside this checkpoint were built from ({n:,} pairs): not necessarily all "
                 "the model learned from, and the words are the model's own tokens.").format(n=n) if corpus else
               _("What the model saw in training: the model learned from 29,000 German descriptions of photos and "
                 "their English translations (Multi30k), nothing else."))
    positions = word_positions(result, int(ctx.cfg.source_start))
    if lex is None or not positions:
        st.info(_("No training evidence here: this sentence has no word.") if lex is not None else
                _("No training evidence here: the lexical table is not installed (python -m model.silver)."))
        return
    if st.session_state.get("evidence_word") not in positions:
        unknown = [i for i in positions if result.src_unknown[i]]
        st.session_state.evidence_word = (unknown or positions)[0]
    st.markdown(_("**A word of the sentence**"))
    i = st.segmented_control(_("Word"), positions, key="evidence_word", required=True,
                             format_func=lambda i: literal(result.src_tokens[i]))
    ev = lex.word(result.src_tokens[i], ctx.translator.src_vocab)
    word = literal(ev.word)
    if ev.sentences == 0:
        st.markdown(_("“{word}” never occurs in the corpus.").format(word=word) if corpus else
                    _("“{word}” never occurs in the training data: the model reads it as `<unk>`, a word it does not "
                      "know, and guesses from the rest of the sentence.").format(word=word))
    else:
        rare = "" if ev.known else " " + _("Too rare to get its own vector (a word needs two occurrences), it reads "
                                           "as `<unk>` all the same.")
        counts = dict(word=word, sentences=ev.sentences, n=n, occurrences=ev.occurrences)
        st.markdown((_("“{word}” occurs in **{sentences:,}** of the {n:,} corpus sentences ({occurrences:,} times).")
                     if corpus else
                     _("“{word}” occurs in **{sentences:,}** of the {n:,} training sentences ({occurrences:,} "
                       "times).")).format(**counts) + rare)
    if ev.aligned:
        total = sum(count for _word, count in ev.aligned)
        st.markdown(_("The English words a statistical aligner (eflomal) linked it to in those sentences:"))
        st.dataframe(pd.DataFrame({_("English word"): [w for w, _count in ev.aligned],
                                   _("links"): [count for _word, count in ev.aligned],
                                   _("share of these links"): [round(count / total, 3)
                                                               for _word, count in ev.aligned]}),
                     hide_index=True)
    pieces = ctx.translator.src_vocab.pieces is not None
    if ev.pairs:
        st.markdown((_("Corpus pairs that contain it (the first {n}):") if corpus else
                     _("Training pairs that contain it (the first {n}):")).format(n=len(ev.pairs)))
        st.markdown("".join(f"<p lang='de'>{marked(de, ev.word, pieces)}<br><i lang='en'>{literal(en)}</i> <small>"
                            + _("(line {line:,})").format(line=line + 1) + "</small></p>"
                            for line, de, en in ev.pairs), unsafe_allow_html=True)
    steps_view(ctx)
    downloads(ctx)


def steps_view(ctx: Context):
    result, found = ctx.result, step_index(ctx.checkpoint)
    st.markdown(_("**A step of the decoding**"))
    if found is None:
        st.info(_("This checkpoint ships no index of training steps: `{command}` writes it (this one alone: `python "
                  "-m model.familiarity`).").format(command=command_line(ctx.checkpoint)))
        return
    T = len(result.steps)
    if st.session_state.get("evidence_step") not in range(T):
        st.session_state.evidence_step = 0
    t = st.select_slider(_("Step"), list(range(T)), key="evidence_step",
                         format_func=lambda t: f"{t + 1}: {result.steps[t].token}")
    st.markdown(_("Step {step}:").format(step=t + 1) + " " + token_chips(result.tgt_tokens[:t + 1]) + " → "
                + token_chips([result.steps[t].token], current=0), unsafe_allow_html=True)
    tr = load_translator(ctx.checkpoint)
    folder = Path(ctx.checkpoint or DEFAULT_CHECKPOINT)
    texts, vocab = texts_of(folder), tr.tgt_vocab
    split = None if vocab.pieces is None else (lambda text: vocab.tokenize(text, "en"))
    near = found.nearest(step_state(tr, result, t), texts, k=5, split=split)
    if (folder / CORPUS_LEXICON).is_file():
        st.caption(_("The moments of the corpus ({n:,} pairs, teacher-forced on their translations) when the "
                     "decoder's last layer was in the most similar state before choosing a word (cosine over the "
                     "state's 64 principal components): a corpus one gave, not necessarily the model's training "
                     "data.").format(n=len(set(found.line.tolist()))))
    else:
        st.caption(_("The moments of training (5,000 pairs, teacher-forced on their references) when the decoder's "
                     "last layer was in the most similar state before choosing a word (cosine over the state's 64 "
                     "principal components). Similar states, similar choices: what the model does here, it learned "
                     "there."))
    st.dataframe(pd.DataFrame({_("training sentence"): [n.de for n in near],
                               _("{target} so far").format(target=ctx.names[1]): [vocab.join(list(n.prefix))
                                                                                  for n in near],
                               _("its next word"): [n.word for n in near],
                               _("distance"): [n.distance for n in near], _("line"): [n.line + 1 for n in near]}),
                 hide_index=True)

