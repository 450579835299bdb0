"""Every view on a converted Marian model (tests/marian.py's tiny random one, converted by model.convert's library):
no traceback and no "could not be drawn"; its labels name its languages ("source (ko)", "target (en)": a model that
is not German to English), never German or English; where a view needs what such a model lacks (its training
corpus, a training run, learned positions), one line says so and how to get it; and with a corpus given
(`model.tables --corpus`), the familiarity note and the training evidence read that corpus."""

import json

import pytest

import marian
from conftest import APP, shown
from model.checkpoint import save_checkpoint
from model.convert import convert_marian
from model.evidence import CORPUS_FILE
from model.evidence import build as build_steps
from model.familiarity import Index, measure
from model.familiarity import build as build_index
from model.languages import language_names
from model.transformer import Transformer
from model.translator import Translator
from views.registry import VIEWS

pytestmark = pytest.mark.slow

LANGUAGES = ("ko", "en")  # what the converted model says it translates: not German to English
SOURCE, TARGET = language_names(LANGUAGES)
SENTENCE = "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt."  # annotated test line 0: alignment scores it
CORPUS_LINES = 200  # pairs of the corpus the second checkpoint's indexes are built from

# The views that cannot show what they show for our model, and a phrase of the one line that says why
NOT_HERE = {"training": "No training replay for this model", "positions": "Not shown for this model",
            "evidence": "its training corpus is not known here"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Two checkpoints of one tiny Marian model: as converted ("plain"), and with the training and step indexes of
    a corpus (the first CORPUS_LINES Multi30k training pairs, as model.tables --corpus builds them: "corpus")."""
    root = tmp_path_factory.mktemp("marian")
    cfg, weights, src_vocab, tgt_vocab, generation, _ = convert_marian(marian.build(root / "hf", "small"))
    model = Transformer(cfg)
    model.load_state_dict(weights, strict=False)
    for name in ("plain", "corpus"):
        save_checkpoint(model.eval(), src_vocab, tgt_vocab, root / "models" / name, half=False,
                        extra={"family": "marian", "source": "hf", "sha256": "0" * 64, "generation": generation,
                               "languages": list(LANGUAGES)})
    pairs = [marian.lines(lang, CORPUS_LINES) for lang in ("de", "en")]
    corpus = root / "corpus.tsv"
    corpus.write_text("".join(f"{de}\t{en}\n" for de, en in zip(*pairs)), encoding="utf-8")
    translator = Translator.load(root / "models" / "corpus", "cpu")
    quiet = lambda *args: None  # noqa: E731
    build_index(translator, root / "models" / "corpus", None, log=quiet, corpus=corpus)
    build_steps(translator, root / "models" / "corpus", None, log=quiet, corpus=corpus)
    return root / "models"


def page(monkeypatch, folder, **params):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"s": SENTENCE, **params})
    return at.run()


def said(at, kind: str) -> list[str]:
    """The texts of the page's elements of one kind (caption, info, ...), as the browser shows them."""
    return [shown(e.value) for e in at.get(kind)]


def texts(at) -> str:
    """Every text the page shows: its Markdown, captions, notes, widget labels and what its components draw."""
    found = [t for kind in ("markdown", "caption", "info", "warning", "error", "success") for t in said(at, kind)]
    found += [w.label for kind in ("text_input", "selectbox", "segmented_control", "radio") for w in at.get(kind)]
    found += [json.dumps(json.loads(c.proto.json), ensure_ascii=False) for c in at.get("bidi_component")]
    return "\n".join(found)


def test_every_view_draws_names_the_languages_and_says_what_it_lacks(monkeypatch, folder):
    for slug in VIEWS:
        at = page(monkeypatch, folder, view=slug, model="plain")
        assert not at.exception, (slug, at.exception)
        errors = [e.value for e in at.error]
        assert not any("could not be drawn" in e for e in errors), (slug, errors)
        everything = texts(at)
        assert "German" not in everything and "English" not in everything, (
            slug, [line for line in everything.splitlines() if "German" in line or "English" in line])
        assert at.text_input(key="sentence").label == f"{SOURCE} sentence (press Enter to translate)"
        assert any(c.startswith(f"{SOURCE} → {TARGET} with a Marian Transformer") for c in said(at, "caption"))
        notes = [c for c in said(at, "caption") if "No training index" in c]  # under the translation
        assert len(notes) == 1 and "training corpus is not known here" in notes[0] and "--corpus FILE" in notes[0]
        if slug in NOT_HERE:
            lines = [i for i in said(at, "info") if NOT_HERE[slug] in i]
            assert len(lines) == 1 and "\n" not in lines[0], (slug, said(at, "info"))
        if slug == "evidence":
            assert "--corpus FILE" in lines[0]
        if slug == "exercises":  # those that read a table are left out, each saying which
            left_out = [c for c in said(at, "caption") if " is left out: it reads " in c]
            assert any("head_importance.json" in c for c in left_out), left_out
            assert any(m.startswith("**Exercise 1**") for m in said(at, "markdown"))  # the others are asked
        if slug == "align":  # an annotated sentence: scored after its pieces are summed into words
            assert any("summed into words" in c for c in said(at, "caption"))
            assert any("This sentence: AER" in m for m in said(at, "markdown"))


def test_a_corpus_given_makes_the_training_evidence_and_the_familiarity_index(monkeypatch, folder):
    at = page(monkeypatch, folder, view="evidence", model="corpus")
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert not [c for c in said(at, "caption") if "No training index" in c]
    assert (folder / "corpus" / CORPUS_FILE).is_file()
    everything = texts(at)
    assert f"of the {CORPUS_LINES} corpus sentences" in everything  # the word's count in the corpus, not Multi30k
    assert "The moments of the corpus" in everything and at.dataframe  # the nearest steps, of the corpus's pairs
    corpus_de = marian.lines("de", CORPUS_LINES)
    steps = at.dataframe[-1].value
    assert set(steps["training sentence"]) <= set(corpus_de)
    translator = Translator.load(folder / "corpus", "cpu")
    found = measure(translator, translator.translate(SENTENCE), Index(folder / "corpus"))
    assert found.language == "not measured"  # a vocabulary of pieces has no frequency order to tell languages by
    assert {n.de for n in found.neighbours} <= set(corpus_de[:-CORPUS_LINES // 10])  # the last tenth sets thresholds
