"""Transcoders (model/transcoders.py): the forward against a literal loop, the patch sites against hand-made runs,
training against a planted feature, the card's measures against literal counts."""

import copy
import json
import os

import numpy as np
import pytest
import torch

from model import transcoders as T
from model.errors import InputError
from model.extras import Extras

from conftest import BLOCKS, random_batch, seeded_translator


def small(D=16, width=24, k=3, skip=True, seed=0) -> T.Transcoder:
    """A transcoder with random weights (every parameter drawn, the skip and biases too)."""
    g = torch.Generator().manual_seed(seed)
    tc = T.Transcoder(D, width, k, skip)
    with torch.no_grad():
        for p in tc.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        tc.unit_rows()
    return tc.eval()


def literal(tc: T.Transcoder, x: torch.Tensor) -> tuple:
    """a(x) and T(x) for one vector, by loops over the features and the output's numbers."""
    D, width = tc.W_enc.shape
    pre = [float(tc.b_enc[f]) + sum(float(x[i]) * float(tc.W_enc[i, f]) for i in range(D)) for f in range(width)]
    relu = [max(0.0, p) for p in pre]
    keep = sorted(range(width), key=lambda f: -relu[f])[:tc.k] if tc.k else range(width)
    a = [relu[f] if f in keep else 0.0 for f in range(width)]
    y = []
    for j in range(D):
        v = float(tc.b_dec[j]) + sum(a[f] * float(tc.W_dec[f, j]) for f in range(width))
        if tc.W_skip is not None:
            v += sum(float(x[i]) * float(tc.W_skip[i, j]) for i in range(D))
        y.append(v)
    return np.array(a), np.array(y)


@pytest.mark.parametrize("k,skip", [(3, True), (3, False), (0, True)])
def test_forward_equals_a_literal_loop(k, skip):
    tc = small(k=k, skip=skip)
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    y, a = tc(x)
    for row in range(5):
        la, ly = literal(tc, x[row])
        np.testing.assert_allclose(a[row].detach().numpy(), la, atol=1e-5)
        np.testing.assert_allclose(y[row].detach().numpy(), ly, atol=1e-4)
        assert (a[row] > 0).sum() <= (k or 24)
    assert torch.allclose(tc.W_dec.norm(dim=1), torch.ones(24))  # unit rows: an activation is a length


def dictionaries(model, width=24, k=3) -> dict:
    return {b: small(model.cfg.d_model, width, k, seed=i) for i, b in enumerate(T.blocks(model.cfg))}


@pytest.mark.parametrize("block", list(BLOCKS))
def test_replaced_with_the_error_added_back_is_the_model(block):
    """Each block's output replaced by T(x) + (FFN(x) - T(x)), with FFN(x) recomputed from the x the site hands over:
    the model's logits (float rounding); without the error term they differ."""
    tr = seeded_translator(**BLOCKS[block])
    model = tr.model
    src, tgt = random_batch(model.cfg)
    dicts = dictionaries(model)
    ffn = {b: (model.encoder if b.startswith("enc") else model.decoder)[int(b[-1])].ffn for b in dicts}
    with_error = {T.site(b): (lambda out, x, b=b: dicts[b](x)[0] + (ffn[b](x) - dicts[b](x)[0])) for b in dicts}
    with torch.no_grad():
        plain = model(src, tgt, Extras(need_weights=False)).logits
        back = model(src, tgt, Extras(patch=with_error, need_weights=False)).logits
        replaced = model(src, tgt, Extras(patch=T.replace_patch(dicts), need_weights=False)).logits
    torch.testing.assert_close(back, plain, atol=1e-5, rtol=1e-5)
    assert (replaced - plain).abs().max() > 1e-2


def test_switching_a_feature_off_equals_a_model_whose_block_was_edited_by_hand():
    """The patch against a copy of the model whose block module itself writes FFN(x) - a_f(x) d_f (and scaled: plus
    (s - 1) a_f d_f); the shared model is not changed."""
    tr = seeded_translator()
    model = tr.model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    src, tgt = random_batch(model.cfg)
    dicts = dictionaries(model)
    for block in ("enc.1", "dec.0"):
        tc = dicts[block]
        with torch.no_grad():
            x = torch.randn(64, model.cfg.d_model)
            f = int((tc.encode(x) > 0).float().sum(0).argmax())  # a feature that fires
        for scale in (0.0, 2.5):
            hand = copy.deepcopy(model)
            stack = hand.encoder if block.startswith("enc") else hand.decoder
            inner = stack[int(block[-1])].ffn

            class Edited(torch.nn.Module):
                def forward(self, x, extras=Extras(), inner=inner):
                    return inner(x, extras) + (scale - 1) * tc.encode(x)[..., f:f + 1] * tc.W_dec[f]

            stack[int(block[-1])].ffn = Edited()
            patch = T.edit_patch(dicts, T.parse_edits(f"{block}.{f}={scale}", dicts))
            with torch.no_grad():
                want = hand(src, tgt, Extras(need_weights=False)).logits
                got = model(src, tgt, Extras(patch=patch, need_weights=False)).logits
                plain = model(src, tgt, Extras(need_weights=False)).logits
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
            assert (got - plain).abs().max() > 1e-4
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])


def test_switched_off_translation_follows_the_patch():
    """translate_batch with a patch decodes with it at every step: its first step's probabilities are those of the
    patched forward pass."""
    tr = seeded_translator()
    dicts = dictionaries(tr.model)
    sentence = "Ein Hund läuft im Park."
    edits = {("dec.1", f): 0.0 for f in range(24)}
    r = tr.translate_batch([sentence], patch=T.edit_patch(dicts, edits))[0]
    plain = tr.translate(sentence)
    src = torch.tensor([tr.source_ids(sentence)[1]])
    tgt = torch.tensor([[tr.tgt_vocab.sos_id]])
    with torch.no_grad():
        lp = tr.model(src, tgt, Extras(patch=T.edit_patch(dicts, edits))).logits[0, 0].log_softmax(-1)
    assert r.steps[0].prob == pytest.approx(float(lp.max().exp()), abs=1e-5)
    assert [s.prob for s in r.steps] != [s.prob for s in plain.steps]


def test_training_recovers_a_planted_feature():
    """A block that fires on one token only (token 7 of 20 writes a fixed vector; every row a linear map the skip
    can take): the trained transcoder has one feature that is token 7's."""
    g = torch.Generator().manual_seed(0)
    D, V, N = 16, 20, 6000
    table = torch.randn(V, D, generator=g)
    tokens = torch.randint(0, V, (N,), generator=g)
    X = table[tokens] + 0.05 * torch.randn(N, D, generator=g)
    W = torch.randn(D, D, generator=g) * 0.3
    planted = torch.randn(D, generator=g) * 3
    Y = X @ W + (tokens == 7).float()[:, None] * planted
    recipe = T.Recipe(width=32, k=4, epochs=30, batch=512, lr=3e-3, dead_after=5000)
    tc = T.train_block(X.half(), Y.half(), recipe)
    with torch.no_grad():
        a = tc.encode(X.half().float())
    on = tokens == 7
    # a feature that is token 7's: weaker on every other row than on any of token 7's, and with 90% of its activation
    # there (TopK keeps k features on every row, so the others' small activations are never all zero)
    separation = a[on].min(0).values - a[~on].max(0).values
    share = a[on].sum(0) / a.sum(0).clamp_min(1e-9)
    best = int(separation.argmax())
    assert separation[best] > 0 and share[best] >= 0.9


def test_training_resumes_where_it_stopped(tmp_path):
    """A run stopped after its second epoch of four, started again, ends where an unbroken run ends (same batches,
    same optimiser state, same learning-rate schedule)."""
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(300, 8, generator=g).half(), torch.randn(300, 8, generator=g).half()
    recipe = T.Recipe(width=16, k=2, epochs=4, batch=64, storage="float16")
    whole = T.train_block(X, Y, recipe)

    class Stopped(Exception):
        pass

    def stop_after_two(message):
        if message.startswith("epoch 2/"):
            raise Stopped

    with pytest.raises(Stopped):
        T.train_block(X, Y, recipe, tmp_path, log=stop_after_two)
    assert torch.load(tmp_path / "state.pt", weights_only=True)["epoch"] == 2
    resumed = T.train_block(X, Y, T.Recipe(width=16, k=2, epochs=4, batch=64, storage="int8"), tmp_path)
    for (name, p), q in zip(whole.named_parameters(), resumed.parameters()):  # the storage does not train
        torch.testing.assert_close(p, q, msg=name)


def test_int8_storage_is_a_scale_per_feature_and_rounded_numbers():
    """pack's int8 against a literal loop: per feature (W_enc's column, W_dec's row; W_skip's output column) the
    scale is the largest |number| over 127, held in float16, and each number is stored as round(w / scale); read
    back, no number moves by more than half its scale. float16 storage reads back as float16 rounding."""
    dicts = {"enc.0": small(D=6, width=10, k=3), "dec.1": small(D=6, width=10, k=3, seed=1)}
    state = T.pack(dicts, "int8")
    back = T.stored(dicts, "int8")
    for b, tc in dicts.items():
        for name, rows_are_features in (("W_enc", False), ("W_dec", True), ("W_skip", False)):
            w = getattr(tc, name).detach().double()
            if rows_are_features:
                w = w.T  # one feature a column from here on
            q, scale = state[f"{b}.{name}"], state[f"{b}.{name}.scale"]
            assert q.dtype == torch.int8 and scale.dtype == torch.float16 and scale.shape == (w.shape[1],)
            r = getattr(back[b], name).detach().double()
            r = r.T if rows_are_features else r
            qq = q.T if rows_are_features else q
            for f in range(w.shape[1]):
                s = float(torch.tensor(max(abs(float(w[i, f])) for i in range(w.shape[0])) / 127).half())
                assert float(scale[f]) == s, (b, name, f)
                for i in range(w.shape[0]):
                    assert int(qq[i, f]) == max(-127, min(127, round(float(w[i, f]) / s))), (b, name, i, f)
                    assert abs(float(r[i, f]) - float(w[i, f])) <= s / 2 * 1.01, (b, name, i, f)
        for name in ("b_enc", "b_dec"):
            assert state[f"{b}.{name}"].dtype == torch.float16
            assert torch.equal(getattr(back[b], name), getattr(tc, name).detach().half().float())
    half = T.stored(dicts, "float16")
    for b, tc in dicts.items():
        for (name, p), q in zip(tc.named_parameters(), half[b].parameters()):
            assert torch.equal(q, p.detach().half().float()), name
    with pytest.raises(InputError, match="storage"):
        T.pack(dicts, "int4")


def test_block_measures_equal_literal_counts():
    tc = small(width=24, k=3)
    g = torch.Generator().manual_seed(4)
    X, Y = torch.randn(200, 16, generator=g), torch.randn(200, 16, generator=g)
    m = T.block_measures(tc, X.half(), Y.half(), batch=64)
    X, Y = X.half().float(), Y.half().float()
    with torch.no_grad():
        y_hat, a = tc(X)
    active = (a > 0).numpy()
    dead = sum(1 for f in range(24) if not any(active[i, f] for i in range(200))) / 24
    dense = sum(1 for f in range(24) if sum(active[:, f]) / 200 > T.DENSE) / 24
    assert m["dead"] == pytest.approx(dead) and m["dense"] == pytest.approx(dense)
    assert m["l0"] == pytest.approx(active.sum() / 200)
    fvu = float(((Y - y_hat) ** 2).sum() / ((Y - Y.mean(0)) ** 2).sum())
    assert m["fvu"] == pytest.approx(fvu, rel=1e-5)


def run_card(drop: float, dead: list, recovered: float, width: int) -> dict:
    """A full run's card as transcoders_runs.json keeps it: BLEU 40 before, its drop, one dead share per block."""
    return {"recipe": {"width": width, "k": 16, "skip": True}, "test2016_bleu": 40.0,
            "test2016_bleu_all_replaced": 40.0 - drop, "loss_recovered_all": recovered,
            "measures": {f"enc.{i}": {"dead": d} for i, d in enumerate(dead)}}


def test_the_chosen_run_is_the_best_of_those_that_meet_both_gates():
    """Known answers: the runs that miss a gate (BLEU down 1.01; one block 20.1% dead) lose to a worse run that meets
    both, whatever their loss recovered; both gates are inclusive. Where no run meets both, the run within the BLEU
    gate whose worst block has the fewest dead features; none within it is an error."""
    over_bleu, over_dead = run_card(1.01, [0.0, 0.1], 0.99, 4096), run_card(0.5, [0.201, 0.1], 0.98, 2048)
    edge, better = run_card(1.0, [0.2, 0.2], 0.90, 512), run_card(0.9, [0.1, 0.19], 0.95, 1024)
    assert [T.meets_gates(r) for r in (over_bleu, over_dead, edge, better)] == [False, False, True, True]
    assert T.choose_run([over_bleu, over_dead, edge, better]) == {"width": 1024, "k": 16, "skip": True}
    assert T.choose_run([over_bleu, edge, over_dead]) == {"width": 512, "k": 16, "skip": True}
    deader = run_card(0.2, [0.1, 0.38], 0.99, 256)
    assert T.choose_run([over_bleu, deader, over_dead]) == {"width": 2048, "k": 16, "skip": True}
    with pytest.raises(ValueError):
        T.choose_run([over_bleu])


@pytest.mark.parametrize("folder", ["", "sinusoidal"])
def test_each_shipped_card_is_the_configuration_chosen_from_its_models_full_runs(folder):
    """checkpoints/[sinusoidal/]transcoders_runs.json: the gates read by hand on every run; the shipped card is one
    of the runs, meets both gates where a run does, and has the chosen configuration, which is T.CHOICE (the
    command's default)."""
    from conftest import CHECKPOINT

    runs = json.loads((CHECKPOINT / folder / "transcoders_runs.json").read_text())["runs"]
    card = json.loads((CHECKPOINT / folder / "transcoders.json").read_text())
    for r in runs:
        drop = r["test2016_bleu"] - r["test2016_bleu_all_replaced"]
        assert T.meets_gates(r) == (drop <= 1.0 and max(m["dead"] for m in r["measures"].values()) <= 0.2), r["run"]
    assert T.choose_run(runs) == T.CHOICE == {k: card["recipe"][k] for k in T.CHOICE}
    assert T.meets_gates(card) == any(T.meets_gates(r) for r in runs)
    assert [r["run"] for r in runs if r["recipe"] == card["recipe"] and r["measures"] == card["measures"]
            and r["test2016_bleu_all_replaced"] == card["test2016_bleu_all_replaced"]], "the card is not a run"


def test_names_and_edits_are_checked():
    dicts = {b: small(seed=i) for i, b in enumerate(("enc.0", "dec.1"))}
    assert T.parse_feature("enc.0.23", dicts) == ("enc.0", 23)
    assert T.parse_edits("enc.0.3, dec.1.5=2.5", dicts) == {("enc.0", 3): 0.0, ("dec.1", 5): 2.5}
    for bad in ("enc.0.24", "enc.3.1", "enc.0", "cross.0.1", "enc.0.x", "enc.0.1=nan", "enc.0.1=11", "enc.0.1=a"):
        with pytest.raises(InputError):
            T.parse_edits(bad, dicts)
    assert T.site("dec.1") == ("decoder", 1, "ffn") and T.block_label("enc.2") == "encoder layer 3"


@pytest.mark.parametrize("block", list(BLOCKS))
def test_the_logit_splits_into_what_each_part_wrote(block):
    """direct_logits: the parts sum to the written words' real logits (each post-LN norm linearised at its own
    sigma, a final norm included); a block read as features, dense part and error gives the same total, and its
    features' per-feature shares sum to its features' part."""
    from model.contributions import direct_logits

    tr = seeded_translator(**BLOCKS[block])
    forced = tr.force("Ein Hund läuft im Park.", ["a", "dog", "runs", "<eos>"])
    src, tgt, out = tr.inputs(forced)
    with torch.no_grad():
        logits = tr.model(src, tgt).logits[0]
    real = logits.gather(-1, out[:, None]).squeeze(-1).double().numpy()
    d = direct_logits(tr.capture(forced), tr.model, forced.output_ids)
    np.testing.assert_allclose(d["total"], real, atol=1e-4)
    assert "L2 ffn" in d["parts"] and "embedding" in d["parts"]
    dicts = dictionaries(tr.model)
    bl = T.block_logits(tr, dicts, forced)
    col = d["parts"].index
    for l in range(tr.cfg.n_dec_layers):
        whole = d["logits"][:, col(f"L{l + 1} ffn")]
        np.testing.assert_allclose(bl.features[:, l] + bl.dense[:, l] + bl.error[:, l], whole, atol=1e-4)
    np.testing.assert_allclose(bl.logit, real, atol=1e-4)
    for t, row in enumerate(bl.top):
        for l, found in enumerate(row):
            assert len(found) <= 3 and all(abs(found[i][1]) >= abs(found[i + 1][1]) for i in range(len(found) - 1))


def test_per_feature_shares_are_the_features_part_taken_one_at_a_time():
    """A feature's share of the logit equals the features' part of a run in which it is the only feature."""
    from model.contributions import direct_logits

    tr = seeded_translator()
    forced = tr.force("Zwei Hunde laufen im Schnee.", ["a", "dog", "runs", "<eos>"])
    dicts = dictionaries(tr.model, k=3)
    capture = tr.capture(forced)
    bl = T.block_logits(tr, dicts, forced)
    t, l = 1, 0
    x = capture["decoder"][l]["ffn"]["input"][0]
    with torch.no_grad():
        a = dicts[f"dec.{l}"].encode(x)
    assert len(a[t].nonzero()) == 3
    total = 0.0
    for f in a[t].nonzero().squeeze(1).tolist():
        piece = torch.zeros(len(forced.output_ids), tr.cfg.d_model)
        piece[t] = a[t, f] * dicts[f"dec.{l}"].W_dec[f]
        one = direct_logits(capture, tr.model, forced.output_ids, split={l: {"features": piece}})
        share = one["logits"][t, one["parts"].index(f"L{l + 1} ffn features")]
        shown = dict(bl.top[t][l])
        if f in shown:
            assert shown[f] == pytest.approx(share, abs=1e-5)
        total += share
    assert total == pytest.approx(bl.features[t, l], abs=1e-4)


def test_the_index_holds_each_features_strongest_rows_counts_and_effects(tmp_path):
    """build_index on a tiny model and corpus, against a literal pass over the same rows: each feature's density,
    peak, histogram and top rows (strongest first, the largest activations of all), its label, and its effect
    (decoder: the generator's reading of its direction; encoder: log p with it switched off, run by hand)."""
    from conftest import TRAINING_PAIRS, write_multi30k

    tr = seeded_translator()
    data = write_multi30k(tmp_path / "data", TRAINING_PAIRS[:6])
    dicts = dictionaries(tr.model, width=24, k=3)
    arrays = T.build_index(tr, dicts, data, progress=False, log=lambda m: None)
    src, tgt = T.training_pairs(tr, data)
    acts = T.collect(tr.model, src, tgt)
    for b in ("enc.1", "dec.0"):
        with torch.no_grad():
            a = dicts[b].encode(acts.X[b].float()).numpy()
        where = acts.where[b[:3]].numpy()
        N = len(a)
        np.testing.assert_allclose(arrays[f"{b}.density"], (a > 0).sum(0) / N)
        np.testing.assert_allclose(arrays[f"{b}.peak"], a.max(0), rtol=1e-6)
        assert (arrays[f"{b}.hist"].sum(1) == (a > 0).sum(0)).all()
        for f in range(24):
            order = sorted(range(N), key=lambda i: -a[i, f])[:T.TOP]
            expect = [a[i, f] for i in order if a[i, f] > 0]
            got = arrays[f"{b}.top_val"][f][:len(expect)]
            np.testing.assert_allclose(got, expect, rtol=1e-6)
            for s, p, v in zip(arrays[f"{b}.top_sent"][f], arrays[f"{b}.top_pos"][f], got):
                row = [i for i in range(N) if tuple(where[i]) == (s, p)]
                assert len(row) == 1 and a[row[0], f] == pytest.approx(v, rel=1e-6)
    eff = T.direction_effect(tr.model, "dec.0", dicts["dec.0"])
    want = tr.model.generator.weight @ (dicts["dec.0"].W_dec[5] * tr.model.decoder[0].ln_ffn.weight)
    torch.testing.assert_close(eff[5], want.detach())
    assert list(arrays["dec.0.up_ids"][5]) == want.topk(T.EFFECT_WORDS).indices.tolist()
    # one encoder feature switched off on one of its sentences, by hand (a copy whose block subtracts it)
    f = int(np.argmax(arrays["enc.1.density"]))
    s = int(arrays["enc.1.off_sent"][f][0])
    hand = copy.deepcopy(tr.model)
    inner, tc = hand.encoder[1].ffn, dicts["enc.1"]

    class Off(torch.nn.Module):
        def forward(self, x, extras=Extras()):
            return inner(x, extras) - tc.encode(x)[..., f:f + 1] * tc.W_dec[f]

    hand.encoder[1].ffn = Off()
    x, y = torch.tensor([src[s]]), torch.tensor([tgt[s]])
    with torch.no_grad():
        lp = [m(x, y[:, :-1]).logits.log_softmax(-1)[0].gather(-1, y[0, 1:, None]).sum() for m in (tr.model, hand)]
    assert arrays["enc.1.off_delta"][f][0] == pytest.approx(float(lp[1] - lp[0]), abs=1e-4)
    labels = json.loads(arrays["labels"].tobytes())
    assert len(labels["enc.0"]) == 24 and all(isinstance(x, str) for x in labels["dec.1"])


def test_a_feature_page_reads_the_index(tmp_path):
    """feature_page: the contexts' tokens are the training sentences' own (a decoder context: the prefix up to the
    position, and the word written next), strongest first; the histogram's edges run from 0 to the peak."""
    from conftest import TRAINING_PAIRS, write_multi30k

    tr = seeded_translator()
    data = write_multi30k(tmp_path / "data", TRAINING_PAIRS[:6])
    dicts = dictionaries(tr.model, width=24, k=3)
    arrays = T.build_index(tr, dicts, data, progress=False, log=lambda m: None)
    np.savez_compressed(tmp_path / T.INDEX, **arrays)
    index = T.read_index(tmp_path)
    src, tgt = T.training_pairs(tr, data)
    f = int(np.argmax(arrays["dec.1.density"]))
    page = T.feature_page(tr, index, f"dec.1.{f}", dicts)
    assert page["feature"] == f"dec.1.{f}" and page["where"] == "decoder layer 2"
    assert page["histogram"]["edges"][0] == 0 and page["histogram"]["edges"][-1] == pytest.approx(page["peak"])
    for c in page["contexts"]:
        ids = tgt[c["sentence"]]
        assert c["tokens"] == [tr.tgt_vocab.itos[i] for i in ids[:c["position"] + 1]]
        assert c["next"] == tr.tgt_vocab.itos[ids[c["position"] + 1]]
    assert [c["activation"] for c in page["contexts"]] == sorted((c["activation"] for c in page["contexts"]),
                                                                  reverse=True)
    assert len(page["effect"]["promotes"]) == T.EFFECT_WORDS
    with pytest.raises(InputError):
        T.read_index(tmp_path / "nowhere")
    # two models' indexes stay loaded side by side; a file written again is read again
    other = tmp_path / "other"
    other.mkdir()
    np.savez_compressed(other / T.INDEX, **{**arrays, "src_ids": arrays["src_ids"][:1]})
    assert len(T.read_index(other)["src_ids"]) == 1 and T.read_index(tmp_path) is index
    os.utime(tmp_path / T.INDEX, ns=(1, 1))
    again = T.read_index(tmp_path)
    assert again is not index and (again["src_ids"] == index["src_ids"]).all() and T.read_index(other) is not None
    assert sum(k[0] == str(tmp_path / T.INDEX) for k in T._INDEX_CACHE) == 1  # the old reading is let go


@pytest.mark.parametrize("storage", T.STORAGES)
def test_train_writes_the_dictionaries_and_a_card_that_reads_them_back(tmp_path, monkeypatch, storage):
    """`train` end to end on a tiny model and corpus, either storage: the saved dictionaries load back as stored,
    and the card's BLEU with all blocks replaced is the BLEU of a translation run with the dictionaries read back
    from the file (the card measures what ships)."""
    import gzip
    import shutil

    from conftest import TRAINING_PAIRS, write_multi30k
    from model.checkpoint import save_checkpoint

    tr = seeded_translator()
    data = write_multi30k(tmp_path / "data", TRAINING_PAIRS[:6])
    for lang in ("de", "en"):
        shutil.copy(data / f"val.{lang}.gz", data / f"test_2016_flickr.{lang}.gz")
    folder = tmp_path / "ckpt"
    save_checkpoint(tr.model, tr.src_vocab, tr.tgt_vocab, folder)
    monkeypatch.setattr(T, "work_folder", lambda f: tmp_path / "work")
    card = T.train(tr, folder, data, T.Recipe(width=24, k=3, epochs=2, batch=16, storage=storage), progress=False,
                   log=lambda m: None)
    dicts, read = T.load(folder)
    assert read["blocks"] == T.blocks(tr.cfg) and read["recipe"]["width"] == 24
    assert read["recipe"]["storage"] == storage
    from safetensors.torch import load_file

    assert load_file(folder / T.WEIGHTS)["enc.0.W_dec"].dtype == getattr(torch, storage)
    assert set(card["measures"]["enc.0"]) >= {"fvu", "l0", "dead", "dense", "loss_recovered"}
    src, ref = (gzip.decompress((data / f"test_2016_flickr.{x}.gz").read_bytes()).decode().splitlines()
                for x in ("de", "en"))
    assert card["test2016_bleu_all_replaced"] == pytest.approx(T.corpus_bleu(tr, src, ref, T.replace_patch(dicts)))
    assert card["test2016_bleu"] == pytest.approx(T.corpus_bleu(tr, src, ref))
    recipe = T.Recipe(width=24, k=3, epochs=2, batch=16, storage=storage)
    assert (tmp_path / "work" / "all" / T.recipe_key(recipe) / "dec.1" / "state.pt").is_file()


def test_each_recipe_trains_in_a_folder_of_its_own_and_a_storage_shares_it():
    """Two runs that train differently (here only AuxK's threshold) never share a state file (a later run wrote over a
    finished one when they did); two that differ only in how they are stored do, so one resumes the other."""
    base = T.Recipe(width=24, k=3, epochs=2, storage="float16")
    assert T.recipe_key(base) == T.recipe_key(T.Recipe(width=24, k=3, epochs=2, storage="int8"))
    keys = {T.recipe_key(r) for r in (base, T.Recipe(width=24, k=3, epochs=2, dead_after=50_000, storage="float16"),
                                      T.Recipe(width=24, k=3, epochs=3, storage="float16"))}
    assert len(keys) == 3 and all(len(k) == 12 and int(k, 16) >= 0 for k in keys)
