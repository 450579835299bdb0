"""Exports (model/export.py): each one read back by an independent route gives exactly what went in."""

import csv
import hashlib
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import ENGLISH, GERMAN, tiny_config
from model.checkpoint import save_checkpoint
from model.export import (bertviz_inputs, bertviz_npz, csv_cell, load_bertviz_npz, load_maps_npz, map_csv, maps_npz,
                          provenance, steps_csv, table_csv)
from model.transformer import Transformer
from model.translator import MAX_OUTPUT, Translator
from model.vocab import Vocab

SENTENCE = "Ein Hund läuft im Park."
HOSTILE = ["a,b", '"q"', "<script>alert(1)</script>", "x\ny", "r\r\nn", "NA", "nan", "", " lead", "1", "ä😀"]


@pytest.fixture
def tiny():
    torch.manual_seed(3)
    return Translator(Transformer(tiny_config()).eval(), Vocab(GERMAN), Vocab(ENGLISH))


@pytest.fixture
def tiny_result(tiny):
    return tiny.translate(SENTENCE, max_len=8)


# provenance ---------------------------------------------------------------------------------------
def test_checkpoint_id_names_the_folder_and_hashes_the_weights(tmp_path):
    torch.manual_seed(0)
    model = Transformer(tiny_config()).eval()
    assert Translator(model, Vocab(GERMAN), Vocab(ENGLISH)).checkpoint_id == {
        "name": "(in memory)", "path": None, "sha256": None}
    save_checkpoint(model, Vocab(GERMAN), Vocab(ENGLISH), tmp_path / "ckpt")
    expected = {"name": "ckpt", "path": "ckpt",  # outside the project: the folder name, no private path
                "sha256": hashlib.sha256((tmp_path / "ckpt" / "model.safetensors").read_bytes()).hexdigest()}
    assert Translator.load(tmp_path / "ckpt", "cpu").checkpoint_id == expected
    assert Translator.load(tmp_path / "ckpt" / "model.safetensors", "cpu").checkpoint_id == expected
    tr = Translator.load(tmp_path / "ckpt", "cpu")
    tr.checkpoint_id["sha256"] = "changed"  # a copy: the shared translator keeps its record
    assert tr.checkpoint_id == expected


def test_provenance_records_every_setting(tiny):
    prov = provenance(tiny, heads_off="enc.0.1,cross.1.*", force={3: "dog", 1: "a"}, beam=1, top_k=4, max_len=9)
    assert prov == {
        "checkpoint": {"name": "(in memory)", "path": None, "sha256": None},
        "heads_off": "enc.0.1,cross.1.*",
        "force": {"1": "a", "3": "dog"},
        "decoding": {"beam": 1, "greedy": True, "max_len": 9, "top_k": 4},
        "package": {"name": "transformer-explorer", "version": prov["package"]["version"], "torch": torch.__version__},
        "device": tiny.device_name,
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+", prov["package"]["version"])
    assert json.loads(json.dumps(prov)) == prov  # JSON-ready: string keys, plain values
    default = provenance(tiny, heads_off=None, beam=4)
    assert (default["heads_off"], default["force"]) == ("", {})
    assert default["decoding"] == {"beam": 4, "greedy": False, "max_len": MAX_OUTPUT, "top_k": 5}
    with pytest.raises(ValueError, match="beam width"):
        provenance(tiny, beam=0)


# CSV ----------------------------------------------------------------------------------------------
def test_map_csv_round_trips_exactly_with_hostile_tokens():
    queries, keys = HOSTILE[:5], ["a,b", *HOSTILE[5:], "a,b"]  # "a,b" twice: positions keep them apart
    w = np.random.default_rng(0).random((len(queries), len(keys))).astype(np.float32)
    w[0, 0], w[1, 1] = np.float32(1e-38), np.float32(1 / 3)
    text = map_csv(w, queries, keys)

    df = pd.read_csv(io.StringIO(text), dtype={"query_token": str, "key_token": str}, keep_default_na=False)
    assert list(df.columns) == ["query_pos", "query_token", "key_pos", "key_token", "weight"]
    assert len(df) == w.size
    back = np.full(w.shape, np.nan)
    back[df.query_pos, df.key_pos] = df.weight
    assert np.array_equal(back, w.astype(np.float64))  # repr: the float32 values, not rounded
    assert df.groupby("query_pos").query_token.first().tolist() == queries
    assert df.groupby("key_pos").key_token.first().tolist() == keys

    rows = list(csv.reader(io.StringIO(text, newline="")))  # the standard library's reader agrees
    assert len(rows) == 1 + w.size
    for q, qt, k, kt, weight in rows[1:]:
        assert (qt, kt) == (queries[int(q)], keys[int(k)]) and np.float32(weight) == w[int(q), int(k)]

    with pytest.raises(ValueError, match=r"\(5, 8\)"):
        map_csv(w.T, queries, keys)


def test_steps_csv_has_a_row_per_step(tiny, tiny_result):
    r = tiny_result
    k = len(r.steps[0].top)
    rows = list(csv.DictReader(io.StringIO(steps_csv(r), newline="")))
    assert list(rows[0]) == ["step", "token", "prob", "entropy", "runner_up", "runner_up_prob",
                             *(f"top{i}_{w}" for i in range(1, k + 1) for w in ("token", "prob"))]
    assert [int(row["step"]) for row in rows] == list(range(1, len(r.steps) + 1))  # 1-based, as on the page
    for row, s in zip(rows, r.steps, strict=True):
        assert row["token"] == s.token == row["top1_token"]  # greedy picks the most likely
        assert (float(row["prob"]), float(row["entropy"])) == (s.prob, s.entropy)
        assert (row["runner_up"], float(row["runner_up_prob"])) == s.runner_up
        assert [(row[f"top{i}_token"], float(row[f"top{i}_prob"])) for i in range(1, k + 1)] == list(s.top)
    df = pd.read_csv(io.StringIO(steps_csv(r)), keep_default_na=False, dtype={"token": str})
    assert df.prob.tolist() == [s.prob for s in r.steps]  # a second reader, the same numbers


# spreadsheet formulas ----------------------------------------------------------------------------
LEADS = ["=", "+", "-", "@", "\t", "\r"]  # what a spreadsheet runs as a formula (OWASP "CSV Injection")


def assert_no_formula(text: str):
    """Every cell of a CSV text, read back: none starts a formula, except a plain number ("-2")."""
    for row in csv.reader(io.StringIO(text, newline="")):
        for cell in row:
            assert not cell.startswith(tuple(LEADS)) or re.fullmatch(r"[+-]?[\d.]+(e[+-]?\d+)?", cell), repr(cell)


@pytest.mark.parametrize("lead", LEADS)
def test_a_token_that_starts_a_formula_is_written_as_quoted_text(lead):
    token = f"{lead}SUM(1+1)"
    text = map_csv(np.ones((1, 2), dtype=np.float32), ["a"], [token, "b"])
    assert f'"\'{token}"' in text  # a leading single quote, and the cell in double quotes
    assert_no_formula(text)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[2][3] == "b" and rows[1][3] == "'" + token  # the rest of the row is untouched


def test_numbers_stay_numbers_and_plain_text_stays_as_it_is():
    assert [csv_cell(v) for v in ("-2", "+1.5", "-1e-05", ".5", -0.25, 3, "a-b", "", "'")] == [
        "-2", "+1.5", "-1e-05", ".5", -0.25, 3, "a-b", "", "'"]
    assert [csv_cell(v) for v in ("-2+3", "-", "+", "@", "=1", "-inf", "-nan")] == [
        "'-2+3", "'-", "'+", "'@", "'=1", "'-inf", "'-nan"]


@pytest.mark.parametrize("lead", ["=", "+", "-", "@"])
def test_a_reference_whose_words_start_a_formula_writes_none(lead):
    """A reference typed on the page (or in a link) is teacher-forced; its tokens are the step CSV's rows."""
    english = [*ENGLISH[:-2], f"{lead}cmd", lead]
    torch.manual_seed(3)
    tr = Translator(Transformer(tiny_config()).eval(), Vocab(GERMAN), Vocab(english))
    ref = tr.score_reference(SENTENCE, f"{lead}cmd a {lead} dog")
    tokens = [s.token for s in ref.translation.steps]
    # spaCy splits a leading + or = off its word
    assert tokens[:4] == [f"{lead}cmd", "a", lead, "dog"] or tokens[:5] == [lead, "<unk>", "a", lead, "dog"]
    text = steps_csv(ref.translation)
    assert_no_formula(text)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [row["token"] for row in rows] == [f"'{t}" if t.startswith(lead) else t for t in tokens]


def test_page_tables_go_through_the_same_rules():
    df = pd.DataFrame({"rank": [1, 2], "tokens": ["=cmd|' /C calc'!A0", "a dog"], "score": [-0.5, -1.25]})
    text = table_csv(df)
    assert_no_formula(text)
    back = pd.read_csv(io.StringIO(text), keep_default_na=False)
    assert back.tokens.tolist() == ["'=cmd|' /C calc'!A0", "a dog"] and back.score.tolist() == [-0.5, -1.25]


# npz ----------------------------------------------------------------------------------------------
def test_maps_npz_round_trips_exactly(tiny, tiny_result, tmp_path):
    r = tiny_result
    prov = provenance(tiny, heads_off="enc.1.0", top_k=5, max_len=8)
    data = maps_npz(r, prov)
    with np.load(io.BytesIO(data), allow_pickle=False) as z:  # no pickles: loads where they are refused
        assert set(z.files) == {"encoder_attentions", "decoder_attentions", "cross_attentions", "src_tokens",
                                "tgt_tokens", "output_tokens", "provenance"}
        assert all(z[f].dtype.kind in "fU" for f in z.files)
        assert z["provenance"].shape == () and json.loads(str(z["provenance"])) == prov
    (tmp_path / "maps.npz").write_bytes(data)
    for back in (load_maps_npz(data), load_maps_npz(tmp_path / "maps.npz"), load_maps_npz(str(tmp_path / "maps.npz"))):
        for key in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
            assert back[key].dtype == np.float32 and np.array_equal(back[key], getattr(r, key))
        assert (back["src_tokens"], back["tgt_tokens"], back["output_tokens"]) == (
            r.src_tokens, r.tgt_tokens, r.output_tokens)
        assert back["provenance"] == prov


def test_exports_of_a_result_without_maps_say_why(tiny):
    r = tiny.translate_batch([SENTENCE], max_len=8, with_maps=False)[0]
    for export in (lambda: maps_npz(r, {}), lambda: bertviz_inputs(r), lambda: bertviz_npz(r)):
        with pytest.raises(ValueError, match="with_maps=True"):
            export()


# BertViz ------------------------------------------------------------------------------------------
def test_bertviz_inputs_fit_model_views_encoder_decoder_contract(tiny, tiny_result):
    """model_view(encoder_attention=, decoder_attention=, cross_attention=, encoder_tokens=, decoder_tokens=):
    per layer one (batch 1, heads, query, key) float tensor, as Hugging Face's output_attentions."""
    r, cfg = tiny_result, tiny.cfg
    inputs = bertviz_inputs(r)
    assert set(inputs) == {"encoder_attention", "decoder_attention", "cross_attention", "encoder_tokens",
                           "decoder_tokens"}
    S, T = len(inputs["encoder_tokens"]), len(inputs["decoder_tokens"])
    assert (inputs["encoder_tokens"], inputs["decoder_tokens"]) == (r.src_tokens, r.tgt_tokens)
    for arg, layers, field, (q, k) in [("encoder_attention", cfg.n_enc_layers, "encoder_attentions", (S, S)),
                                       ("decoder_attention", cfg.n_dec_layers, "decoder_attentions", (T, T)),
                                       ("cross_attention", cfg.n_dec_layers, "cross_attentions", (T, S))]:
        maps = inputs[arg]
        assert isinstance(maps, tuple) and len(maps) == layers
        for layer, t in enumerate(maps):
            assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
            assert t.shape == (1, cfg.n_heads, q, k)
            assert np.array_equal(t[0].numpy(), getattr(r, field)[layer])


def test_bertviz_npz_round_trips_to_the_same_arguments(tiny_result, tmp_path):
    inputs = bertviz_inputs(tiny_result)
    data = bertviz_npz(tiny_result)
    (tmp_path / "maps.bertviz.npz").write_bytes(data)
    for back in (load_bertviz_npz(tmp_path / "maps.bertviz.npz"), load_bertviz_npz(data)):
        assert list(back) == list(inputs)
        for key, value in inputs.items():
            if isinstance(value, tuple):
                assert len(back[key]) == len(value)
                assert all(a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(back[key], value))
            else:
                assert back[key] == value


def test_bertviz_draws_our_inputs(tiny_result):
    bertviz = pytest.importorskip("bertviz")
    inputs = bertviz_inputs(tiny_result)
    for view in (bertviz.model_view, bertviz.head_view):
        html = view(**inputs, html_action="return")
        assert "Cross" in html.data and "Encoder" in html.data
