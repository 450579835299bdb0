"""The page's views. Each takes a `Context` (the checkpoint, its translator, the current result) and draws itself.

app.py is the frame (sentence box, translation header, view switch); everything a view shows lives here, one module
per view or family of views. Views never read app.py's globals, and never import one another: what several share
has one home, by concern:

    __init__.py   what a view is: its entry on the view switch (View) and what it is given (Context)
    registry.py   VIEWS, the one list of the views, by slug: the view switch, the link and the tests read it
    state.py      the page's state: the link (read, judged, written), the widgets' keys, `page_view` (every run
                  of a view leaves its state in the link)
    calls.py      the models on offer and the cached calls into them; the heavy ones take turns
    widgets.py    the page's look and its pieces: CSS, escaped text, token chips, tables, charts, the text box
    instant.py    what the browser draws (the components views/*.js); export.py the downloads under each view;
    compare.py    the attention views' second run; familiarity.py the note under the translation
"""

from collections.abc import Callable
from dataclasses import dataclass

from model.result import Translation
from model.translator import Translator
from model.languages import language_names


def nothing(*args) -> None:
    """A view that reads nothing from the link, or has nothing in it to judge."""


@dataclass(frozen=True)
class View:
    """One entry of the view switch (the registry is views.registry.VIEWS): adding a view is adding one of these."""

    slug: str  # its name in the link (?view=slug), in st.session_state.view and in the registry
    label: str  # its name on the view switch
    draw: Callable  # draw(ctx): the view itself
    read: Callable = nothing  # read(params, cfg, notes): set its widgets from the link; a note per unusable parameter
    write: Callable = lambda cfg: {}  # write(cfg) -> its state as link parameters (only what decides the picture)
    judge: Callable = nothing  # judge(result, notes): once the translation is there, what only it can check
    asks: bool = False  # guess first: it asks a question before its picture (views/guess.py)
    browser: bool = False  # drawn in the browser (a component of views/*.js), not by Streamlit's charts alone
    heavy: bool = False  # its computation can take seconds: it takes its turn server-wide (views/calls.py HEAVY)


@dataclass(frozen=True)
class Context:
    """What a view needs: which checkpoint (None: the shipped one), its translator, the current result, and its
    own entry of the view switch (which says what the view writes into the link)."""

    checkpoint: str | None
    translator: Translator
    result: Translation
    view: View

    @property
    def cfg(self):
        return self.translator.cfg

    @property
    def names(self) -> tuple[str, str]:
        """What the page calls the source and the target language: "German" and "English", or a converted model's
        "source (ko)" and "target (en)" (model.languages.language_names)."""
        return language_names(self.translator.origin["languages"])


__all__ = ["Context", "View"]
