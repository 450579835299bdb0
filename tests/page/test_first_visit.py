"""A first visit starts on the walk: the view switch in families, the walk first; a link that names a view still
opens it; picking a family opens its first view; the intro says where the model comes from."""

from conftest import from_url, show_view
from views.registry import DEFAULT_VIEW, FAMILIES, FAMILY_OF, VIEWS

SENTENCE = "Ein Hund rennt durch den Schnee."


def test_a_first_visit_opens_the_walk_under_start_here(monkeypatch):
    at = from_url(monkeypatch)
    at.text_input(key="sentence").input(SENTENCE).run()
    assert not at.exception
    assert at.session_state["view"] == "walk" == DEFAULT_VIEW
    assert at.segmented_control(key="family").value == "Start here" == FAMILIES[0].name
    assert at.segmented_control(key="view").options == [VIEWS[s].label for s in FAMILIES[0].views]
    assert dict(at.query_params)["view"] == "walk"
    assert any(c.value.startswith("Stop 1 of") for c in at.caption)  # the walk's first stop is drawn
    intro = " ".join(c.value for c in at.caption)
    assert "Ben Trevett's tutorial" in intro and "Korean edition" in intro and "Start here" in intro


def test_a_link_that_names_a_view_opens_it_in_its_family(monkeypatch):
    at = from_url(monkeypatch, s=SENTENCE, view="dec")
    assert not at.exception and at.session_state["view"] == "dec"
    assert at.segmented_control(key="family").value == FAMILY_OF["dec"].name == "Attention"
    assert at.segmented_control(key="view").value == "dec"


def test_picking_a_family_opens_its_first_view_and_the_link_follows(monkeypatch):
    at = from_url(monkeypatch, s=SENTENCE)
    for family in FAMILIES[1:]:
        if any(VIEWS[s].heavy for s in family.views[:1]):
            continue  # a heavy first view is opened by the browser sweeps; this checks the switch itself
        at.segmented_control(key="family").set_value(family.name).run()
        assert not at.exception, family.name
        assert at.session_state["view"] == family.views[0] == dict(at.query_params)["view"], family.name
        assert any(family.line == c.value for c in at.caption), family.name  # its line under the switch
    show_view(at, "beam")
    assert at.session_state["view"] == "beam" and at.segmented_control(key="family").value == "More"
