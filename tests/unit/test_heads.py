"""Heads by name (model/heads.py): one set of heads, spelled for the CLIs (from 0), the link (from 1) and the page."""

import pytest

from conftest import tiny_config
from model.errors import InputError
from model.heads import Head, HeadSet, n_layers, parse_head_mask


def test_head_mask_syntax():
    cfg = tiny_config()  # 2 layers, 4 heads
    m = parse_head_mask("enc.0.3, cross.1.*,dec.0", cfg)
    assert m["enc"].tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert m["cross"].tolist() == [[1, 1, 1, 1], [0, 0, 0, 0]]
    assert m["dec"].tolist() == [[0, 0, 0, 0], [1, 1, 1, 1]]
    spec = HeadSet.parse("enc.0.3, cross.1.*,dec.0", cfg).spec()  # canonical: model order, whole layers shortened
    assert spec == "enc.0.3,dec.0,cross.1"
    assert HeadSet.parse(spec, cfg).spec() == spec
    assert int(parse_head_mask("*.*.2", cfg)["dec"].sum()) == 2 * 4 - 2
    assert parse_head_mask("", cfg) is None and parse_head_mask("  ", cfg) is None


@pytest.mark.parametrize("spec,message", [
    ("enc.0.4", "no head 4"), ("cross.2.0", "no cross layer 2"), ("attn.0.1", "kind must be"),
    ("enc.x.1", "not a number"), ("enc", "not KIND.LAYER"), ("enc..1", "not KIND.LAYER")])
def test_head_mask_errors_say_what_is_wrong(spec, message):
    with pytest.raises(InputError, match=message):
        parse_head_mask(spec, tiny_config())


def test_cli_spec_to_the_link_and_back():
    cfg = tiny_config(n_enc_layers=3)  # 3 encoder layers, 2 decoder layers, 4 heads
    heads = HeadSet.parse("cross.1.2, enc.2.0,dec.0.*", cfg)
    assert {(h.kind, h.layer, h.head) for h in heads} == {("cross", 1, 2), ("enc", 2, 0)} | {
        ("dec", 0, h) for h in range(4)}
    assert heads.spec() == "enc.2.0,dec.0,cross.1.2"  # model order; the whole layer shortened
    assert heads.spec(base=1) == "enc.3.1,dec.1,cross.2.3"
    assert HeadSet.parse(heads.spec(base=1), cfg, base=1) == heads
    assert HeadSet.parse(heads.spec(), cfg) == heads
    off = {(kind, layer, head) for kind, m in heads.mask(cfg).items() if m is not None
           for layer, head in (m == 0).nonzero().tolist()}
    assert off == {(h.kind, h.layer, h.head) for h in heads}  # the mask the model takes names the same heads
    assert HeadSet.parse("", cfg) == HeadSet.of(cfg) and not HeadSet.parse(" ", cfg, base=1)
    assert HeadSet.of(cfg).mask(cfg) is None and HeadSet.of(cfg).spec(base=1) == ""


def test_every_head_of_a_layer_is_the_layer_in_every_spelling():
    cfg = tiny_config()
    layer = HeadSet.of(cfg, (Head("enc", 1, h) for h in range(4)))
    assert layer == HeadSet.parse("enc.1", cfg) == HeadSet.parse("enc.2", cfg, base=1)
    assert (layer.spec(), layer.spec(base=1)) == ("enc.1", "enc.2")
    assert layer.label() == "Encoder self-attention layer 2 (all heads)"
    assert layer.items() == [("enc", 1, None)]
    three = HeadSet.of(cfg, (Head("enc", 1, h) for h in (3, 0, 2)))
    assert three.spec() == "enc.1.0,enc.1.2,enc.1.3" and three.in_layer("enc", 1) == [0, 2, 3]
    assert len(HeadSet.every(cfg)) == (2 + 2 + 2) * 4 and HeadSet.every(cfg).spec() == "enc.0,enc.1,dec.0,dec.1,cross.0,cross.1"


def test_page_labels_count_from_one():
    cfg = tiny_config()
    heads = HeadSet.parse("cross.1,enc.0.3", cfg)
    assert heads.label() == "Encoder self-attention layer 1, head 4; Cross-attention layer 2 (all heads)"
    head = Head("cross", 1, 7)
    assert head.label() == "Cross-attention, layer 2, head 8"  # as the attention view titles it
    assert head.short() == "cross L2 H8" and Head("dec", 0, 0).short() == "decoder L1 H1"
    assert (head.spec(), head.spec(base=1)) == ("cross.1.7", "cross.2.8")
    assert [h.spec() for h in HeadSet.parse("cross.0.1,dec.1.0,enc.1.2", cfg)] == ["enc.1.2", "dec.1.0", "cross.0.1"]


@pytest.mark.parametrize("spec,message", [
    ("cross.3", "no cross layer 3 \\(the model has 2: 1 to 2\\)"), ("cross.0", "no cross layer 0"),
    ("enc.1.5", "no head 5 \\(the model has 4: 1 to 4\\)"), ("enc.1.0", "no head 0"),
    ("cross.*", "not KIND.LAYER"), ("*.1", "not KIND.LAYER"), ("enc.1.x", "not a number"),
    ("attn.1", "kind must be one of enc, dec, cross$"), ("enc.1.2.3", "not KIND.LAYER")])
def test_link_spelling_errors_say_what_is_wrong(spec, message):
    """The link counts from 1 and takes numbers only: a wildcard is for the CLIs."""
    with pytest.raises(InputError, match=message):
        HeadSet.parse(spec, tiny_config(), base=1)


def test_the_link_skips_empty_items_the_cli_does_not():
    cfg = tiny_config()
    assert HeadSet.parse("cross.1,,enc.1.1,", cfg, base=1).spec() == "enc.0.0,cross.0"
    with pytest.raises(InputError, match="not KIND.LAYER"):
        HeadSet.parse("cross.1,", cfg)


def test_layers_of_each_kind():
    cfg = tiny_config(n_enc_layers=3, n_dec_layers=5)
    assert [n_layers(cfg, k) for k in ("enc", "dec", "cross")] == [3, 5, 5]
