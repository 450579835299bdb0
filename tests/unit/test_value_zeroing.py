"""Value zeroing (Mohebbi et al., EACL 2023): model/value_zeroing.py.

Second routes: a literal implementation (one unbatched forward of the whole model per block, layer and key, a
hand-written hook zeroing that one value, the cosine by hand in numpy); a model built so that a block's attention
is one-hot, where only the attended key may score; invariants on the tiny models and the shipped one.
"""

import threading

import numpy as np
import pytest
import torch

from conftest import BLOCKS, ENGLISH, GERMAN, seeded_translator, tiny_config
from model.contributions import rollout
from model.extras import Extras
from model.transformer import Transformer
from model.translator import Translator
from model.value_zeroing import value_zeroing, values_zeroed
from model.vocab import SOS_ID, Vocab

SENTENCE = "Ein Hund läuft im Park."
SENTENCES = [SENTENCE, "Zwei Männer laufen.", "ein hund c d e f g h i j k ."]
OUTPUT = ["a", "dog", "runs", "in", "the", "park", "<eos>"]  # teacher-forced on the tiny models


def numpy(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


# the literal second route ------------------------------------------------------------------------


def literal_layers(tr: Translator, sentence: str, output: list) -> dict:
    """Every block's value-zeroing matrix, one plain forward per zeroed vector: {kind: (L, Tq, K)} numpy."""
    model = tr.model
    _, ids, _ = tr.source_ids(sentence)
    src = torch.tensor([ids])
    tgt = torch.tensor([[SOS_ID, *(tr.tgt_vocab.stoi[t] for t in output[:-1])]])

    def outputs(stack: str, layer: int, hook=None, pre_hook=None) -> np.ndarray:
        """Layer `layer` of `stack`'s output (Tq, D) in one forward with the given hooks (module, function)."""
        handles = []
        if hook:
            handles.append(hook[0].register_forward_hook(hook[1]))
        if pre_hook:
            handles.append(pre_hook[0].register_forward_pre_hook(pre_hook[1]))
        capture = {}
        with torch.no_grad():
            model(src, tgt, Extras(capture=capture))
        for h in handles:
            h.remove()
        return numpy(capture[stack][layer]["output"][0])

    def zero_key(j):
        def hook(module, args, out):
            out = out.clone()
            out[0, j] = 0.0  # key j's value vector, every head
            return out
        return hook

    def zero_residual(module, args):  # AddNorm(x, sublayer_out, extras): x -> 0
        return (torch.zeros_like(args[0]), *args[1:])

    def distance(new, real):  # 1 - cosine, row by row, clipped at 0
        cos = (new * real).sum(-1) / (np.linalg.norm(new, axis=-1) * np.linalg.norm(real, axis=-1))
        return np.maximum(0.0, 1.0 - cos)

    def normalise(C):
        return C / C.sum(-1, keepdims=True)

    S, T = src.size(1), tgt.size(1)
    out = {"enc": [], "dec": [], "cross": []}
    for l, layer in enumerate(model.encoder):
        real = outputs("encoder", l)
        C = np.stack([distance(outputs("encoder", l, (layer.self_attn.w_v, zero_key(j))), real) for j in range(S)], 1)
        out["enc"].append(normalise(C))
    for l, layer in enumerate(model.decoder):
        real = outputs("decoder", l)
        C = np.zeros((T, T))
        for j in range(T):
            d = distance(outputs("decoder", l, (layer.self_attn.w_v, zero_key(j))), real)
            C[j:, j] = d[j:]  # query i < j cannot see key j
        out["dec"].append(normalise(C))
        C = np.zeros((T, S + 1))
        for j in range(S):
            C[:, j] = distance(outputs("decoder", l, (layer.cross_attn.w_v, zero_key(j))), real)
        C[:, S] = distance(outputs("decoder", l, pre_hook=(layer.ln_cross, zero_residual)), real)
        out["cross"].append(normalise(C))
    return {kind: np.stack(blocks) for kind, blocks in out.items()}


@pytest.mark.parametrize("seed,block", [(3, "post-LN"), (5, "post-LN"), *((5, b) for b in BLOCKS if b != "post-LN")])
def test_value_zeroing_equals_one_forward_per_zeroed_value(seed, block):
    """Every family's block (tests/conftest.py BLOCKS): pre-LN, the value zeroed is that of LayerNorm(x_j) and
    the output compared the stream after the layer, as the literal route's whole-model forwards read them."""
    tr = seeded_translator(seed, **BLOCKS[block])
    r = value_zeroing(tr.capture(tr.force(SENTENCE, OUTPUT)), tr.model)
    literal = literal_layers(tr, SENTENCE, OUTPUT)
    for kind in ("enc", "dec", "cross"):
        np.testing.assert_allclose(r["layers"][kind], literal[kind], rtol=0, atol=1e-5, err_msg=kind)
    _, total = rollout(*(torch.from_numpy(literal[k]) for k in ("enc", "dec", "cross")))
    S = literal["enc"].shape[-1]
    np.testing.assert_allclose(r["source"], total[-1, :, :S].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(r["prefix"], total[-1, :, S:].numpy(), rtol=0, atol=1e-5)


# a known answer: one-hot attention ---------------------------------------------------------------


def attend_to_largest_first_coordinate(attn, scale: float = 1e3):
    """Every query of this block, in every head, scores key j as scale * hs * x_j[0] / sqrt(hs): the key whose
    input is largest in coordinate 0 gets all the weight (the others' weights underflow to exactly 0)."""
    with torch.no_grad():
        attn.w_q.weight.zero_()
        attn.w_q.bias.fill_(1.0)  # every query is (1, ..., 1)
        attn.w_k.weight.zero_()
        attn.w_k.weight[:, 0] = scale  # every key is scale * x_j[0] * (1, ..., 1)
        attn.w_k.bias.zero_()


def test_one_hot_attention_gives_a_one_hot_row():
    """Encoder layer 0 attends only to "hund", decoder layer 0's self-attention only to <sos> (their inputs are
    made largest in coordinate 0): zeroing any other value changes nothing, so each row is one-hot there."""
    torch.manual_seed(3)
    model = Transformer(tiny_config()).eval()
    src_vocab, tgt_vocab = Vocab(GERMAN), Vocab(ENGLISH)
    with torch.no_grad():
        model.src_embed.tok.weight[src_vocab.stoi["hund"], 0] = 20.0
        model.tgt_embed.tok.weight[SOS_ID, 0] = 20.0
    attend_to_largest_first_coordinate(model.encoder[0].self_attn)
    attend_to_largest_first_coordinate(model.decoder[0].self_attn)
    tr = Translator(model, src_vocab, tgt_vocab)
    inside = tr.inside(SENTENCE, OUTPUT)
    hund = inside.src_tokens.index("hund")
    enc_weights, dec_weights = inside.sublayers["enc"]["weights"][0], inside.sublayers["dec"]["weights"][0]
    assert (enc_weights[..., hund] == 1).all() and (dec_weights[..., 0] == 1).all()  # the construction holds

    layers = value_zeroing(tr.capture(tr.force(SENTENCE, OUTPUT)), tr.model)["layers"]
    S, T = len(inside.src_tokens), len(OUTPUT)
    np.testing.assert_allclose(layers["enc"][0], np.eye(S)[[hund] * S], rtol=0, atol=1e-9)
    np.testing.assert_allclose(layers["dec"][0], np.eye(T)[[0] * T], rtol=0, atol=1e-9)
    # the other blocks' attention is spread: their rows are not one-hot
    assert (layers["enc"][1].max(-1) < 0.99).all()


# invariants --------------------------------------------------------------------------------------


def check_invariants(tr: Translator, sentence: str, output=None):
    r = value_zeroing(tr.capture(tr.force(sentence, output)), tr.model)
    layers = r["layers"]
    L_enc, S, _ = layers["enc"].shape
    L_dec, T, _ = layers["dec"].shape
    assert layers["enc"].shape == (tr.cfg.n_enc_layers, S, S) and L_dec == tr.cfg.n_dec_layers
    assert layers["cross"].shape == (L_dec, T, S + 1)
    assert r["source"].shape == (T, S) and r["prefix"].shape == (T, T)
    assert S == len(tr.source_ids(sentence)[0]) and (output is None or T == len(output))
    for kind, block in layers.items():
        assert block.dtype == np.float64 and (block >= 0).all(), kind
        np.testing.assert_allclose(block.sum(-1), 1.0, rtol=0, atol=1e-9, err_msg=kind)
    assert (np.triu(layers["dec"], 1) == 0).all()  # a masked future key scores exactly 0
    assert (r["source"] >= 0).all() and (r["prefix"] >= 0).all()
    np.testing.assert_allclose(r["source"].sum(-1) + r["prefix"].sum(-1), 1.0, rtol=0, atol=1e-9)
    assert (np.triu(r["prefix"], 1) == 0).all()
    # the shared model is left as it was: no hook stays behind
    for layer in (*tr.model.encoder, *tr.model.decoder):
        assert not layer.self_attn.w_v._forward_hooks
        assert not getattr(layer, "cross_attn", layer.self_attn).w_v._forward_hooks
    return r


@pytest.mark.parametrize("sentence", SENTENCES)
def test_value_zeroing_keeps_its_invariants(sentence):
    tr = seeded_translator()
    check_invariants(tr, sentence, OUTPUT)
    check_invariants(tr, sentence)  # the greedy translation
    check_invariants(seeded_translator(3, **BLOCKS["pre-LN, std LayerNorm"]), sentence)


def test_the_zeroing_hook_leaves_other_threads_alone():
    """While one thread zeroes values, the same layer run in another thread (another session on the shared model)
    gives its usual output, and the zeroing thread's own run is zeroed: row b at key b."""
    tr = seeded_translator()
    layer = tr.model.encoder[0]
    x = torch.randn(3, 3, 16)
    with torch.no_grad():
        before = layer(x, None)[0]
        inside, outside = threading.Event(), threading.Event()
        seen = {}

        def other():
            inside.wait()
            seen["other"] = layer(x, None)[0]
            outside.set()

        thread = threading.Thread(target=other)
        thread.start()
        with values_zeroed(layer.self_attn):
            inside.set()
            outside.wait()
            zeroed = layer(x, None)[0]
        thread.join()
        assert torch.equal(seen["other"], before)
        v = layer.self_attn.w_v(x).clone()
        v[[0, 1, 2], [0, 1, 2]] = 0.0  # what the hook should leave: key b's value gone in row b
        assert not torch.allclose(zeroed, before)
        assert torch.equal(layer(x, None)[0], before)  # and no hook stays behind
        hooked = layer.self_attn.w_v.register_forward_hook(lambda m, a, o: v)
        try:
            assert torch.allclose(zeroed, layer(x, None)[0], rtol=0, atol=1e-6)
        finally:
            hooked.remove()
