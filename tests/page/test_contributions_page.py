"""Does attention explain the translation? on the page (slow tier: AppTest on the shipped model): the
Contributions view, the norms switch of the attention views and "Inside a head", DecoderLens in Source flow.
Every number drawn is read back from the chart and compared with the Translator's own."""

import html
import json
import re

import numpy as np
import pytest

from conftest import CHECKPOINT, array, charts, decoded, from_url, maps_data, markdown, picked_maps, shown
from viz.contributions import LOW_COLOR

pytestmark = pytest.mark.slow

FLAGGED = "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt."  # two steps below the shipped threshold
PLAIN = "Zwei Männer spielen Fußball auf einer Wiese."  # none below it


def chart(at, title: str) -> dict:
    found = [c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith(title)]
    assert found, [c["layout"].get("title", {}).get("text") for c in charts(at)]
    return found[0]


def shipped_threshold() -> float:
    return json.loads((CHECKPOINT / "source_share.json").read_text())["low_share_threshold"]["per_step"]


@pytest.mark.parametrize("sentence", [FLAGGED, PLAIN])
def test_the_view_by_link_draws_the_translators_shares_and_flags_the_low_ones(monkeypatch, translator, sentence):
    at = from_url(monkeypatch, s=sentence, view="contributions")
    assert not at.exception and not at.error and not at.warning
    assert at.session_state.view == "contributions" and dict(at.query_params)["view"] == "contributions"
    c = translator.contributions(sentence)
    bars = chart(at, "Source share of every step")
    np.testing.assert_allclose(array(bars["data"][0]["y"]), c.source_share, atol=1e-6)
    threshold = shipped_threshold()
    lines = {t["name"]: t["y"] for t in bars["data"][1:]}  # the median and the threshold, from the shipped file
    assert lines[f"low-share threshold {threshold:.3f}"] == [threshold, threshold] and len(lines) == 2
    low = [t for t, v in enumerate(c.source_share) if v < threshold]
    assert [t for t, col in enumerate(bars["data"][0]["marker"]["color"]) if col == LOW_COLOR] == low
    md = markdown(at)
    if low:
        assert f"**{len(low)} steps below the low-share threshold** ({threshold:.3f}" in md
        assert re.findall(r"step (\d+), “", md) == [str(t + 1) for t in low]
    else:
        assert "**No step below the low-share threshold**" in md
    assert "Dale et al. (ACL 2023)" in "\n".join(c.value for c in at.caption)
    assert "Ferrando et al., EMNLP 2022" in md
    source = chart(at, "ALTI+: source tokens")
    np.testing.assert_allclose(array(source["data"][0]["z"]), c.source, atol=1e-6)
    prefix = chart(at, "ALTI+: prefix tokens")
    z = array(prefix["data"][0]["z"]).astype(float)  # the cells above the diagonal are masked (None -> nan)
    np.testing.assert_allclose(np.nan_to_num(z), c.prefix, atol=1e-6)
    attention = chart(at, "Cross-attention, mean of 3 layers × 8 heads")
    np.testing.assert_allclose(array(attention["data"][0]["z"]),
                               translator.translate(sentence).cross_attentions.mean(axis=(0, 1)), atol=1e-6)


def test_the_feed_forward_blocks_parts_of_the_logit_are_the_translators(monkeypatch, translator):
    """The bars are each decoder feed-forward block's part of the chosen word's logit, as direct_logits splits it (its
    parts sum to the real logit); with the shipped transcoders each bar is their part plus the error stacked on it."""
    from model.contributions import direct_logits

    at = from_url(monkeypatch, s=PLAIN, view="contributions")
    assert not at.exception and not at.error
    forced = translator.force(PLAIN)
    d = direct_logits(translator.capture(forced), translator.model, forced.output_ids)
    src, tgt, out = translator.inputs(forced)
    logits = translator.model(src, tgt).logits[0].detach()
    np.testing.assert_allclose(d["total"], logits.gather(-1, out[:, None]).squeeze(-1).numpy(), atol=1e-3)
    bars = chart(at, "Feed-forward blocks: their part")
    whole = [d["logits"][:, d["parts"].index(f"L{l + 1} ffn")] for l in range(3)]
    split = len(bars["data"]) == 6  # with transcoders: each block's features (and dense part), then its error
    for l in range(3):
        if split:
            got = array(bars["data"][2 * l]["y"]) + array(bars["data"][2 * l + 1]["y"])
            np.testing.assert_allclose(array(bars["data"][2 * l + 1]["base"]), array(bars["data"][2 * l]["y"]))
        else:
            got = array(bars["data"][l]["y"])
        np.testing.assert_allclose(got, whole[l], atol=1e-4)
    assert split == (CHECKPOINT / "transcoders.safetensors").is_file()
    table = next(t.value for t in at.dataframe if "ALTI+ source share" in t.value.columns)
    assert list(table["ALTI+ source share"]) == [round(float(v), 3) for v in translator.contributions(PLAIN).source_share]
    assert list(table["logit"]) == [round(float(v), 3) for v in d["total"]]


def test_without_the_shipped_distribution_the_view_says_so(monkeypatch):
    import views.contributions

    monkeypatch.setattr(views.contributions, "checkpoint_json", lambda checkpoint, name: None)
    at = from_url(monkeypatch, s=FLAGGED, view="contributions")
    assert not at.exception and not at.error
    assert any("No `source_share.json` beside this checkpoint" in i.value for i in at.info)
    assert len(chart(at, "Source share of every step")["data"]) == 1  # the bars alone
    assert "below the low-share threshold" not in markdown(at)


def test_the_norms_switch_draws_the_translators_norms_and_stays_in_the_link(monkeypatch, translator):
    s = PLAIN
    at = from_url(monkeypatch, s=s, view="cross", layer="2", head="5", values="norms")
    assert not at.exception and not at.warning
    norms = translator.weighted_norms(s).norms["cross"]
    big = charts(at)[0]  # the figure as sent, without its cells: the browser fills them from the packed maps
    assert big["layout"]["title"]["text"] == "Cross-attention, layer 2, head 5, norms ‖α·f(x)‖"
    step = maps_data(at)[0]["panels"][0]["maps"]["step"]  # norms travel as codes of max / 65535
    # up to the codes' rounding, and float32's between two runs of the same pass (the page's in its script thread:
    # another thread may take another kernel, 1e-6 of the largest value apart on some CPUs)
    fp = 1e-6 * norms.max()
    np.testing.assert_allclose(picked_maps(at)[0], norms[1, 4], atol=step / 2 + fp)
    axis = big["layout"]["coloraxis"]
    assert axis["colorbar"]["title"]["text"] == "‖α·f(x)‖" and axis["cmax"] == pytest.approx(norms[1, 4].max())
    # The all-heads grid is filled from the same maps (every layer and head, norms too, one colour range).
    data = maps_data(at)[0]["panels"][0]
    np.testing.assert_allclose(decoded(data["maps"])[:, :-1], norms, atol=step / 2 + fp)
    assert dict(at.query_params)["values"] == "norms"
    # another head, in the browser: norms too, each with its own range
    np.testing.assert_allclose(decoded(data["maps"])[1, 2], norms[1, 2], atol=data["maps"]["step"] / 2 + fp)
    assert data["scales"][1][2][0] == [0.0, pytest.approx(norms[1, 2].max()), "‖α·f(x)‖"]
    assert data["titles"][1][2] == "Cross-attention, layer 2, head 3, norms ‖α·f(x)‖"
    assert dict(at.query_params) == {"s": s, "view": "cross", "layer": "2", "head": "5", "values": "norms"}
    at.segmented_control(key="attn_values").set_value("weights").run()
    assert "values" not in dict(at.query_params)
    assert charts(at)[0]["layout"]["title"]["text"] == "Cross-attention, layer 2, head 5"
    assert charts(at)[0]["layout"]["coloraxis"]["cmax"] == 1


def test_the_norms_in_the_line_view_and_the_decoder_view(monkeypatch, translator):
    s = PLAIN
    at = from_url(monkeypatch, s=s, view="dec", layer="1", values="norms", draw="lines")
    assert not at.exception and not at.warning
    lines = charts(at)[0]  # the line figure as sent; each layer's lines and hover travel beside it
    assert lines["layout"]["title"]["text"].endswith("norms ‖α·f(x)‖")
    assert any(t.get("name") == "query tokens" for t in lines["data"])
    norms = translator.weighted_norms(s).norms["dec"][0]  # (H, T, T)
    hover = maps_data(at)[0]["panels"][0]["lines"]["layers"][0]["hovers"]["query"]  # layer 1's query tokens
    best = norms.max(axis=0)[0].max()  # query 0's strongest partner over the heads
    assert f"key 0: {best:.3f}" in hover[0] and "‖α·f(x)‖" in hover[0]
    assert dict(at.query_params)["values"] == "norms" and dict(at.query_params)["draw"] == "lines"


def test_bad_values_in_the_link_is_named(monkeypatch):
    at = from_url(monkeypatch, s="Ein Hund rennt.", view="enc", values="sizes")
    assert not at.exception and "values='sizes' is not one of weights, norms" in shown(at.warning[0].value)
    assert "values" not in dict(at.query_params)


def test_inside_a_head_shows_each_weighted_values_norm_beside_its_weight(monkeypatch, translator):
    s = PLAIN
    at = from_url(monkeypatch, s=s, view="inside", kind="cross", layer="2", head="8", query="3")
    assert not at.exception and not at.warning
    figure = next(c for c in charts(at)
                  if "weight α (the map)" in json.dumps(c["layout"].get("annotations", ""), ensure_ascii=False))
    weights, norms = (array(t["x"]) for t in figure["data"])
    np.testing.assert_allclose(norms, translator.weighted_norms(s).norms["cross"][1, 7, 3], rtol=1e-5)
    np.testing.assert_allclose(weights, translator.translate(s).cross_attentions[1, 7, 3], atol=1e-6)


def test_decoder_lens_rows_are_the_translators(monkeypatch, translator):
    s = "Ein Mann fährt Fahrrad."  # encoder layer 2 drops "is": a row that differs
    at = from_url(monkeypatch, s=s, view="flow")
    assert not at.exception and not at.error
    lens = translator.decoder_lens(s)
    rows = [m.value for m in at.markdown if m.value.startswith("**Encoder layer ")]
    assert len(rows) == len(lens.layers) == 3
    for k, (row, tokens) in enumerate(zip(rows, lens.layers), start=1):
        assert row.startswith(f"**Encoder layer {k}** (")
        chips = re.findall(r'<span class="chip( del| add)?">(.*?)</span>', row)
        assert [html.unescape(t) for cls, t in chips if cls != " del"] == tokens  # this layer's own output
        assert [html.unescape(t) for cls, t in chips if cls != " add"] == lens.layers[-1]  # the real one
    assert "(the real translation)" in rows[-1] and 'class="chip del"' in rows[1]
    assert "Langedijk et al., Findings of NAACL 2024" in markdown(at)
