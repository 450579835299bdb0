"""Attributions (model/attribute.py): known answers, invariants, and literal second routes for Captum's numbers."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from conftest import assert_error_line, seeded_translator
from model import inspect
from model.attribute import METHODS, Attributor, attribute, baseline, step_targets
from model.extras import Extras
from model.vocab import UNK_ID

SENTENCE = "Ein Hund läuft im Park."  # in the tiny vocabularies of conftest
OUTPUT = ["a", "dog", "runs", "in", "the", "park", ".", "<eos>"]


class Additive(nn.Module):
    """A model whose logits are sums of embedding terms: logit_v(t) = sum_i e_src(x_i) . A_v + sum_{j<=t}
    e_tgt(y_j) . B_v. A contrastive target logit_y - logit_foil is then linear in the embeddings, so every method
    has a closed form: score(i) = e_i . (A_y - A_foil) (B for the prefix). The <unk> rows are zero."""

    def __init__(self, n_src, n_tgt, d=6, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.src_embed, self.tgt_embed = SimpleNamespace(tok=nn.Embedding(n_src, d)), SimpleNamespace(
            tok=nn.Embedding(n_tgt, d))
        self.tok_src, self.tok_tgt = self.src_embed.tok, self.tgt_embed.tok  # registered as submodules
        with torch.no_grad():
            self.tok_src.weight[UNK_ID] = 0
            self.tok_tgt.weight[UNK_ID] = 0
        self.A, self.B = nn.Parameter(torch.randn(d, n_tgt)), nn.Parameter(torch.randn(d, n_tgt))

    def forward(self, src, tgt, extras=Extras()):
        s = (self.tok_src(src) @ self.A).sum(1, keepdim=True)  # (B, 1, V)
        t = (self.tok_tgt(tgt) @ self.B).cumsum(1)  # (B, T, V): positions j <= t
        return SimpleNamespace(logits=s + t)


@pytest.fixture
def additive():
    tr = seeded_translator()
    model = Additive(len(tr.src_vocab), len(tr.tgt_vocab))
    model.cfg = tr.model.cfg  # the specials' ids, which the baselines and the removals read
    tr.model = model
    return tr


def test_on_an_additive_model_every_method_gives_the_closed_form(additive):
    foil = "park"
    a = Attributor(additive, additive.force(SENTENCE, OUTPUT))
    m, stoi = additive.model, additive.tgt_vocab.stoi
    e_src, e_tgt = m.tok_src(a.src[0]).detach(), m.tok_tgt(a.tgt[0]).detach()  # (S, d), (T, d)
    found = {k: attribute(additive, additive.force(SENTENCE, OUTPUT), k, contrast=foil)
             for k in ("input_x_gradient", "integrated_gradients", "leave_one_out", "contrastive")}
    special_src = np.isin(a.src[0].numpy(), [2, 3])
    for t, word in enumerate(OUTPUT):
        w_src = (m.A[:, stoi[word]] - m.A[:, stoi[foil]]).detach()
        w_tgt = (m.B[:, stoi[word]] - m.B[:, stoi[foil]]).detach()
        known_src = (e_src @ w_src).numpy()
        known_tgt = np.where(np.arange(len(OUTPUT)) <= t, (e_tgt @ w_tgt).numpy(), 0.0)
        for name in ("input_x_gradient", "leave_one_out", "contrastive"):
            assert np.allclose(found[name].source[t], known_src, atol=1e-5), (name, t)
            assert np.allclose(found[name].prefix[t], known_tgt, atol=1e-5), (name, t)
        # the baseline keeps <sos> and <eos>: integrated gradients give them exactly 0, and the rest the same
        ig = found["integrated_gradients"]
        assert np.allclose(ig.source[t], np.where(special_src, 0, known_src), atol=1e-5)
        assert ig.source[t][special_src].tolist() == [0.0, 0.0] and ig.prefix[t][0] == 0.0
        assert np.allclose(ig.prefix[t][1:], known_tgt[1:], atol=1e-5)
        assert ig.completeness_gap[t] < 1e-5  # linear: the integral is exact


@pytest.fixture(scope="module")
def shipped(translator):
    return translator


@pytest.mark.parametrize("method", ["gradient", "input_x_gradient", "integrated_gradients", "contrastive"])
def test_prefix_tokens_after_the_step_score_exactly_0(shipped, method):
    """Step t cannot see decoder inputs after t (the causal mask): their gradient is exactly 0, not small."""
    a = attribute(shipped, shipped.force("Zwei Hunde spielen im Schnee."), method)
    T = len(a.output_tokens)
    assert a.source.shape == (T, len(a.src_tokens)) and a.prefix.shape == (T, T)
    assert (np.triu(a.prefix, 1) == 0).all()
    assert np.isfinite(a.source).all() and np.isfinite(a.prefix).all()


def test_integrated_gradients_give_exactly_0_where_the_baseline_is_the_input(shipped):
    """<sos>, <eos> and a word the model does not know (already <unk>) are their own baseline."""
    a = attribute(shipped, shipped.force("Ein Qwxzy rennt durch den Schnee."), "integrated_gradients")
    unknown = [i for i, t in enumerate(a.src_tokens) if t in ("<sos>", "<eos>", "qwxzy")]
    assert len(unknown) == 3 and (a.source[:, unknown] == 0).all() and (a.prefix[:, 0] == 0).all()


def test_the_completeness_gap_shrinks_with_the_steps_and_is_under_1_percent_by_default(shipped):
    a = Attributor(shipped, shipped.force("Zwei Hunde spielen im Schnee."))
    rel = {}
    for n in (16, 64, 256):
        src, pre, fx, fb, gap = a.integrated_gradients(n, steps=[1, 2, 4])
        rel[n] = gap / np.abs(fx - fb)
        # the gap is Captum's, and it is what the scores say: sum of scores - (F - F')
        assert np.allclose(gap, np.abs(src.sum(1) + pre.sum(1) - (fx - fb)), atol=1e-4)
    assert rel[16].mean() > rel[64].mean() > rel[256].mean()
    assert rel[64].max() < 0.01


def test_a_foil_equal_to_the_word_scores_0(shipped):
    r = shipped.translate("Zwei Hunde spielen im Schnee.")
    word = r.steps[1].token
    a = attribute(shipped, shipped.force(r.source), "contrastive", contrast=word)
    same = [t for t, tok in enumerate(a.output_tokens) if tok == word]
    assert same and all(a.f[t] == 0 and (a.source[t] == 0).all() and (a.prefix[t] == 0).all() for t in same)
    assert a.foils == [word] * len(a.output_tokens)
    runner = attribute(shipped, shipped.force(r.source), "contrastive")  # the default foil: each step's runner-up
    assert runner.foils == [s.runner_up[0] for s in r.steps]


@pytest.mark.parametrize("foil", ["<pad>", "<sos>", "zebra"])
def test_the_command_refuses_a_foil_the_model_never_writes_as_the_page_does(foil, call, tiny_checkpoint):
    """<pad> and <sos> are no step's word (the page's foil picker leaves them out), and "zebra" is no word of the
    tiny English vocabulary: one rule, model/attribute.py's foil_id, for the command and the page."""
    argv = ["attribute", "--checkpoint", tiny_checkpoint, "--method", "contrastive", SENTENCE]
    status, out, err = call(inspect.main, *argv, "--contrast", foil)
    assert_error_line(status, err, f"the foil {foil!r} is not a word the model writes")
    assert out == ""
    status, out, err = call(inspect.main, *argv, "--contrast", "dog")
    assert status == 0 and json.loads(out)["steps"][0]["foil"] == "dog", err


def test_leave_one_out_equals_separate_model_runs(shipped):
    a = Attributor(shipped, shipped.force("Zwei Hunde spielen im Schnee."))
    source, prefix = a.leave_one_out()
    rows = torch.arange(a.T)

    def f(src, tgt):
        with torch.no_grad():
            return step_targets(shipped.model, src, tgt, rows, a.out)

    full = f(a.src.expand(a.T, -1), a.tgt.expand(a.T, -1))
    for i in range(a.src.size(1)):
        src = a.src.clone()
        src[0, i] = UNK_ID
        assert np.allclose(source[:, i], (full - f(src.expand(a.T, -1), a.tgt.expand(a.T, -1))).numpy(), atol=1e-5)
    for j in range(a.T):
        tgt = a.tgt.clone()
        tgt[0, j] = UNK_ID
        drop = (full - f(a.src.expand(a.T, -1), tgt.expand(a.T, -1))).numpy()
        assert np.allclose(prefix[j:, j], drop[j:], atol=1e-5) and (prefix[:j, j] == 0).all()


def embedding_hook(layer, position, delta):
    """Add `delta` to one position of an embedding layer's output (a hand-made route into e_i)."""
    return layer.register_forward_hook(lambda m, i, out: out + torch.nn.functional.pad(
        delta[None, None], (0, 0, position, out.size(1) - position - 1)))


def test_gradients_equal_finite_differences_and_integrated_gradients_a_riemann_sum():
    """Literal second routes on a tiny model in float64: central differences of F for the gradient, and a
    midpoint Riemann sum of 2,000 points along the straight path for integrated gradients, against Captum's own
    midpoint rule at 2,000 points; Captum's numbers equal them to 1e-4 (Gauss-Legendre at 64 points is within 1%
    of completeness on the shipped model, not on this random one: another test)."""
    tr = seeded_translator(5)
    tr.model = tr.model.double()
    a = Attributor(tr, tr.force(SENTENCE, OUTPUT))
    model, t = tr.model, 3
    rows = torch.tensor([t])

    def F():
        with torch.no_grad():
            return float(step_targets(model, a.src, a.tgt, rows, a.out[rows]))

    g_src, _ = a.gradients(multiply=False)
    eps = 1e-6
    for i in (1, 2):
        for k in range(4):
            d = torch.zeros(tr.cfg.d_model, dtype=torch.float64)
            d[k] = eps
            h = embedding_hook(model.src_embed.tok, i, d)
            up = F()
            h.remove()
            h = embedding_hook(model.src_embed.tok, i, -d)
            down = F()
            h.remove()
            assert abs((up - down) / (2 * eps) - g_src[t, i, k]) < 1e-4
    ig_src, ig_pre, *_ = a.integrated_gradients(2000, steps=[t], rule="riemann_middle")
    e = model.src_embed.tok(a.src).detach()
    e0 = model.src_embed.tok(baseline(a.src, model.cfg)).detach()
    p = model.tgt_embed.tok(a.tgt).detach()
    p0 = model.tgt_embed.tok(baseline(a.tgt, model.cfg)).detach()
    total_src, total_pre, n = torch.zeros_like(e), torch.zeros_like(p), 2000
    for alpha in (np.arange(n) + 0.5) / n:
        xs = (e0 + alpha * (e - e0)).requires_grad_(True)
        xp = (p0 + alpha * (p - p0)).requires_grad_(True)
        h1 = model.src_embed.tok.register_forward_hook(lambda m, i, o: xs)
        h2 = model.tgt_embed.tok.register_forward_hook(lambda m, i, o: xp)
        f = step_targets(model, a.src, a.tgt, rows, a.out[rows]).sum()
        h1.remove()
        h2.remove()
        gs, gp = torch.autograd.grad(f, (xs, xp))
        total_src += gs / n
        total_pre += gp / n
    riemann_src = ((e - e0) * total_src).sum(-1)[0].numpy()
    riemann_pre = ((p - p0) * total_pre).sum(-1)[0].numpy()
    assert np.allclose(ig_src[0], riemann_src, atol=1e-4) and np.allclose(ig_pre[0], riemann_pre, atol=1e-4)


def test_the_result_is_frozen_and_every_method_is_offered(shipped):
    a = shipped.attribute("Ein Hund läuft.", "input_x_gradient")
    with pytest.raises(ValueError):
        a.source[0, 0] = 1.0
    assert set(METHODS) >= {"gradient", "input_x_gradient", "integrated_gradients", "leave_one_out",
                            "value_zeroing", "contrastive"}
    j = a.to_json()
    assert [s["token"] for s in j["steps"]] == a.output_tokens
    assert all(len(s["prefix"]) == t + 1 and len(s["source"]) == len(a.src_tokens) for t, s in enumerate(j["steps"]))
    ref = shipped.attribute("Ein Hund läuft.", "gradient", reference="A dog is running.")
    assert ref.output_tokens == ["a", "dog", "is", "running", ".", "<eos>"]


def test_another_threads_forward_passes_reach_neither_the_gradients_nor_their_hooks(shipped):
    """The page's model is shared: while one session's gradients run (captum hooks the embedding layers), another
    translates. Before the hooked copy (model.attribute.hooked_model) those passes reached captum's hooks and the
    call failed ("The differentiated Tensor at index 1 appears to not have been used in the graph"); now every call
    gives what it gives alone."""
    import threading

    sentence = "Zwei Hunde spielen im Schnee."
    alone = attribute(shipped, shipped.force(sentence), "input_x_gradient")
    stop = threading.Event()

    def translate_meanwhile():
        while not stop.is_set():
            shipped.translate("Ein Mann fährt mit seinem Fahrrad über eine alte Brücke in der Stadt.")

    others = [threading.Thread(target=translate_meanwhile) for _ in range(2)]
    for t in others:
        t.start()
    try:
        together = [attribute(shipped, shipped.force(sentence), "input_x_gradient") for _ in range(4)]
    finally:
        stop.set()
        for t in others:
            t.join()
    for a in together:
        np.testing.assert_allclose(a.source, alone.source, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.prefix, alone.prefix, rtol=1e-5, atol=1e-6)


def test_a_long_sentences_passes_are_bounded_and_give_the_same_numbers(monkeypatch):
    """Gradients, integrated gradients and leave-one-out split a long sentence's rows into bounded passes (a 98-token
    sentence took 3.3 GB in one pass of integrated gradients): with small bounds, so that this tiny model's sentence
    is split too, every number equals the one pass's (float64, 1e-12), and the bounds did split."""
    import model.attribute as A

    tr = seeded_translator(5)
    tr.model = tr.model.double()
    a = Attributor(tr, tr.force(SENTENCE, OUTPUT))
    tokens = a.src.size(1) + a.tgt.size(1)
    whole = (a.gradients(False), a.gradients(True), a.integrated_gradients(n_steps=16, steps=[0, 2, 3]),
             a.leave_one_out())
    monkeypatch.setattr(A, "IG_BUDGET", 5 * tokens ** 2)  # 5 rows a pass
    monkeypatch.setattr(A, "LOGIT_BYTES", 3 * 4 * a.T * len(tr.tgt_vocab.itos))  # 3 rows a pass
    assert A.ig_batches(16, 4, tokens) == (1, 5)
    calls, real = [], tr.model.forward
    monkeypatch.setattr(tr.model, "forward", lambda *args, **kw: calls.append(len(args[0])) or real(*args, **kw))
    split = (a.gradients(False), a.gradients(True), a.integrated_gradients(n_steps=16, steps=[0, 2, 3]),
             a.leave_one_out())
    assert max(calls) <= 5 and len(calls) > 10, calls
    for w, s in zip(whole, split):
        for x, y in zip(w, s):
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-12)
