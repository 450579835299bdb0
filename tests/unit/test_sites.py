"""Patching's sites are values, not tuples decoded by position (model/patch.py Site)."""

import dataclasses

import pytest
import torch

from model import patch as P


def test_a_site_names_the_extras_site_it_edits_and_the_row_it_replaces():
    assert P.Site.resid("encoder", -1, 4).key == ("encoder", "embed")
    assert P.Site.resid("decoder", 2, 0).key == ("decoder", 2, "output")
    head = P.Site.head("decoder", 1, "cross", 5)
    assert head.key == ("decoder", 1, "cross", "heads") and head.index == 5 and head.kind == "head"
    with pytest.raises(dataclasses.FrozenInstanceError):
        head.index = 0
    assert {head: 1}[P.Site("head", "decoder", 1, 5, "cross")] == 1  # equal values, one key


def test_every_site_of_a_pair_once(tiny_translator):
    """A 5-token source and 3 decoder inputs: each stack's residual at every position after the embedding and each
    layer, and every head of the three attentions."""
    cfg = tiny_translator.cfg
    pair = P.Setup(src={"clean": torch.zeros(1, 5, dtype=torch.long)}, tgt=torch.zeros(1, 3, dtype=torch.long),
                   step=2, words=(0, 1), src_tokens={}, tgt_tokens=[], word_tokens=(), outputs={}, acts={}, ld={})
    rows = P.sites(pair, cfg.n_enc_layers, cfg.n_dec_layers, cfg.n_heads)
    assert all(isinstance(r, P.Site) for r in rows)
    assert len(set(rows)) == len(rows) == (cfg.n_enc_layers + 1) * 5 + (cfg.n_dec_layers + 1) * 3 + \
        (cfg.n_enc_layers + 2 * cfg.n_dec_layers) * cfg.n_heads
