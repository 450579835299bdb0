"""What the model knows: a note under a translation of a sentence unlike the photo descriptions it learned from.

The measures and the verdict are model/familiarity.py's (docs/contract.md, "Familiarity"); a familiar sentence
gets no note. The index of the training sources is loaded once per checkpoint, owned here like the models.
"""

import logging
import threading
from pathlib import Path

import streamlit as st

from model.checkpoint import DEFAULT_CHECKPOINT
from model.familiarity import Familiarity, Index
from model.i18n import _, language, speaking
from model.tables import command_line

from .calls import load_translator, translate
from .state import MODEL_CHOICE
from .widgets import literal

log = logging.getLogger("explorer")

_INDEXES: dict = {}
_INDEXES_LOCK = threading.Lock()


def index(checkpoint: str | None) -> Index | None:
    """The checkpoint's training index and thresholds, or None when it ships none (a checkpoint of one's own)."""
    folder = Path(checkpoint or DEFAULT_CHECKPOINT)
    with _INDEXES_LOCK:
        if folder not in _INDEXES:
            _INDEXES[folder] = Index(folder) if Index.exists(folder) else None
        return _INDEXES[folder]


@st.cache_data(max_entries=128, show_spinner=False)
def familiarity(checkpoint: str | None, sentence: str, lang: str) -> Familiarity | None:
    """How familiar the sentence is to the model (None without an index), its reasons said in `lang`."""
    found = index(checkpoint)
    if found is None:
        return None
    from model.familiarity import measure
    with speaking(lang):
        return measure(load_translator(checkpoint), translate(checkpoint, sentence), found)


def try_sentence(sentence: str):
    """A neighbour picked: it becomes the sentence, as if typed (what belonged to the old one goes)."""
    st.session_state.sentence, st.session_state.reference, st.session_state.example = sentence, "", ""
    st.session_state.what_if = MODEL_CHOICE


def familiarity_note(checkpoint: str | None, sentence: str):
    """Under the translation: nothing for a familiar sentence; for an unusual or unfamiliar one, what the model
    learned from, what in this sentence is unlike it, and the nearest training sentences to try instead."""
    try:
        f = familiarity(checkpoint, sentence, language())
    except Exception:  # the note is an aid: its failure never costs the page its translation (the log keeps it)
        log.exception("familiarity of %r failed", sentence)
        return
    if f is None:
        if load_translator(checkpoint).origin["family"] == "marian":
            st.caption(_("No training index beside this checkpoint: this model's training corpus is not known here "
                         "(its makers trained it on their own data), so no sentence is compared with it. `{command} "
                         "--corpus FILE` builds one from a parallel corpus you have (a pair a line: the sentence, a "
                         "tab, its translation).").format(command=command_line(checkpoint)))
        else:
            st.caption(_("No training index beside this checkpoint, so no sentence is compared with the training "
                         "data: `{command}` writes it.").format(command=command_line(checkpoint)))
        return
    if f.verdict == "familiar":
        return
    box = st.warning if f.verdict == "unfamiliar" else st.info
    found = index(checkpoint)
    if found.corpus:  # built from a corpus one gave (model.tables --corpus), not from what the model learned
        head = (_("**This sentence is unlike anything in the corpus.**") if f.verdict == "unfamiliar" else
                _("**This sentence is unusual for the corpus.**"))
        learned = _("It is compared with the {n:,} sentences of {corpus}, the corpus its index was built from (not "
                    "all the model learned from).").format(n=found.thresholds["training_sentences"],
                                                           corpus=literal(found.corpus))
        nearest = _("Sentences of that corpus that are nearest to this one:")
    else:
        head = (_("**This sentence is unlike anything the model learned from.**") if f.verdict == "unfamiliar" else
                _("**This sentence is unusual for the model.**"))
        learned = _("It learned German only from 29,000 short descriptions of photos (Multi30k: people, animals and "
                    "what they do).")
        nearest = _("Sentences from its training data that are nearest to this one:")
    box(" ".join((head, learned, _("Here {reasons}.").format(reasons=literal("; ".join(f.reasons))),
                  _("Its translation and maps show a model out of its depth, not how it works at its best."), nearest)),
        icon=":material/explore:" if f.verdict == "unusual" else ":material/warning:")  # bundled: no emoji font needed
    row = st.container(horizontal=True, gap="small")
    for i, n in enumerate(f.neighbours):
        row.button(literal(n.de), key=f"neighbour_{i}", on_click=try_sentence, args=(n.de,),
                   help=(_("Corpus sentence {line:,}: “{sentence}”. Click to translate it.") if found.corpus else
                         _("Training sentence {line:,}: “{sentence}”. Click to translate it.")).format(
                       line=n.line + 1, sentence=literal(n.en)))
