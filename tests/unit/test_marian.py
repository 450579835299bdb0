"""Parity of our Transformer with Hugging Face's MarianMTModel (transformers, a test dependency only) on tiny Marian
folders that transformers itself writes (tests/marian.py), after `python -m model.convert marian`: the tokens, the
teacher-forced logits and every attention map, greedy and beam-search output with their scores, head masks, and the
conversion's refusals. Two sizes, with and without shared embeddings.

Hugging Face runs with attn_implementation="eager", the written-out softmax(q k^T / sqrt(d)) v, so that its maps
exist and its arithmetic is ours.
"""

import copy
import inspect
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import marian
from model import convert
from model.decoding import beam_search, greedy_decode
from model.extras import Extras
from model.translator import Translator
from unit.test_convert import Exploit

transformers = pytest.importorskip("transformers")

VARIANTS = {"small-shared": ("small", True), "small-separate": ("small", False),
            "large-shared": ("large", True), "large-separate": ("large", False)}
N = 12  # new tokens a generation may write (max_new_tokens)
ENDING = ("small-shared", "large-separate")  # variants whose greedy batch mixes rows ending early with rows cut at N
EVERYDAY = "Ich habe heute keine Zeit. \u2603"  # a snowman: a character neither SentencePiece model has seen


def sentences(n: int = 10) -> list[str]:
    """Multi30k training sentences after the ones the SentencePiece models learned from."""
    return marian.lines("de", marian.TRAIN_LINES + n)[marian.TRAIN_LINES:]


def english(n: int = 10) -> list[str]:
    return marian.lines("en", marian.TRAIN_LINES + n)[marian.TRAIN_LINES:]


@dataclass
class Pair:
    """One Marian folder: ours converted from it, theirs loaded from it."""

    folder: Path
    tr: Translator
    hf: object  # MarianMTModel, eager attention, eval
    tok: object  # MarianTokenizer


@pytest.fixture(scope="session")
def pairs(tmp_path_factory):
    """pairs(name, **build options) -> Pair, each built, converted and loaded once per session."""
    from transformers import MarianMTModel, MarianTokenizer
    from transformers.utils import logging

    logging.set_verbosity_error()  # "max_new_tokens and max_length both set", and the like
    logging.disable_progress_bar()
    root = tmp_path_factory.mktemp("marian")
    made = {}

    def pair(name: str, **options) -> Pair:
        key = (name, *sorted(options.items()))
        if key not in made:
            size, shared = VARIANTS[name]
            tag = "-".join([name, *(f"{k}{v}" for k, v in sorted(options.items()))])
            folder = marian.build(root / tag, size, shared, **options)
            assert convert.main(["marian", str(folder), "--out", str(root / f"{tag}-ours")]) == 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses" (unused by _tokenize)
                tok = MarianTokenizer.from_pretrained(folder)
            hf = MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
            made[key] = Pair(folder, Translator.load(str(root / f"{tag}-ours")), hf, tok)
        return made[key]

    return pair


def batch(tr, texts: list[str]) -> torch.Tensor:
    """(B, S) source ids, padded with <pad> at the end (as MarianTokenizer pads)."""
    rows = [tr.source_ids(t)[1] for t in texts]
    S = max(map(len, rows))
    return torch.tensor([r + [tr.cfg.pad_id] * (S - len(r)) for r in rows])


def generate(pair, src, **options):
    with torch.no_grad():
        return pair.hf.generate(src, attention_mask=src != pair.tr.cfg.pad_id, do_sample=False,
                                max_new_tokens=N, **options)


variants = pytest.mark.parametrize("name", VARIANTS)


@variants
def test_tokens_are_marian_tokenizers(pairs, name):
    p = pairs(name)
    texts = [*sentences(), EVERYDAY]
    for text in texts:
        assert p.tr.source_ids(text)[1] == p.tok(text).input_ids, text
    assert p.tr.cfg.unk_id in p.tr.source_ids(EVERYDAY)[1]  # the snowman is <unk> on both sides
    tokens = p.tr.source_ids(texts[0])[0]
    assert tokens == [*p.tok.tokenize(texts[0]), "</s>"]  # the pieces, then </s>: no start token
    for text in english():  # the target side: target.spm and target_vocab.json where the vocabularies are separate
        v = p.tr.tgt_vocab
        assert v.encode(v.tokenize(text, "en")) + [v.eos_id] == p.tok(text_target=text).input_ids, text


@variants
def test_logits_and_every_attention_map_are_marians(pairs, name):
    """Teacher forcing on a padded batch, the decoder input starting from <pad>: logits to 1e-5, and each layer's
    encoder self-, decoder self- and cross-attention maps to 1e-5."""
    p = pairs(name)
    src = batch(p.tr, sentences(3))
    targets = [p.tok(text_target=t).input_ids for t in english(3)]
    T = min(map(len, targets))
    tgt = torch.tensor([[p.tr.cfg.pad_id] + t[:T - 1] for t in targets])  # no padding on the decoder side
    with torch.no_grad():
        ours = p.tr.model(src, tgt, Extras(need_weights=True))
        theirs = p.hf(input_ids=src, attention_mask=src != p.tr.cfg.pad_id, decoder_input_ids=tgt,
                      output_attentions=True)
    assert (src == p.tr.cfg.pad_id).any(), "the batch must have padding"
    torch.testing.assert_close(ours.logits, theirs.logits, atol=1e-5, rtol=0)
    for kind, mine, hers in (("encoder", ours.encoder_attentions, theirs.encoder_attentions),
                             ("decoder", ours.decoder_attentions, theirs.decoder_attentions),
                             ("cross", ours.cross_attentions, theirs.cross_attentions)):
        assert len(mine) == len(hers), kind
        for layer, (a, b) in enumerate(zip(mine, hers)):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0, msg=lambda m: f"{kind} layer {layer}: {m}")


@variants
def test_greedy_tokens_are_generates(pairs, name):
    """generate(num_beams=1) on a padded batch and sentence by sentence; <pad> is never written (opus-mt's
    bad_words_ids), though marian.PAD_BIAS makes it the likeliest token."""
    p = pairs(name)
    texts = sentences(4)
    src = batch(p.tr, texts)
    with torch.no_grad():
        first = p.tr.model(src, torch.full((len(texts), 1), p.tr.cfg.pad_id)).logits[:, 0]  # (B, V)
    assert (first.argmax(-1) == p.tr.cfg.pad_id).all(), "<pad> must be the likeliest first token"
    theirs = generate(p, src, num_beams=1)
    assert (theirs[:, 0] == p.tr.cfg.pad_id).all()  # Hugging Face's sequences start with the decoder's start
    ours = greedy_decode(p.tr.model, src, max_len=N)
    assert ours.ids.tolist() == theirs[:, 1:].tolist()
    for b, row in enumerate(theirs[:, 1:].tolist()):
        assert ours.lengths[b] == (row.index(0) + 1 if 0 in row else N)
    if name in ENDING:
        assert 1 <= (ours.lengths < N).sum() < len(texts), "some rows must end early, some not"
    for text in texts:
        one = p.tr.source_ids(text)[1]
        want = generate(p, torch.tensor([one]), num_beams=1)[0, 1:].tolist()
        got = p.tr.translate(text, max_len=N)
        assert [p.tr.tgt_vocab.stoi[t] for t in got.output_tokens] == [i for i in want if i != 0], text
        assert p.tr.cfg.pad_id not in want


def beams(pair, text: str, alpha: float, early_stopping) -> tuple[tuple, tuple]:
    """((ids, scores, steps) of ours, the same of Hugging Face's) for one sentence: the K hypotheses best first, their
    length-normalized scores and how many decoding steps the search ran (Hugging Face's: one `scores` entry each)."""
    src = torch.tensor([pair.tr.source_ids(text)[1]])
    ours = beam_search(pair.tr.model, src, beam=4, max_len=N, alpha=alpha, early_stopping=early_stopping)
    out = generate(pair, src, num_beams=4, num_return_sequences=4, length_penalty=alpha,
                   early_stopping=early_stopping, return_dict_in_generate=True, output_scores=True)
    theirs = [row[1:].tolist() for row in out.sequences]
    theirs = [row[:row.index(0) + 1] if 0 in row else row for row in theirs]  # cut at </s> (id 0)
    return (([h.ids for h in ours.hypotheses], [h.normalized for h in ours.hypotheses], len(ours.trace)),
            (theirs, out.sequences_scores.tolist(), len(out.scores)))


def same_beams(ours: tuple, theirs: tuple, why) -> None:
    assert ours[0] == theirs[0], why
    assert ours[1] == pytest.approx(theirs[1], abs=1e-4), why
    assert ours[2] == theirs[2], why


@variants
def test_beam_search_is_generates_with_the_checkpoints_settings(pairs, name):
    """generate(num_beams=4) with the length_penalty and early_stopping that the converted config.json records from
    generation_config.json: the same four hypotheses, best first, their scores to 1e-4, as many steps."""
    p = pairs(name)
    gen = p.tr.origin["generation"]
    assert gen["num_beams"] == 4 and gen["bad_words_ids"] == [[p.tr.cfg.pad_id]]
    for text in sentences(2):
        same_beams(*beams(p, text, gen["length_penalty"], gen["early_stopping"]), text)


@variants
def test_the_pages_beam_search_follows_the_checkpoints_settings(pairs, name):
    """Translator.beam (the page's and model.translate --beam's) ranks as generate(num_beams=4) with the length
    penalty and early stopping of the checkpoint's generation_config.json, not with our model's GNMT alpha 0.6."""
    p = pairs(name)
    gen = p.tr.origin["generation"]
    assert p.tr.beam_rule() == {"alpha": gen["length_penalty"], "early_stopping": gen["early_stopping"]} != {
        "alpha": 0.6, "early_stopping": False}
    for text in sentences(2):
        found = p.tr.beam(text, beam=4, max_len=N)
        _, theirs = beams(p, text, gen["length_penalty"], gen["early_stopping"])
        assert [[p.tr.tgt_vocab.stoi[t] for t in c.tokens] for c in found.nbest] == theirs[0]
        assert [c.normalized for c in found.nbest] == pytest.approx(theirs[1], abs=1e-4)


STOPPING = [(0.6, False), (0.6, True), (0.6, "never"), (1.0, False), (1.0, "never"), (-0.5, "never"), (2.0, False)]


def test_beam_search_ranks_and_stops_as_generate_does(pairs):
    """Each early_stopping rule, and length penalties below zero, between zero and one, one and above, on two
    models whose hypotheses end at many lengths (the </s> bias of the others, and a larger one): the same hypotheses,
    scores and steps. The rules must make a difference here, else the comparison would not tell them apart: on the
    second model, at length_penalty 0.6 True stops before False, and False before "never"; at 1.0 False and "never"
    find different hypotheses. (On the first, at 0.6, a </s> ranked below the top K would make the best four if it
    counted.)"""
    found = {}
    for p in (pairs("small-shared"), pairs("small-shared", eos_bias=4.0)):
        for text in sentences(2):
            for alpha, early_stopping in STOPPING:
                ours, theirs = beams(p, text, alpha, early_stopping)
                same_beams(ours, theirs, (p.folder.name, alpha, early_stopping, text))
                found[text, alpha, early_stopping] = theirs  # the second model's stay
    steps = {text: [found[text, 0.6, rule][2] for rule in (True, False, "never")] for text in sentences(2)}
    assert any(a < b < c for a, b, c in steps.values()), steps
    assert any(found[text, 1.0, False][0] != found[text, 1.0, "never"][0] for text in sentences(2))


def test_head_masks_are_marians_where_transformers_has_them(pairs):
    from transformers import MarianMTModel

    if "head_mask" not in inspect.signature(MarianMTModel.forward).parameters:
        pytest.skip(f"transformers {transformers.__version__}'s MarianMTModel.forward takes no head_mask (removed "
                    "in 5.0); tests/unit/test_marian.py's literal route checks our head masks instead")
    p = pairs("large-separate")
    src = batch(p.tr, sentences(2))
    tgt = torch.full((2, 1), p.tr.cfg.pad_id)
    mask = p.tr.head_mask("enc.0.1,enc.2.*,dec.1.2,cross.0.3")
    with torch.no_grad():
        ours = p.tr.model(src, tgt, Extras(mask)).logits
        theirs = p.hf(input_ids=src, attention_mask=src != p.tr.cfg.pad_id, decoder_input_ids=tgt,
                      head_mask=mask["enc"], decoder_head_mask=mask["dec"], cross_attn_head_mask=mask["cross"]).logits
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("spec", ["enc.1.2", "dec.0.3", "cross.1.0"])
def test_a_head_switched_off_is_its_slice_of_w_o_zeroed(pairs, spec):
    """The second route: a head mask equals zeroing that head's input columns of the output projection."""
    p = pairs("large-shared")
    kind, layer, head = spec.split(".")
    layer, head, hs = int(layer), int(head), p.tr.cfg.head_size
    src = batch(p.tr, sentences(2))
    tgt = torch.tensor([[p.tr.cfg.pad_id, 5, 9, 22, 7, 30]] * 2)
    edited = copy.deepcopy(p.tr.model)
    stack, sub = {"enc": ("encoder", "self_attn"), "dec": ("decoder", "self_attn"),
                  "cross": ("decoder", "cross_attn")}[kind]
    with torch.no_grad():
        getattr(getattr(edited, stack)[layer], sub).w_o.weight[:, head * hs:(head + 1) * hs] = 0  # (D, H * hs)
        masked = p.tr.model(src, tgt, Extras(p.tr.head_mask(spec))).logits
        literal = edited(src, tgt).logits
        plain = p.tr.model(src, tgt).logits
    torch.testing.assert_close(masked, literal, atol=1e-6, rtol=0)
    assert (masked - plain).abs().max() > 1e-3, "the head must matter"


def test_pytorch_model_bin_converts_as_the_safetensors_do(pairs):
    """pytorch_model.bin (read with weights_only) gives the very weights model.safetensors gives."""
    a, b = pairs("small-shared"), pairs("small-shared", weights="bin")
    assert (b.folder / "pytorch_model.bin").is_file() and not (b.folder / "model.safetensors").exists()
    sa, sb = a.tr.model.state_dict(), b.tr.model.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def refusal(folder, out, capsys) -> str:
    """The command's one error line for a folder it must refuse (exit status 2, no traceback)."""
    assert convert.main(["marian", str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "internal error" not in err, err
    assert not out.exists() or not any(out.iterdir())
    return err


def test_what_is_not_a_marian_model_is_refused_in_one_line(pairs, tmp_path, capsys):
    good = pairs("small-shared").folder
    capsys.readouterr()

    def copy_of(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for f in good.iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
        return folder

    bart = copy_of("bart")
    config = json.loads((bart / "config.json").read_text())
    (bart / "config.json").write_text(json.dumps({**config, "model_type": "bart"}))
    assert "model_type 'bart': not a Marian model" in refusal(bart, tmp_path / "o1", capsys)

    no_spm = copy_of("no_spm")
    (no_spm / "source.spm").unlink()
    assert "has no source.spm" in refusal(no_spm, tmp_path / "o2", capsys)

    short = copy_of("short")
    weights = load_file(short / "model.safetensors")
    del weights["model.decoder.layers.1.fc2.weight"]
    save_file(weights, short / "model.safetensors", metadata={"format": "pt"})
    assert "lack 'decoder.layers.1.fc2.weight'" in refusal(short, tmp_path / "o3", capsys)

    bigger = copy_of("bigger")
    vocab = json.loads((bigger / "vocab.json").read_text())
    (bigger / "vocab.json").write_text(json.dumps({**vocab, "\u2581extra": len(vocab)}))
    err = refusal(bigger, tmp_path / "o4", capsys)
    assert f"has {len(vocab) + 1:,} pieces but the model's source embedding has {len(vocab):,} rows" in err

    evil = copy_of("evil")
    weights = load_file(evil / "model.safetensors")
    (evil / "model.safetensors").unlink()
    torch.save({**weights, "extra": Exploit()}, evil / "pytorch_model.bin")
    assert "holds Python objects" in refusal(evil, tmp_path / "o5", capsys)
    assert not (Path(__file__).parent / "ran").exists()


def test_a_hub_id_without_a_network_says_which_folder_to_give(call, monkeypatch, tmp_path):
    """Offline, a hub id is one line naming the command that downloads the folder on a machine that is online; a
    path that is neither a folder nor a hub id says what to give."""
    import huggingface_hub

    from model import convert

    def offline(*args, **kwargs):
        raise huggingface_hub.errors.LocalEntryNotFoundError("offline")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    status, _, err = call(convert.main, "marian", "Helsinki-NLP/opus-mt-de-en", "--out", tmp_path / "out")
    assert status == 2 and err.count("\n") == 1
    assert "hf download Helsinki-NLP/opus-mt-de-en --local-dir DIR" in err
    status, _, err = call(convert.main, "marian", tmp_path / "no" / "such" / "folder", "--out", tmp_path / "out")
    assert status == 2 and err.count("\n") == 1 and "is not a folder" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("training, languages", [
    ({}, ("de", "en")),  # ours
    ({"family": "tutorial"}, ("de", "en")),
    ({"family": "marian", "languages": ["ko", "en"]}, ("ko", "en")),
    ({"family": "marian", "languages": [None, None]}, (None, None)),  # the page then says "source" and "target"
    ({"family": "marian"}, (None, None)),
    ({"family": "marian", "languages": ["", 7]}, (None, None)),
])
def test_a_checkpoints_languages_are_known_or_said_unknown(tmp_path, training, languages):
    from model.checkpoint import origin

    (tmp_path / "config.json").write_text(json.dumps({"d_model": 8, "training": training}))
    assert origin(tmp_path)["languages"] == languages
