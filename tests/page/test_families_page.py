"""Every view on every model family: a folder of three converted models (one per tutorial family, tiny, random
weights, converted by `python -m model.convert`'s library) in TRANSFORMER_CHECKPOINT puts each in the model switch
by folder and family, and every registered view draws for each of them without a traceback or "could not be
drawn"."""

import pytest
import torch

import families
from conftest import ENGLISH, GERMAN, charts
from model.checkpoint import save_checkpoint
from model.convert import FAMILIES, convert_state
from model.transformer import Transformer
from model.vocab import Vocab
from views.registry import VIEWS

pytestmark = pytest.mark.slow

SENTENCE = "Ein Hund läuft im Park ."


def family_vocab(family: str, words: list[str]) -> Vocab:
    f = FAMILIES[family]
    return Vocab([*f.specials, *words], dict(zip(f.roles, f.specials)), f.lower)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """checkpoints of the three families, side by side, as `model.convert` writes them."""
    root = tmp_path_factory.mktemp("mine")
    for family in FAMILIES:
        src, tgt = family_vocab(family, GERMAN[4:] + ["Ein", "Hund"]), family_vocab(family, ENGLISH[4:] + ["A"])
        theirs = families.build(family, len(src), len(tgt), 16, 2, 4, 32, seed=5)
        cfg, weights = convert_state(family, theirs.state_dict(), n_heads=4)
        model = Transformer(cfg).eval()
        model.load_state_dict(weights)
        save_checkpoint(model, src, tgt, root / f"my-{family}", half=False,
                        extra={"family": family, "source": "model.pt", "sha256": "0" * 64})
    return root


def test_every_view_draws_on_every_family(folder, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from conftest import APP

    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    switch = at.segmented_control(key="model")  # three: a segmented control (more: a select box)
    assert switch.value == "my-annotated"
    assert [o.content if hasattr(o, "content") else str(o) for o in switch.options] == \
        [f"my-{f} ({f})" for f in sorted(FAMILIES)]
    torch.set_num_threads(1)
    for family in sorted(FAMILIES):
        for slug in VIEWS:
            at = AppTest.from_file(APP, default_timeout=120)
            at.query_params.update({"s": SENTENCE, "view": slug, "model": f"my-{family}"})
            at.run()
            assert not at.exception, (family, slug, at.exception)
            errors = [e.value for e in at.error]
            assert not any("could not be drawn" in e for e in errors), (family, slug, errors)
            if slug == "contributions":  # ALTI+ on every family's block, pre-LN included: its charts, no refusal
                assert charts(at) and not any("pre-LN" in i.value for i in at.info), (family, slug)
