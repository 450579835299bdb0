"""Decoder self-attention's keys (viz/labels.py SIDES, token_labels): a key is a token the decoder read, so its
columns are the decoder's inputs (<sos>, then every output token but the last); its rows stay named by what they read
and predict ("<sos> → two")."""

from conftest import seeded_translator
from viz.labels import SIDES, plain, predicting, tick_labels, token_labels


def test_decoder_self_attention_keys_are_the_decoder_inputs_and_rows_what_they_predict():
    r = seeded_translator().translate("Ein Hund läuft im Park.")
    outputs = [s.token for s in r.steps]
    (rows, _), (keys, key_unknown) = (token_labels(r, side) for side in SIDES["dec"])
    assert keys == ["<sos>", *outputs[:-1]] == r.tgt_tokens and key_unknown is None
    assert rows == predicting(r.tgt_tokens, outputs) and rows[0] == f"<sos> → {outputs[0]}"
    assert [token_labels(r, side)[0] for side in SIDES["cross"]] == [rows, r.src_tokens]  # cross-attention as it was


def test_the_html_reports_decoder_map_labels_its_keys_with_the_inputs():
    from viz.report import _figure

    r = seeded_translator().translate("Ein Hund läuft im Park.")
    axes = _figure(r, "dec")["layout"]
    assert axes["xaxis"]["ticktext"] == [plain(t) for t in r.tgt_tokens]
    assert axes["yaxis"]["ticktext"] == tick_labels(predicting(r.tgt_tokens, [s.token for s in r.steps]))
