"""What the page, the exercises and the tools call a model's two languages, from its language codes
(checkpoint.origin's "languages": ours and the tutorials' ("de", "en"); a converted Marian model's its own)."""

from .i18n import _

OURS = ("de", "en")  # the language codes of a German-to-English model, which are named in words


def language_names(codes=OURS) -> tuple[str, str]:
    """(source, target) as the page says them: "German" and "English" for a German-to-English model (ours, or a
    converted opus-mt-de-en); any other by its codes, "source (ko)" and "target (en)", or "source" and "target" where
    it names none."""
    codes = tuple(codes or (None, None))
    if codes == OURS:
        return _("German"), _("English")
    sides = (_("source"), _("target"))
    return tuple(f"{side} ({code})" if code else side for side, code in zip(sides, codes))
