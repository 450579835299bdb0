"""The one table of explanation methods (model/methods.py): what the code computes and the tables name is what it
says, and a layer's or head's explanation is looked up, never parsed."""

import pytest

from model import align, attribute, faithfulness
from model.methods import METHODS, Explanation, by_name, explanations, sides

SENTENCE = "Ein Hund läuft im Park."


def test_the_faithfulness_views_explanations_are_the_tables_in_its_order(tiny_translator):
    out = [s.token for s in tiny_translator.translate(SENTENCE).steps]
    heads = [(1, 2), (0, 3)]
    scores = faithfulness.explanations(tiny_translator, SENTENCE, out, ig_steps=[], heads=heads)
    table = explanations(tiny_translator.cfg.n_dec_layers, heads)
    for side in ("source", "prefix"):
        assert list(scores[side]) == [e.name for e in table if side in sides(e)], side


def test_names_and_labels():
    assert Explanation("attention", 0, 1).name == "attention L1 H2"
    assert Explanation("norms", 2).name == "norms L3"
    assert Explanation("input_x_gradient").label == "input × gradient"
    assert by_name(3)["attention L2"] == Explanation("attention", 1)
    assert "norms" not in by_name(3) and "attention L1 H1" not in by_name(3)  # norms by layer only; heads on request


def test_the_alignment_error_of_each_kind_of_explanation():
    heads = [[0.1 * (3 * layer + h) for h in range(3)] for layer in range(2)]
    alignment = {"heads": {"cross": heads},
                 "methods": {"attention L2 argmax": {"aer": 0.5}, "norms L1 argmax": {"aer": 0.6},
                             "input x gradient argmax": {"aer": 0.7}, "ALTI+ argmax": {"aer": 0.8},
                             "value zeroing argmax": {"aer": 0.9}}}
    aer = lambda m: faithfulness.alignment_error(m, alignment)  # noqa: E731
    assert aer("attention L2 H3") == heads[1][2] and aer("attention L2") == 0.5 and aer("norms L1") == 0.6
    assert aer("input_x_gradient") == 0.7 and aer("ALTI+") == 0.8 and aer("value_zeroing") == 0.9
    for unscored in ("attention", "rollout", "integrated_gradients", "gradient", "attention L7", "nonsense"):
        assert aer(unscored) is None, unscored
    assert faithfulness.alignment_error("ALTI+", None) is None


def test_every_consumer_reads_the_table():
    """The lists that were written out three times, each now read off the table: the same members as before."""
    assert attribute.METHODS == ("gradient", "input_x_gradient", "integrated_gradients", "leave_one_out",
                                 "value_zeroing", "contrastive")
    assert attribute.SIGNED == {"input_x_gradient", "integrated_gradients", "leave_one_out", "contrastive"}
    assert faithfulness.ATTRIBUTIONS == attribute.METHODS[:-1]
    assert align.ATTRIBUTIONS == {"gradient": "gradient", "input_x_gradient": "input x gradient",
                                  "leave_one_out": "leave-one-out", "value_zeroing": "value zeroing"}
    assert {m for m, v in METHODS.items() if v.heavy} == {"integrated_gradients", "value_zeroing"}


@pytest.mark.parametrize("n_layers", [1, 3])
def test_the_alignment_tables_method_names(n_layers):
    names = align.method_names(n_layers)
    assert names[-4:] == ["gradient argmax", "input x gradient argmax", "leave-one-out argmax", "value zeroing argmax"]
    aligned = {e.aligned() for e in explanations(n_layers)} - {None}
    assert aligned <= set(names) and len(names) == 3 * n_layers + 2 * n_layers + 2 + 4
