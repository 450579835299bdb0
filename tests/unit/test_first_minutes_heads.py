"""The head picker's options (model/heads.py): a whole layer is one option beside its heads, and a layer picked with
some of its heads switches each head off once."""

from conftest import tiny_config
from model.heads import Head, HeadSet, Layer


def test_a_layer_is_one_option_before_its_heads_and_counts_each_head_once():
    cfg = tiny_config()  # 2 + 2 layers, 4 heads
    choices = HeadSet.choices(cfg)
    layer = Layer("cross", 1, 4)
    assert layer in choices and choices[choices.index(layer) + 1:][:4] == list(layer.heads())
    assert len(choices) == len(HeadSet.every(cfg)) + 6  # one option per layer more
    assert layer.short() == "cross L2 (all 4 heads)"
    # every option that starts with "cross L2" is the layer or one of its heads, the layer first
    typed = [c for c in choices if c.short().startswith("cross L2")]
    assert typed == [layer, *layer.heads()]
    both = HeadSet.of(cfg, [layer, Head("cross", 1, 2), Head("enc", 0, 0)])
    assert len(both) == 5 and both.spec(base=1) == "enc.1.1,cross.2"
    assert both.picks() == [Head("enc", 0, 0), layer]  # as the picker shows a link's heads
    assert HeadSet.of(cfg, both.picks()) == both
