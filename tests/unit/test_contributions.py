"""Does attention explain the translation? Norm-based attention, ALTI+ contributions and DecoderLens.

Second routes: the inside-a-head numbers (HeadTrace) for the norms; a literal implementation of ALTI's
per-block formulas (loops over queries, keys and heads in numpy, every vector recomputed from the model's
weights) and of the rollout (a product of augmented matrices) for the contributions; models built so that
the answer is known (cross-attention or self-attention silenced, a decoder that sees only <sos>); a model cut
after encoder layer k for DecoderLens; the command line against the library.
"""

import gzip
import json

import numpy as np
import pytest
import torch

from conftest import BLOCKS, ENGLISH, GERMAN, assert_error_line, seeded_translator, tiny_config
from model import inspect as inspect_cli
from model.contributions import attention_sublayers, decompose
from model.extras import KINDS
from model.source_share import main as source_share_main
from model.transformer import Transformer
from model.translator import Translator
from model.vocab import Vocab

SENTENCE = "Ein Hund läuft im Park."
SENTENCES = [SENTENCE, "Zwei Männer laufen.", "ein hund c d e f g h i j k ."]
OUTPUT = ["a", "dog", "runs", "in", "the", "park", "<eos>"]  # teacher-forced on the tiny models


def with_translator(model) -> Translator:
    return Translator(model.eval(), Vocab(GERMAN), Vocab(ENGLISH))


def edited(seed: int = 3, **config):
    """A tiny model (seeded as seeded_translator) to edit before wrapping it in a Translator."""
    torch.manual_seed(seed)
    return Transformer(tiny_config(**config)).eval()


def numpy(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


# norm-based attention (Kobayashi et al., 2020) ---------------------------------------------------


def attention_module(model, kind: str, layer: int):
    if kind == "enc":
        return model.encoder[layer].self_attn
    return model.decoder[layer].self_attn if kind == "dec" else model.decoder[layer].cross_attn


def head_columns(attn, head: int) -> np.ndarray:
    """W_O^h as a (hs, D) map: the hs input columns of w_o that read head h, transposed."""
    hs = attn.head_size
    return numpy(attn.w_o.weight)[:, head * hs:(head + 1) * hs].T


def test_weighted_norms_equal_the_inside_of_every_head():
    tr = seeded_translator()
    inside = tr.inside(SENTENCE, OUTPUT)
    norms = tr.weighted_norms(SENTENCE, OUTPUT)
    assert norms.tgt_tokens == inside.tgt_tokens and norms.src_tokens == inside.src_tokens
    for kind in KINDS:
        assert norms.norms[kind].shape == inside.sublayers[kind]["weights"].shape
        L, H, Tq, _ = norms.norms[kind].shape
        for layer in range(L):
            attn = attention_module(tr.model, kind, layer)
            for head in range(H):
                for query in range(Tq):
                    h = inside.head(kind, layer, head, query)
                    want = np.linalg.norm(h.weighted_v.astype(np.float64) @ head_columns(attn, head), axis=-1)
                    np.testing.assert_allclose(norms.norms[kind][layer, head, query], want, rtol=1e-5, atol=1e-6)


def test_values_of_one_norm_give_norms_proportional_to_the_weights():
    """W_V = 0: every key's value is b_V, so ||f^h(x_j)|| is one number per head and the norms are the
    weights times it (and b_V is in: without it they would all be 0)."""
    model = edited()
    for layer in (*model.encoder, *model.decoder):
        for attn in ([layer.self_attn] if not hasattr(layer, "cross_attn") else [layer.self_attn, layer.cross_attn]):
            torch.nn.init.zeros_(attn.w_v.weight)
            torch.nn.init.normal_(attn.w_v.bias)
    tr = with_translator(model)
    norms, inside = tr.weighted_norms(SENTENCE, OUTPUT).norms, tr.inside(SENTENCE, OUTPUT)
    for kind in KINDS:
        weights = inside.sublayers[kind]["weights"].astype(np.float64)  # (L, H, Tq, Tk)
        ratio = norms[kind] / np.where(weights > 0, weights, np.nan)
        per_head = np.nanmean(ratio, axis=(2, 3), keepdims=True)  # (L, H, 1, 1)
        assert (per_head > 0).all()
        np.testing.assert_allclose(norms[kind], weights * per_head, rtol=1e-5, atol=1e-7)


# ALTI+: the literal second route ----------------------------------------------------------------


def literal_block(sub: dict, attn, ln, cross: bool) -> np.ndarray:
    """ALTI's contributions of one attention block, written out: a loop over queries i, keys j and heads h. A
    pre-LN block's output is the residual sum itself; a post-LN block's is LN(sum), with the LayerNorm's variant."""
    x, kv, w = numpy(sub["stream"][0]), numpy(sub["kv"][0]), numpy(sub["weights"][0])  # (Tq, D), (Tk, D), (H, Tq, Tk)
    W_V, b_V, W_O, b_O = numpy(attn.w_v.weight), numpy(attn.w_v.bias), numpy(attn.w_o.weight), numpy(attn.w_o.bias)
    gamma, beta, eps = numpy(ln.weight), numpy(ln.bias), ln.eps
    H, Tq, Tk = w.shape
    hs = attn.head_size
    K = Tk + 1 if cross else Tk
    out = np.zeros((Tq, K))
    for i in range(Tq):
        z = []  # the vector each key adds to query i's residual sum, before the LayerNorm
        for j in range(Tk):
            zj = np.zeros_like(x[i])
            for h in range(H):
                rows = slice(h * hs, (h + 1) * hs)
                v = kv[j] @ W_V[rows].T + b_V[rows]  # (hs,) value of key j in head h, bias included
                zj += w[h, i, j] * (v @ W_O[:, rows].T)  # (D,) through head h's columns of W_O
            if not cross and j == i:
                zj += x[i]  # the residual
            z.append(zj)
        if cross:
            z.append(x[i].copy())
        r = sum(z) + b_O  # the residual sum (post-LN: what the LayerNorm reads)
        sigma = np.sqrt(r.var() + eps) if ln.variant == "standard" else r.std(ddof=1) + eps
        y = r if ln.pre else (r - r.mean()) / sigma * gamma + beta  # the block's output
        for j, zj in enumerate(z):
            t = zj if ln.pre else (zj - zj.mean()) / sigma * gamma
            out[i, j] = max(0.0, np.abs(y).sum() - np.abs(y - t).sum())
        out[i] /= out[i].sum()
    return out


def literal_rollout(enc: list, dec: list, cross: list) -> np.ndarray:
    """The last decoder layer's [source | prefix] rows as a product of augmented (S + T) matrices
    A^l = [[I, 0], [C_cross[:, :S] R, C_cross[:, S] * C_self]] over (source tokens, decoder positions)."""
    S, T = enc[0].shape[0], dec[0].shape[0]
    R = np.eye(S)
    for C in enc:
        R = C @ R
    P = np.eye(S + T)
    for C_self, C_cross in zip(dec, cross):
        A = np.eye(S + T)
        A[S:, :S] = C_cross[:, :S] @ R
        A[S:, S:] = C_cross[:, S:] * C_self
        P = A @ P
    return P[S:]


def check_against_literal(tr: Translator, sentence: str, output=None):
    c = tr.contributions(sentence, output)
    capture = tr.capture(tr.force(sentence, c.output_tokens))
    literal = {kind: [literal_block(*block, kind == "cross") for block in blocks]
               for kind, blocks in attention_sublayers(capture, tr.model).items()}
    for kind in KINDS:
        np.testing.assert_allclose(c.layers[kind], np.stack(literal[kind]), rtol=0, atol=1e-5, err_msg=kind)
    total = literal_rollout(literal["enc"], literal["dec"], literal["cross"])
    S = len(c.src_tokens)
    np.testing.assert_allclose(c.source, total[:, :S], rtol=0, atol=1e-5)
    np.testing.assert_allclose(c.prefix, total[:, S:], rtol=0, atol=1e-5)


@pytest.mark.parametrize("seed", [3, 5])
def test_contributions_equal_the_literal_formulas(seed):
    check_against_literal(seeded_translator(seed), SENTENCE, OUTPUT)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b != "post-LN"])
def test_contributions_equal_the_literal_formulas_in_every_familys_block(block):
    check_against_literal(seeded_translator(5, **BLOCKS[block]), SENTENCE, OUTPUT)


@pytest.mark.parametrize("block", list(BLOCKS))
def test_the_decomposition_adds_up_to_each_blocks_output(block):
    """post-LN: the vectors and the bias terms add up to LN(residual), the block's output; pre-LN: to the residual
    sum itself, which is the block's output there (what the next block reads)."""
    tr = seeded_translator(3, **BLOCKS[block])
    capture = tr.capture(tr.force(SENTENCE, OUTPUT))
    for kind, blocks in attention_sublayers(capture, tr.model).items():
        for sub, attn, ln in blocks:
            T, y = decompose(sub, attn, ln, kind == "cross")
            output = numpy(sub["residual" if ln.pre else "normed"][0])
            np.testing.assert_allclose(numpy(y), output, rtol=0, atol=1e-5)
            b_o = numpy(attn.w_o.bias)
            if ln.pre:
                bias = b_o
            else:
                r = numpy(sub["residual"][0])
                sigma = (np.sqrt(r.var(-1) + ln.eps) if ln.variant == "standard" else r.std(-1, ddof=1) + ln.eps)
                bias = (b_o - b_o.mean()) / sigma[:, None] * numpy(ln.weight) + numpy(ln.bias)
            np.testing.assert_allclose(numpy(T.sum(1)) + bias, output, rtol=0, atol=1e-5)


# ALTI+: invariants and known answers -------------------------------------------------------------


def check_invariants(c):
    S, T = len(c.src_tokens), len(c.tgt_tokens)
    assert c.source.shape == (T, S) and c.prefix.shape == (T, T) and c.source_share.shape == (T,)
    assert (c.source >= 0).all() and (c.prefix >= 0).all()
    np.testing.assert_allclose(c.source.sum(-1) + c.prefix.sum(-1), 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c.source.sum(-1), c.source_share, rtol=0, atol=1e-12)
    assert (np.triu(c.prefix, 1) == 0).all()  # a step cannot draw on a later position
    for kind, block in c.layers.items():
        assert (block >= 0).all()
        np.testing.assert_allclose(block.sum(-1), 1.0, rtol=0, atol=1e-9, err_msg=kind)
    np.testing.assert_array_equal(c.rollout[-1], np.concatenate([c.source, c.prefix], -1))
    out = c.to_json()
    assert list(out) == ["src_tokens", "tgt_tokens", "steps"] and len(out["steps"]) == T
    for t, step in enumerate(out["steps"]):
        assert list(step) == ["token", "source_share", "source", "prefix"] and step["token"] == c.output_tokens[t]
        assert len(step["source"]) == S and len(step["prefix"]) == t + 1
        assert abs(sum(step["source"]) + sum(step["prefix"]) - 1) < 1e-4
        assert abs(sum(step["source"]) - step["source_share"]) < 1e-4
        assert min(step["source"] + step["prefix"]) >= 0


@pytest.mark.parametrize("sentence", SENTENCES)
def test_contributions_keep_their_invariants(sentence):
    tr = seeded_translator()
    c = tr.contributions(sentence)  # the greedy output
    assert c.output_tokens == [s.token for s in tr.translate(sentence).steps]
    check_invariants(c)
    with pytest.raises(ValueError):
        c.source[0, 0] = 1.0  # results are shared: read-only


def silenced(sublayer: str):
    """Contributions of a tiny model whose decoder `sublayer` ("self_attn" or "cross_attn") outputs nothing in
    any layer: W_O = 0 and b_O = 0, so only the residual passes."""
    model = edited()
    for layer in model.decoder:
        torch.nn.init.zeros_(getattr(layer, sublayer).w_o.weight)
        torch.nn.init.zeros_(getattr(layer, sublayer).w_o.bias)
    c = with_translator(model).contributions(SENTENCE, OUTPUT)
    check_invariants(c)
    return c


def test_silenced_cross_attention_leaves_no_source_contribution():
    """The source cannot reach the output, and ALTI+ says 0."""
    c = silenced("cross_attn")
    assert (c.source == 0).all() and (c.source_share == 0).all()
    assert (c.layers["cross"][..., :-1] == 0).all() and (c.layers["cross"][..., -1] == 1).all()


def test_silenced_self_attention_keeps_each_step_on_its_own_token():
    """A decoder position only carries its own token."""
    c = silenced("self_attn")
    np.testing.assert_array_equal(c.prefix, np.diag(np.diag(c.prefix)))
    assert (np.diag(c.prefix) > 0).all()
    np.testing.assert_array_equal(c.layers["dec"], np.broadcast_to(np.eye(len(OUTPUT)), c.layers["dec"].shape))


def test_a_decoder_that_sees_only_sos_draws_on_sos_and_the_step_itself():
    """One decoder layer whose self-attention puts all its weight on <sos>: a huge first position in feature 0
    (learned positions), keys reading only that feature, constant queries. Each step's prefix contribution
    then lies on <sos> and on its own input token (the residual), nowhere else."""
    model = edited(n_dec_layers=1)
    with torch.no_grad():
        model.tgt_embed.tok.weight[:, 0] = 0.0
        model.tgt_embed.pos.weight[:, 0] = 0.0
        model.tgt_embed.pos.weight[0, 0] = 1000.0
        attn = model.decoder[0].self_attn
        attn.w_k.weight.zero_()
        attn.w_k.weight[:, 0] = 1.0
        attn.w_k.bias.zero_()
        attn.w_q.weight.zero_()
        attn.w_q.bias.fill_(1.0)
    tr = with_translator(model)
    weights = tr.inside(SENTENCE, OUTPUT).sublayers["dec"]["weights"][0]  # (H, T, T)
    assert (weights[..., 0] == 1).all()  # the construction works: every head, every step, only <sos>
    c = tr.contributions(SENTENCE, OUTPUT)
    check_invariants(c)
    T = len(OUTPUT)
    allowed = np.eye(T, dtype=bool)
    allowed[:, 0] = True
    assert (c.prefix[~allowed] == 0).all()
    assert (c.prefix[:, 0] > 0).all()  # a step's own token may be clipped to 0 (max(0, ...)); <sos> is not here


# DecoderLens -------------------------------------------------------------------------------------


def cut_after(model: Transformer, k: int) -> Transformer:
    """The same model with only its first k encoder layers: a second route to DecoderLens layer k."""
    cut = Transformer(tiny_config(n_enc_layers=k)).eval()
    state = {name: p for name, p in model.state_dict().items()
             if not name.startswith("encoder.") or int(name.split(".")[1]) < k}
    cut.load_state_dict(state)
    return cut


@pytest.mark.parametrize("sentence", SENTENCES)
def test_decoder_lens_decodes_from_each_encoder_layer(sentence):
    tr = seeded_translator()
    lens = tr.decoder_lens(sentence)
    assert len(lens.layers) == tr.cfg.n_enc_layers and lens.src_tokens == tr.source_ids(sentence)[0]
    assert lens.layers[-1] == tr.translate(sentence).output_tokens
    for k in range(1, tr.cfg.n_enc_layers + 1):
        cut = with_translator(cut_after(tr.model, k)).translate(sentence)
        assert lens.layers[k - 1] == cut.output_tokens, k
        assert lens.finished[k - 1] == (cut.steps[-1].token == "<eos>")
    out = lens.to_json()
    assert [layer["encoder_layer"] for layer in out["layers"]] == list(range(1, tr.cfg.n_enc_layers + 1))
    assert all(layer["text"] == " ".join(layer["tokens"]) for layer in out["layers"])


# the command line, in process (tiny checkpoint) --------------------------------------------------


def test_inspect_cli_prints_the_librarys_contributions_and_lens(tiny_checkpoint, call):
    tr = Translator.load(tiny_checkpoint, "cpu")
    status, out, _ = call(inspect_cli.main, "contributions", "--checkpoint", tiny_checkpoint, "--device", "cpu",
                          SENTENCE)
    assert status == 0 and json.loads(out) == json.loads(json.dumps(tr.contributions(SENTENCE).to_json()))
    status, out, _ = call(inspect_cli.main, "decoderlens", "--checkpoint", tiny_checkpoint, "--device", "cpu",
                          SENTENCE)
    assert status == 0 and json.loads(out) == tr.decoder_lens(SENTENCE).to_json()
    for command in ("contributions", "decoderlens"):
        status, out, err = call(inspect_cli.main, command, "--checkpoint", tiny_checkpoint, "   ")
        assert_error_line(status, err, "the sentence is empty")
        assert out == ""


def test_corpus_cli_writes_the_source_share_distribution(tiny_checkpoint, tmp_path, call):
    src = tmp_path / "src.de.gz"
    src.write_bytes(gzip.compress("\n".join([*SENTENCES, "", SENTENCE]).encode() + b"\n"))
    out = tmp_path / "share.json"
    status, printed, _ = call(source_share_main, "--src", src, "--checkpoint", tiny_checkpoint, "--device", "cpu",
                              "--out", out, "--no-progress")
    assert status == 0
    summary = json.loads(printed)
    assert summary["n"] == 4 and summary["skipped"] == 1
    got = json.loads(out.read_text())
    tr = Translator.load(tiny_checkpoint, "cpu")
    shares = [tr.contributions(s).source_share for s in [*SENTENCES, SENTENCE]]
    per_step = np.concatenate(shares)
    assert got["per_step"]["n"] == per_step.size == got["data"]["steps"]
    assert got["per_step"]["mean"] == round(float(per_step.mean()), 4)
    assert got["per_step"]["quantiles"]["0.5"] == round(float(np.median(per_step)), 4)
    assert got["low_share_threshold"]["per_step"] == round(float(np.quantile(per_step, 0.05)), 4)
    assert got["per_sentence"]["n"] == 4 and sum(got["per_step"]["histogram"]["counts"]) == per_step.size
    status, printed, err = call(source_share_main, "--src", src, "--checkpoint", tiny_checkpoint, "--out",
                                tmp_path / "no" / "x.json")
    assert_error_line(status, err, "does not exist")
    assert printed == ""


# the shipped models ------------------------------------------------------------------------------
