"""`python -m model.convert` end to end. The shipped model *is* the Trevett tutorial's model: its weights under the
tutorial's names, saved as the tutorial saves them, convert back (vocabularies rebuilt from Multi30k by the
tutorial's rules) into the same model, which translates the test set as the shipped one does. A converted folder of
another family opens in the translator with its own specials and casing, and in the page's model switch."""

import json

import pytest
import torch

import families
from conftest import CHECKPOINT, assert_one_error_line, run
from model.checkpoint import load_checkpoint
from model.convert import key_map
from model.data import read_lines
from model.files import sha256
from model.translator import Translator

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", ["tutorial", "pytorch", "annotated"])
def test_parity_at_the_larger_size(family, tmp_path):
    """The unit tier's parity test (logits, 50 greedy outputs, every map) at its second size: 3 + 3 layers, 8 heads."""
    from unit.test_convert import SIZES, test_a_converted_model_computes_what_the_familys_own_model_does as parity

    parity(family, SIZES[1], tmp_path)


def tutorial_state(model) -> dict:
    """Our model's weights under the tutorial's names (the inverse of convert's map)."""
    ours = model.state_dict()
    return {theirs: ours[o].clone() for theirs, o in key_map("tutorial", model.cfg.n_enc_layers,
                                                               model.cfg.n_dec_layers)}


def test_the_shipped_model_saved_as_the_tutorial_saves_it_converts_back_to_itself(tmp_path, data_dir, translator):
    model, src_vocab, tgt_vocab = load_checkpoint(CHECKPOINT)
    torch.save(tutorial_state(model), tmp_path / "tut6-model.pt")
    r = run("model.convert", "tutorial", str(tmp_path / "tut6-model.pt"), "--out", str(tmp_path / "mine"),
            "--data", str(data_dir))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("tutorial model converted in ") and "9,038,341 parameters" in r.stdout
    again, src2, tgt2 = load_checkpoint(tmp_path / "mine")
    assert src2.itos == src_vocab.itos and tgt2.itos == tgt_vocab.itos  # rebuilt by the tutorial's rules
    assert again.cfg == model.cfg
    for k, v in model.state_dict().items():
        assert torch.equal(again.state_dict()[k], v), k
    assert json.loads((tmp_path / "mine" / "vocab.json").read_text()).keys() == {"src", "tgt"}  # ours: no more
    config = json.loads((tmp_path / "mine" / "config.json").read_text())
    assert config["training"] == {"family": "tutorial", "source": "tut6-model.pt",
                                  "sha256": sha256(tmp_path / "tut6-model.pt")}
    card = (tmp_path / "mine" / "README.md").read_text()
    assert "Family: **tutorial**" in card and sha256(tmp_path / "tut6-model.pt") in card and "`energy`" in card
    converted = Translator(again, src2, tgt2)
    lines = read_lines(data_dir / "test_2016_flickr.de.gz")[:50]
    want = [t.text for t in translator.translate_batch(lines, with_maps=False)]
    assert [t.text for t in converted.translate_batch(lines, with_maps=False)] == want


def test_a_pytorch_family_model_opens_with_its_own_specials_and_casing(tmp_path):
    german = ["<unk>", "<pad>", "<bos>", "<eos>", "Ein", "Hund", "läuft", ".", "ein", "Mann"]
    english = ["<unk>", "<pad>", "<bos>", "<eos>", "A", "dog", "runs", ".", "a", "man", "walks"]
    (tmp_path / "de.txt").write_text("\n".join(german) + "\n")
    (tmp_path / "en.txt").write_text("\n".join(english) + "\n")
    theirs = families.build("pytorch", len(german), len(english), 16, 2, 4, 32, seed=3)
    torch.save(theirs.state_dict(), tmp_path / "transformer.pt")
    r = run("model.convert", "pytorch", str(tmp_path / "transformer.pt"), "--src-vocab", str(tmp_path / "de.txt"),
            "--tgt-vocab", str(tmp_path / "en.txt"), "--heads", "4", "--out", str(tmp_path / "p"))
    assert r.returncode == 0, r.stderr
    model, src_vocab, tgt_vocab = load_checkpoint(tmp_path / "p")
    assert (src_vocab.sos, tgt_vocab.lower, model.cfg.final_norm, model.cfg.positions) == \
        ("<bos>", False, True, "sinusoidal")
    t = Translator(model, src_vocab, tgt_vocab)
    result = t.translate("Ein Hund läuft.")
    assert result.src_tokens == ["<bos>", "Ein", "Hund", "läuft", ".", "<eos>"]  # the case kept: Ein, not ein
    assert result.tgt_tokens[0] == "<bos>" and not any(result.src_unknown[1:-1])
    src = torch.tensor([[2, 4, 5, 6, 7, 3]])
    want = families.greedy("pytorch", theirs, src, 2, 3, 1, 101)
    assert [tgt_vocab.stoi[s.token] for s in result.steps] == want[:len(result.steps)]


def test_every_way_a_file_can_be_wrong_is_one_line_and_status_2(tmp_path):
    model = families.build("annotated", 11, 12, 16, 2, 4, 32, seed=3)
    torch.save(model.state_dict(), tmp_path / "a.pt")
    assert_one_error_line(run("model.convert", "tutorial", str(tmp_path / "a.pt"), "--out", str(tmp_path / "x")),
                          "it is an annotated model: python -m model.convert annotated")
    assert_one_error_line(run("model.convert", "annotated", str(tmp_path / "a.pt"), "--heads", "4", "--out",
                              str(tmp_path / "x")), "needs its vocabularies")
    blob = (tmp_path / "a.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(blob[:1000])
    assert_one_error_line(run("model.convert", "annotated", str(tmp_path / "cut.pt"), "--out", str(tmp_path / "x")),
                          "truncated")
    torch.save(model, tmp_path / "whole.pt")
    assert_one_error_line(run("model.convert", "annotated", str(tmp_path / "whole.pt"), "--out", str(tmp_path / "x")),
                          "not a plain state_dict")
    (tmp_path / "de.txt").write_text("<s>\n</s>\n<blank>\n<unk>\nein\n")
    assert_one_error_line(run("model.convert", "annotated", str(tmp_path / "a.pt"), "--heads", "4", "--src-vocab",
                              str(tmp_path / "de.txt"), "--tgt-vocab", str(tmp_path / "de.txt"), "--out",
                              str(tmp_path / "x")), "has 5 tokens but the model's German embedding has 11 rows")
    assert not (tmp_path / "x").exists()
