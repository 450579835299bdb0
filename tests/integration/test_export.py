"""Exports (model/export.py): each one read back by an independent route gives exactly what went in."""

import json

import pytest

from conftest import ROOT
from model import translate
from model.export import map_csv, provenance, result_json, steps_csv
from unit.test_export import SENTENCE, assert_no_formula


def assert_same(cli, ours, where="line"):
    """Equal JSON values: same keys and types, strings and ints exactly, floats within 1e-6."""
    if isinstance(ours, dict):
        assert isinstance(cli, dict) and list(cli) == list(ours), (where, list(cli), list(ours))
        for k in ours:
            assert_same(cli[k], ours[k], f"{where}.{k}")
    elif isinstance(ours, list):
        assert isinstance(cli, list) and len(cli) == len(ours), where
        for i, (a, b) in enumerate(zip(cli, ours)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(ours, float):
        assert isinstance(cli, float) and abs(cli - ours) <= 1e-6, (where, cli, ours)
    else:
        assert type(cli) is type(ours) and cli == ours, (where, cli, ours)


@pytest.mark.parametrize("args,heads_off,force,beam", [
    ([], None, {}, 1),
    (["--mask-heads", "cross.2.1,enc.0.*", "--force", "1:dog", "--top-k", "3"], "cross.2.1,enc.0.*", {1: "dog"}, 1),
    (["--beam", "3"], None, {}, 3),
])
def test_result_json_is_the_cli_json_line(translator, args, heads_off, force, beam, call, monkeypatch):
    """The CLI's --json line and result_json of the library's result: the same line, provenance included."""
    monkeypatch.chdir(ROOT)
    status, out, err = call(translate.main, "--json", "--checkpoint", "checkpoints", "--device", "cpu", *args,
                            stdin=SENTENCE + "\n")
    assert status == 0, err
    cli = json.loads(out)
    top_k = 3 if "--top-k" in args else 5
    result = translator.translate(SENTENCE, beam=beam, top_k=top_k, heads_off=heads_off, force=force)
    ours = result_json(result, provenance(translator, heads_off, force, beam, top_k))
    assert cli["provenance"] == ours["provenance"]  # exactly, nothing excepted
    assert cli["provenance"]["checkpoint"]["path"] == "checkpoints"  # relative to the project
    beam_keys = ["nbest", "beam_trace"] if beam > 1 else []
    assert_same({k: cli[k] for k in ours}, ours)
    assert list(cli) == [*ours, *beam_keys]


def test_the_shipped_model_on_the_reported_sentences_writes_no_formula(translator):
    """The two sentences reported: '@SUM(1+1) Mann' and a =HYPERLINK(...) one, through the map and step CSVs."""
    for sentence in ("@SUM(1+1) Mann", '=HYPERLINK("http://x.example","klick")', "+1 -2 @x =y"):
        r = translator.translate(sentence)
        assert any(t.startswith(("@", "=")) for t in r.src_tokens)
        text = map_csv(r.cross_attentions[-1, 0], [s.token for s in r.steps], r.src_tokens)
        assert_no_formula(text)
        assert "'@sum(1+1" in text or "'=" in text or "'@x" in text
        assert_no_formula(steps_csv(r))
