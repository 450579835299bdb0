"""Activation patching (model/patch.py, model/extras.py's patch sites): known answers on the real model and on a tiny
model built so that one head alone carries the swapped word, attribution patching against exact patching, and the
contrast pairs file checked against both shipped models."""

import json

import numpy as np
import pytest
import torch

from conftest import ROOT, run
from model import patch as P
from model.contrast import CATEGORIES, read_pairs
from model.errors import InputError
from model.extras import Extras

CLEAN, CORRUPT = "Ein Mann spielt Gitarre auf der Straße.", "Eine Frau spielt Gitarre auf der Straße."
PAIRS = ROOT / "assets/contrast/pairs.jsonl"


@pytest.fixture(scope="module")
def pair(translator):
    return P.setup(translator, CLEAN, CORRUPT)


def logits(model, s, base: str, patch: dict | None):
    with torch.no_grad():
        return model(s.src[base], s.tgt, Extras(need_weights=False, patch=patch)).logits


def replace_all(value):
    return lambda v: value.expand_as(v)


def test_the_pair_is_found_at_its_first_differing_step(pair):
    assert pair.word_tokens == ("man", "woman") and pair.step == 1
    assert pair.tgt_tokens == ["<sos>", "a"] and pair.ld["clean"] > 0 > pair.ld["corrupt"]


def test_patching_nothing_gives_0_and_an_unpatched_run_is_the_captured_one(translator, pair):
    ld = P.run_rows(translator.model, pair, "corrupt", [{}], [1])
    assert P.effect(ld, pair)[0] == 0.0
    no_edit = {site: (lambda v: v) for site in (("encoder", 0, "output"), ("decoder", 1, "cross", "heads"))}
    assert torch.equal(logits(translator.model, pair, "corrupt", no_edit),
                       logits(translator.model, pair, "corrupt", {}))


def test_the_whole_last_encoder_layer_and_the_decoder_inputs_give_the_clean_logits_exactly(translator, pair):
    L = translator.cfg.n_enc_layers
    clean = pair.acts["clean"]
    patched = logits(translator.model, pair, "corrupt", {("encoder", L - 1, "output"): replace_all(
        clean["encoder", L - 1, "output"]), ("decoder", "embed"): replace_all(clean["decoder", "embed"])})
    assert torch.equal(patched, logits(translator.model, pair, "clean", {}))
    assert P.effect(P.logit_difference(patched, pair.step, pair.words).numpy(), pair)[0] == pytest.approx(1.0)


def test_an_embedding_where_both_sentences_have_the_same_token_changes_nothing(translator, pair):
    same = [p for p in range(pair.src["clean"].size(1)) if int(pair.src["clean"][0, p]) == int(pair.src["corrupt"][0, p])]
    found = P.patch_sites(translator, pair, "denoising")
    for p in same:
        assert found[P.Site.resid("encoder", -1, p)] == 0.0
    assert max(abs(found[P.Site.resid("encoder", -1, p)]) for p in (1, 2)) > 0.05  # "Ein"/"Eine", "Mann"/"Frau"


def test_a_decoder_patch_at_a_position_changes_no_step_before_it(translator):
    s = P.setup(translator, "Zwei Hunde rennen durch den Schnee.", "Zwei Katzen rennen durch den Schnee.")
    clean = P.setup(translator, "Ein Mann in einem roten Hemd sitzt auf einer Bank.",
                    "Ein Mann in einem blauen Hemd sitzt auf einer Bank.")  # a longer prefix: step 4
    for setup_ in (s, clean):
        T = setup_.tgt.size(1)
        base = logits(translator.model, setup_, "corrupt", {})
        for position in range(T):
            where = torch.zeros(1, T, dtype=torch.bool)
            where[0, position] = True
            value = torch.randn_like(setup_.acts["clean"]["decoder", 0, "output"])
            edit = {("decoder", 0, "output"): lambda v, where=where, value=value: torch.where(where[..., None], value, v)}
            patched = logits(translator.model, setup_, "corrupt", edit)
            assert torch.equal(patched[:, :position], base[:, :position])
            assert not torch.equal(patched[:, position], base[:, position])


def test_attribution_patching_of_edges_agrees_with_exact_patching(translator, pair):
    estimated = P.attribution_patching(translator, pair)
    L, H, T, S = estimated.shape
    assert (L, H, T, S) == (translator.cfg.n_dec_layers, translator.cfg.n_heads, pair.tgt.size(1),
                            pair.src["clean"].size(1))
    edges = [(layer, h, i, j) for layer in range(L) for h in range(H) for i in range(T) for j in range(S)]
    exact = P.exact_edges(translator, pair, edges)
    flat = estimated.reshape(-1)
    assert np.corrcoef(flat, exact)[0, 1] > 0.95
    top = np.argsort(-np.abs(flat))[:10]
    assert set(top) & set(np.argsort(-np.abs(exact))[:10])  # the strongest edges are found by both
    # an edge patched exactly with the corrupted run's own values changes nothing (but rounding: they were captured
    # in a batch of one)
    none = P.run_rows(translator.model, pair, "corrupt", [P.edge_edits(edges[:5], pair.acts["corrupt"], "cpu")], [5])
    np.testing.assert_allclose(none, pair.ld["corrupt"], atol=1e-5)


def test_one_pair_every_site_both_directions(translator):
    p = P.patch(translator, CLEAN, CORRUPT)
    cfg = translator.cfg
    S, T = len(p.src_tokens["clean"]), p.step + 1
    for d in P.DIRECTIONS:
        assert p.encoder[d].shape == (cfg.n_enc_layers + 1, S) and p.decoder[d].shape == (cfg.n_dec_layers + 1, T)
        assert {k: v.shape for k, v in p.heads[d].items()} == {k: (3, 8) for k in ("enc", "dec", "cross")}
    # the decoder's last residual at the step decides the logits: patching it is the whole effect
    assert p.decoder["denoising"][-1, p.step] == pytest.approx(1.0) and p.decoder["noising"][-1, p.step] == \
        pytest.approx(0.0, abs=1e-6)
    assert p.swapped == [1, 2] and len(p.edges) == P.EDGES
    assert all(abs(e.estimate - e.exact) < 0.1 for e in p.edges)
    assert p.summary().startswith("“mann” instead of “frau” becomes “man” instead of “woman” at step 2")


def test_the_command_prints_one_pair_and_refuses_unequal_lengths():
    r = run("model.patch", "--clean", CLEAN, "--corrupt", CORRUPT, "--edges", "3")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["words"] == ["man", "woman"] and len(out["edges"]) == 3 and out["metric"].startswith("(LD_patched")
    r = run("model.patch", "--clean", CLEAN, "--corrupt", "Eine alte Frau spielt Gitarre auf der Straße.")
    assert r.returncode == 2 and r.stderr.startswith("error: the two sentences must have the same number of tokens")


def test_sentences_that_differ_past_the_cut_are_refused_saying_so(translator):
    """110 words, the last one changed: the model reads the first max_positions - 2 tokens of each, the same."""
    words = ["Ein", "Hund", "läuft", "im", "Park", "und"] * 18 + ["ein", "Mann"]  # 110
    keep = translator.cfg.max_positions - 2
    assert len(words) == 110 > keep
    with pytest.raises(InputError, match=f"differ only past the model's {keep}-token cut, so the model sees the "
                                         "same input"):
        P.setup(translator, " ".join(words), " ".join([*words[:-1], "Frau"]))


def test_the_pairs_file_says_what_it_holds(translator):
    pairs = read_pairs(PAIRS)
    assert len(pairs) >= 300 and {p["category"] for p in pairs} == set(CATEGORIES)
    for p in pairs:
        c, x = translator.source_ids(p["clean"])[0], translator.source_ids(p["corrupt"])[0]
        assert len(c) == len(x) and p["positions"] == [i for i, (a, b) in enumerate(zip(c, x)) if a != b]
        assert p["de"][0] in p["clean"] and p["de"][1] in p["corrupt"]
        assert p["clean"].replace(p["de"][0], p["de"][1], 1) == p["corrupt"] or \
            p["clean"].count(p["de"][0]) == 1


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", ["checkpoints", "checkpoints/sinusoidal"])
def test_each_models_words_are_as_the_pairs_file_states(checkpoint, shipped_models):
    tr = shipped_models(ROOT / checkpoint)
    name = "checkpoints" if checkpoint == "checkpoints" else "sinusoidal"
    pairs = read_pairs(PAIRS)
    outs = tr.translate_batch([s for p in pairs for s in (p["clean"], p["corrupt"])], with_maps=False)
    for i, p in enumerate(pairs):
        a, b = [s.token for s in outs[2 * i].steps], [s.token for s in outs[2 * i + 1].steps]
        t = p["models"][name]["step"]
        assert a[:t] == b[:t] and (a[t], b[t]) == (p["models"][name]["clean"], p["models"][name]["corrupt"]), p
