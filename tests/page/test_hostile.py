"""A public classroom server against a hostile visitor: raw WebSocket messages, crafted links, typed and pasted
text. Each test here failed on the code before the fix it guards."""

import pytest

from conftest import from_url
from unit.test_hostile import HOSTILE_VALUES, LINK_PARAMS
from views.state import MAX_SENTENCE


def view_slugs() -> list[str]:
    from views.registry import VIEWS
    return [v.slug for v in VIEWS.values()]


def hostile_link(i: int) -> dict:
    """Every link parameter hostile, the values taking turns: the i-th view's link gives LINK_PARAMS[j] the value
    (i + j) % 5 of HOSTILE_VALUES, so each link holds all five and, over the views, each parameter gets each."""
    values = list(HOSTILE_VALUES.values())
    return {k: values[(i + j) % len(values)] for j, k in enumerate(LINK_PARAMS)}


@pytest.mark.slow
def test_hostile_link_parameters_on_every_view_are_notes_never_a_crash(monkeypatch):
    """Every registered view opened once by a link whose every parameter is hostile (hostile_link): the page draws,
    names what it did not use in one note shown as text, and a second run (a reload keeps the session) does not fail
    either. Each view's reader with each value on every parameter: tests/unit/test_hostile.py."""
    for i, slug in enumerate(view_slugs()):
        at = from_url(monkeypatch, s="Ein Hund läuft.", view=slug, **hostile_link(i))
        assert not at.exception and not at.error, (slug, at.exception, [e.value for e in at.error])
        assert "class='translation'" in "".join(m.value for m in at.markdown), slug
        warnings = [w.value for w in at.warning]
        assert any("Parts of this link were not used" in w for w in warnings), (slug, warnings)
        for w in warnings:
            assert "](https" not in w and "**b**" not in w and "$x$" not in w, (slug, w)
        at.run()
        assert not at.exception and not at.error, slug


@pytest.mark.slow
def test_a_link_that_breaks_its_reader_is_one_note_and_the_page_goes_on(monkeypatch):
    """A reader that fails (a case no check foresaw) costs the link, never the page: the notes are marked read
    first, so the session's next run does not try again."""
    import views.attention

    def broken(*args):
        raise OverflowError("a reader nobody foresaw")

    monkeypatch.setattr(views.attention, "read_link", broken)  # the attention views' reader of their parameters
    at = from_url(monkeypatch, s="Ein Hund läuft.", view="cross")
    assert not at.exception and not at.error
    assert "the link could not be read" in at.warning[0].value
    assert "class='translation'" in "".join(m.value for m in at.markdown)
    at.run()
    assert not at.exception and not at.warning


@pytest.mark.slow
@pytest.mark.parametrize("box, view", [("sentence", "cross"), ("reference", "reference"), ("s2", "cross")])
def test_a_text_over_the_limit_is_cut_and_the_page_says_so(monkeypatch, box, view):
    """A paste (or a client's message) over the box's limit keeps its first MAX_SENTENCE characters, with a note;
    never the megabytes (a 20 MB reference cost 13.6 s of server CPU and stayed in memory)."""
    at = from_url(monkeypatch, s="Ein Hund läuft.", view=view, **({"vs": "sentence"} if box == "s2" else {}))
    long = "Ein Hund läuft. " * 200_000  # 3.2 MB
    at.text_input(key=box).set_value(long).run()
    assert not at.exception and not at.error
    assert at.session_state[box] == long[:MAX_SENTENCE]
    assert any(f"{len(long):,} characters" in w.value and "first 2,000 were kept" in w.value for w in at.warning)
    at.run()  # said once
    assert not any("were kept" in w.value for w in at.warning)
