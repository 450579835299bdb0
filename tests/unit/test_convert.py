"""model/convert.py: a tutorial's own model (tests/families.py, each family as its tutorial publishes it), saved as
its tutorial saves it, converted, and compared with ours on the same weights: logits to 1e-5, the same greedy output
on 50 sources (the family's own loop against ours), and every attention map the family exposes. Then every way a
file can be wrong, one line each."""

import pickle

import numpy as np
import pytest
import torch

import families
from model.config import ModelConfig
from model.convert import FAMILIES, convert_state, read_state_dict, read_vocab
from model.decoding import greedy_decode
from model.errors import InputError
from model.transformer import Extras, Transformer

SIZES = [dict(src_vocab=23, tgt_vocab=19, d_model=16, n_layers=2, n_heads=4, d_ff=32),
         dict(src_vocab=31, tgt_vocab=29, d_model=32, n_layers=3, n_heads=8, d_ff=48)]
SOURCES = 50
MAX_LEN = 12


def converted(family: str, size: dict, seed: int = 1, tmp_path=None):
    """The family's own model, its state_dict through torch.save/torch.load as a student's file goes, and ours."""
    theirs = families.build(family, **size, seed=seed)
    state = theirs.state_dict()
    if tmp_path is not None:
        torch.save(state, tmp_path / "model.pt")
        state = read_state_dict(tmp_path / "model.pt")
    cfg, weights = convert_state(family, state, n_heads=size["n_heads"])
    ours = Transformer(cfg).eval()
    ours.load_state_dict(weights)
    return theirs, ours


def sources(family: str, size: dict, n: int = SOURCES, seed: int = 0) -> list[torch.Tensor]:
    """n source sentences (1, S) of 3 to 9 content ids, wrapped in the family's start and end tokens."""
    ids = families.special_ids(family)
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        content = torch.randint(4, size["src_vocab"], (int(torch.randint(3, 10, (1,), generator=g)),), generator=g)
        out.append(torch.tensor([[ids["sos"], *content.tolist(), ids["eos"]]]))
    return out


@pytest.mark.parametrize("size", SIZES[:1], ids=["small"])  # the larger size: tests/integration/test_convert.py
@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_converted_model_computes_what_the_familys_own_model_does(family, size, tmp_path):
    theirs, ours = converted(family, size, tmp_path=tmp_path)
    ids = families.special_ids(family)
    assert (ours.cfg.sos_id, ours.cfg.eos_id, ours.cfg.pad_id, ours.cfg.unk_id) == \
        (ids["sos"], ids["eos"], ids["pad"], ids["unk"])
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, size["src_vocab"], (4, 9), generator=g)
    tgt = torch.randint(4, size["tgt_vocab"], (4, 7), generator=g)
    src[:, 0] = tgt[:, 0] = ids["sos"]
    src[1, 6:] = tgt[2, 5:] = ids["pad"]  # padding in both
    with torch.no_grad():
        want, got = families.logits(family, theirs, src, tgt, ids["pad"]), ours(src, tgt).logits
    assert torch.allclose(got, want, rtol=0, atol=1e-5), (got - want).abs().max()

    same = 0
    for s in sources(family, size):
        theirs_out = families.greedy(family, theirs, s, ids["sos"], ids["eos"], ids["pad"], MAX_LEN)
        d = greedy_decode(ours, s, max_len=families.max_new_tokens(family, MAX_LEN), need_weights=False)
        ours_out = d.ids[0, :int(d.lengths[0])].tolist()
        assert ours_out == theirs_out, (s.tolist(), ours_out, theirs_out)
        same += 1
    assert same == SOURCES

    s, t = src[:1, :6], tgt[:1, :5]
    maps = families.attention(family, theirs, s, t, ids["pad"])
    with torch.no_grad():
        out = ours(s, t, Extras(need_weights=True))
    mine = {"enc": out.encoder_attentions, "dec": out.decoder_attentions, "cross": out.cross_attentions}
    mine = {k: torch.stack(v)[:, 0].numpy() for k, v in mine.items()}  # (L, H, Tq, Tk)
    if family == "tutorial":
        np.testing.assert_allclose(mine["cross"][-1], maps["cross_last"], rtol=0, atol=1e-6)
    else:
        assert set(maps) == {"enc", "dec", "cross"}
        for kind in maps:
            np.testing.assert_allclose(mine[kind], maps[kind], rtol=0, atol=1e-5, err_msg=kind)


def test_the_tutorial_family_is_our_model_renamed_bit_for_bit():
    """Same architecture, same formulas: the converted tutorial model's logits are the tutorial's exactly."""
    size = SIZES[1]
    theirs, ours = converted("tutorial", size)
    assert ours.cfg == ModelConfig(src_vocab_size=31, tgt_vocab_size=29, d_model=32, n_enc_layers=3, n_dec_layers=3,
                                   n_heads=8, d_ff=48, max_positions=100)
    src = torch.tensor([[2, 5, 6, 7, 8, 3]])
    tgt = torch.tensor([[2, 9, 10, 11]])
    with torch.no_grad():
        assert torch.equal(ours(src, tgt).logits, families.logits("tutorial", theirs, src, tgt, 1))


# --- what can be wrong with a file --------------------------------------------------------------------------------
def error(call) -> str:
    with pytest.raises(InputError) as e:
        call()
    message = str(e.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def test_another_familys_file_names_its_first_key_and_the_family_that_would_fit():
    state = families.build("annotated", **SIZES[0], seed=1).state_dict()
    message = error(lambda: convert_state("tutorial", state, 4))
    first = next(iter(state))
    assert f"{first!r}" in message and "it is an annotated model: python -m model.convert annotated" in message
    message = error(lambda: convert_state("pytorch", families.build("tutorial", **SIZES[0], seed=1).state_dict(), 4))
    assert "tutorial" in message


def test_a_missing_or_extra_key_or_a_wrong_shape_is_one_line():
    state = families.build("tutorial", **SIZES[0], seed=1).state_dict()
    gone = {k: v for k, v in state.items() if k != "decoder.fc_out.bias"}
    assert "'decoder.fc_out.bias'" in error(lambda: convert_state("tutorial", gone, 4))
    more = {**state, "decoder.extra.weight": torch.zeros(2)}
    assert "'decoder.extra.weight' is not part of a tutorial model" in error(lambda: convert_state("tutorial", more, 4))
    bent = {**state, "decoder.fc_out.weight": torch.zeros(19, 17)}
    assert "'decoder.fc_out.weight' has shape (19, 17)" in error(lambda: convert_state("tutorial", bent, 4))
    assert "--heads 5 does not divide d_model 16" in error(lambda: convert_state("tutorial", state, 5))
    broken = {**state, "decoder.fc_out.bias": torch.full((19,), float("nan"))}
    assert "NaN" in error(lambda: convert_state("tutorial", broken, 4))


def test_files_that_are_not_a_plain_state_dict_are_refused_without_running_code(tmp_path):
    model = families.build("tutorial", **SIZES[0], seed=1)
    torch.save(model.state_dict(), tmp_path / "ok.pt")
    blob = (tmp_path / "ok.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(blob[:len(blob) // 2])
    assert "truncated" in error(lambda: read_state_dict(tmp_path / "cut.pt"))
    torch.save(model, tmp_path / "whole.pt")  # torch.save(model): a pickle of the class, never loaded here
    assert "not a plain state_dict" in error(lambda: read_state_dict(tmp_path / "whole.pt"))
    torch.save({"epoch": 3, "model_state_dict": model.state_dict()}, tmp_path / "wrapped.pt")
    assert "'model_state_dict' entry" in error(lambda: read_state_dict(tmp_path / "wrapped.pt"))
    (tmp_path / "evil.pt").write_bytes(pickle.dumps(Exploit()))
    assert "evil.pt" in error(lambda: read_state_dict(tmp_path / "evil.pt"))
    assert not (tmp_path / "ran").exists()
    assert "does not exist" in error(lambda: read_state_dict(tmp_path / "none.pt"))


class Exploit:
    """A pickle that would write a file when loaded by plain pickle (weights_only refuses it)."""

    def __reduce__(self):
        import pathlib
        return pathlib.Path.touch, (pathlib.Path(__file__).parent / "ran",)


def test_vocabulary_files_are_checked_against_the_family_and_the_sizes(tmp_path):
    good = tmp_path / "en.txt"
    good.write_text("\n".join(["<unk>", "<pad>", "<bos>", "<eos>", "A", "dog"]) + "\n")
    v = read_vocab(good, "pytorch", 6, "English")
    assert (v.sos, v.sos_id, v.eos_id, v.pad_id, v.unk_id, v.lower) == ("<bos>", 2, 3, 1, 0, False)
    assert v.encode(v.tokenize("A dog", "en")) == [4, 5]  # not lower-cased
    assert "has 6 tokens but the model's English embedding has 7 rows" in error(
        lambda: read_vocab(good, "pytorch", 7, "English"))
    assert "an annotated vocabulary starts with ['<s>', '</s>', '<blank>', '<unk>']" in error(
        lambda: read_vocab(good, "annotated", 6, "English"))


def test_a_pre_ln_model_runs_every_analysis():
    """The Annotated Transformer's model: the maps, the lenses, norms, ALTI+, value zeroing, attributions and
    faithfulness all run, and faithfulness ranks every method (ALTI+ and value zeroing included)."""
    from conftest import ENGLISH, GERMAN, tiny_config
    from model import faithfulness as F
    from model.translator import Translator
    from model.vocab import Vocab

    torch.manual_seed(0)
    cfg = tiny_config(positions="sinusoidal", norm_position="pre", final_norm=True, layer_norm="std", norm_eps=1e-6)
    t = Translator(Transformer(cfg).eval(), Vocab(GERMAN), Vocab(ENGLISH))
    sentence = "ein hund läuft im park ."
    out = [s.token for s in t.translate(sentence).steps]
    t.inside(sentence, out), t.logit_lens(sentence, out), t.decoder_lens(sentence), t.weighted_norms(sentence, out)
    c = t.contributions(sentence, out)
    np.testing.assert_allclose(c.source.sum(-1) + c.prefix.sum(-1), 1.0, rtol=0, atol=1e-9)
    scores = F.explanations(t, sentence, out, ig_steps=[0])
    assert {"attention", "rollout", "ALTI+", "value_zeroing", "leave_one_out", "integrated_gradients"} <= \
        set(scores["source"])


def test_the_walk_writes_each_stops_equation_as_the_model_computes_it():
    """The paper's equations for our model; the norm in front for a pre-LN one; the final norms where it has them."""
    from views.walk import STOPS, equation

    ours = ModelConfig(src_vocab_size=9, tgt_vocab_size=9)
    annotated = ModelConfig(src_vocab_size=9, tgt_vocab_size=9, **FAMILIES["annotated"].options)
    assert [equation(n, ours) for n in range(len(STOPS))] == [s.equation for s in STOPS]
    assert equation(4, annotated) == r"x' = x + \mathrm{MultiHead}(\mathrm{LayerNorm}(x))"
    assert r"\mathrm{LayerNorm}(x')\,W_1" in equation(5, annotated)
    assert r"\mathrm{memory} = \mathrm{LayerNorm}(x^{(N)})" in equation(6, annotated)
    assert r"\mathrm{LayerNorm}(h_t) W_{out}" in equation(9, annotated)
