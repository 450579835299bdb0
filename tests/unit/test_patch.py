"""Activation patching (model/patch.py, model/extras.py's patch sites): known answers on the real model and on a tiny
model built so that one head alone carries the swapped word, attribution patching against exact patching, and the
contrast pairs file checked against both shipped models."""

import pytest
import torch

from conftest import seeded_translator
from model import patch as P


def carrying_head_translator(layer: int, head: int):
    """A tiny model whose only path from the source to the output is one cross-attention head: every encoder head's
    W_O and every other cross-attention head's columns of W_O are zero (the encoder still has its feed-forward
    networks; the decoder's self-attention reads only the decoder inputs, the same in both runs)."""
    tr = seeded_translator(5)
    hs = tr.cfg.d_model // tr.cfg.n_heads
    with torch.no_grad():
        for enc in tr.model.encoder:
            enc.self_attn.w_o.weight.zero_()
        for i, dec in enumerate(tr.model.decoder):
            keep = dec.cross_attn.w_o.weight[:, head * hs:(head + 1) * hs].clone()
            dec.cross_attn.w_o.weight.zero_()
            if i == layer:
                dec.cross_attn.w_o.weight[:, head * hs:(head + 1) * hs] = keep
    return tr


@pytest.mark.parametrize("head", [0, 3])
def test_on_a_model_where_one_head_carries_the_word_that_head_alone_has_effect_1(head):
    tr = carrying_head_translator(layer=1, head=head)
    clean, corrupt = torch.tensor([[2, 5, 6, 7, 3]]), torch.tensor([[2, 5, 10, 7, 3]])  # "hund" -> "zwei"
    tgt = torch.tensor([[2, 5, 6]])
    s = P.capture_pair(tr.model, clean, corrupt, tgt, 2, (7, 11))
    # A value captured in a batch of one and put into a batch of many is rounded differently (float32, ~1e-7 of a
    # logit): over this tiny model's logit gap that is ~1e-5 of an effect.
    assert abs(s.ld["clean"] - s.ld["corrupt"]) > 0.01
    for direction, carried, rest in (("denoising", 1.0, 0.0), ("noising", 0.0, 1.0)):
        found = P.patch_sites(tr, s, direction)
        for site, e in found.items():
            if site.kind != "head":
                continue
            want = carried if site == P.Site.head("decoder", 1, "cross", head) else rest
            assert e == pytest.approx(want, abs=1e-4), (direction, site, e)
        # the encoder is position-wise here: the swapped token's embedding carries everything, the others nothing
        assert found[P.Site.resid("encoder", -1, 2)] == pytest.approx(carried, abs=1e-4)
        assert all(found[P.Site.resid("encoder", -1, p)] == pytest.approx(rest, abs=1e-4) for p in (0, 1, 3, 4))
