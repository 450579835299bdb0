"""The languages a person reads the page in: English (the source of every string), Korean and German.

Every string a person reads is written in English inside `_()` (or `N_()` where it is a module-level constant,
translated where it is shown) and looked up in a gettext catalogue, `locales/LANG/LC_MESSAGES/messages.mo`. Babel
extracts and compiles the catalogues (docs/i18n.md gives the three commands); Python's own gettext reads them, so
nothing outside the standard library runs when the page translates. Placeholders are named (`{layer}`), filled
by str.format after the lookup, so a translation may put them in its own order.

The language belongs to one run of one page (or one command): a context variable that the page sets at the start
of each run and of each fragment's run (views/state.py), and a command's `--lang` with `speaking`. Two sessions in
two languages never see each other's, because each runs in its own thread.
"""

import contextvars
import gettext
from contextlib import contextmanager
from functools import cache
from pathlib import Path

LOCALES = Path(__file__).resolve().parents[1] / "locales"
DOMAIN = "messages"
LANGUAGES = {"en": "English", "ko": "한국어", "de": "Deutsch"}  # each named in itself, as the switch shows it
SOURCE = "en"  # the language the code is written in

_language = contextvars.ContextVar("language", default=SOURCE)


@cache
def catalogue(lang: str) -> gettext.NullTranslations:
    """The compiled catalogue of a language (English: the strings as written). A missing .mo raises: the
    catalogues ship with the code, and a page half in one language would hide the fault."""
    if lang == SOURCE:
        return gettext.NullTranslations()
    if lang not in LANGUAGES:
        raise ValueError(f"no catalogue for language {lang!r}: one of {', '.join(LANGUAGES)}")
    with open(LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.mo", "rb") as f:
        return gettext.GNUTranslations(f)


def language() -> str:
    """The language of this run."""
    return _language.get()


def use(lang: str):
    """Speak `lang` for the rest of this run (the page calls it first thing in every run)."""
    catalogue(lang)  # an unknown language fails here, not at the first string
    _language.set(lang)


@contextmanager
def speaking(lang: str):
    """Speak `lang` inside the block (a command's --lang, a test), the language before it restored after."""
    catalogue(lang)
    token = _language.set(lang)
    try:
        yield
    finally:
        _language.reset(token)


def kept(fn):
    """`fn` to be called later, outside this run (a download's file, made when it is clicked), in this run's
    language."""
    lang = language()

    def run(*args, **kwargs):
        with speaking(lang):
            return fn(*args, **kwargs)
    return run


def _(message: str) -> str:
    """`message` in the language of this run."""
    return catalogue(_language.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for n things (Korean has one, German and English two)."""
    return catalogue(_language.get()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a string for the catalogues where it is defined (a module-level table); `_()` translates it where it is
    shown, in the language of that run."""
    return message


def best_match(accepted: str | None) -> str:
    """The page's language for a browser that prefers `accepted` (st.context.locale, "ko-KR", "de", "en-US"):
    its primary language where a catalogue has it, else English."""
    primary = (accepted or "").replace("_", "-").split("-")[0].lower()
    return primary if primary in LANGUAGES else SOURCE
