"""The smaller things seen on a phone, at a projector and in the dark theme, each fixed at its root: the training
replay's map title is never cut, its curves' axis says what it is and whose run they are; the decoder
self-attention of step 1 says why it is one solid block; the decoding trace forces any word of the model's
vocabulary, as the command line does, and marks it in the result; the Contributions maps have room; labelled bars
draw no gridline through their numbers; a map's CSV names its rows as the page does."""

import html
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from appserver import wait_idle
from conftest import ROOT, component_data, figure_data, from_url, markdown, shown

SENTENCE = "Ein Mann fährt Fahrrad."
ANY_WORD = "(another word…)"  # views.state.ANY_WORD, as the browser's what-if box offers it


# The training replay ------------------------------------------------------------------------------------------


def test_the_training_curves_name_their_axis_and_their_run():
    """The snapshots are evenly spaced but log-spaced in steps: the axis says so, instead of "step" under a scale it
    does not have; and the run is named under each curve's title (the model switch above may name another)."""
    import viz

    fig = viz.training_curve(["0", "25", "50", "4,313"], [8.7, 8.1, 7.6, 1.6], 1, "validation loss",
                             model="the sinusoidal-position model's training")
    axis = fig.layout.xaxis.title.text
    assert axis != "step" and "snapshot" in axis and "not to scale" in axis
    assert "sinusoidal-position" in fig.layout.title.subtitle.text
    assert list(fig.layout.xaxis.ticktext)[-1] == "4,313"  # the ticks still name each snapshot's step


def test_a_snapshot_maps_title_and_sentence_wrap_to_its_width():
    """Step 0's untrained output is 50 tokens long: its map is narrow, and its title, one line, was cut. The title
    wraps (after a comma where one fits), the sentence under it too, and the room above the map grows."""
    from viz.training import PHONE_PX, SUBTITLE_CHAR_PX, TITLE_CHAR_PX, snapshot_map

    rows = ["<sos> → solid"] + ["solid → solid"] * 49
    keys = ["<sos>", "ein", "typ", "arbeitet", "an", "einem", "gebäude", ".", "<eos>"]
    title = "Cross-attention, layer 2, mean of heads, step 0 (epoch 0.00)"
    sentence = "Eine Gruppe von Menschen steht vor einem Iglu, während im Hintergrund ein Mann auf Skiern fährt."
    fig = snapshot_map(np.full((50, 9), 1 / 9), rows, keys, title=title, sentence=sentence)
    room = min(fig.layout.width, PHONE_PX) - 20
    lines, under = fig.layout.title.text.split("<br>"), fig.layout.title.subtitle.text.split("<br>")
    assert len(lines) == 2 and lines[0] == "Cross-attention, layer 2, mean of heads,", lines
    assert all(len(line) * TITLE_CHAR_PX <= room for line in lines), (lines, room)
    assert all(len(line) * SUBTITLE_CHAR_PX <= room for line in under), (under, room)
    assert " ".join(lines) == title and " ".join(under) == sentence  # wrapped, nothing cut
    assert fig.layout.margin.t >= 12 + 21 * len(lines) + 15 * len(under)


@pytest.mark.slow
def test_the_training_view_names_the_run_it_replays_beside_the_curves(monkeypatch):
    """The page's model is the learned-position one; the shipped replay is the sinusoidal model's training: the
    curves say whose run they are, and a line beside them says that the model picked above is not it."""
    from views.training import manifest

    m = manifest()
    if not m or m["model"] == "learned":
        pytest.skip("no replay of another model than the page's default")
    at = from_url(monkeypatch, s=m["examples"][0], view="training", at="0", kind="dec")
    assert not at.exception and not at.warning
    assert any(f"replay the {m['model']}-position model's training" in c.value and "(learned positions)" in c.value
               for c in at.caption)
    curves = [json.loads(c["figure"])["layout"] for c in figure_data(at)][:3]
    assert all(f"{m['model']}-position" in c["title"]["subtitle"]["text"] for c in curves), curves
    assert any("has only <sos> to look at" in shown(c.value) for c in at.caption)  # the dec map's first row


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 390])
def test_the_training_maps_title_is_never_cut(browser, server, width):
    """At step 0 the map is narrow (50 rows of an untrained model's output): its title and its sentence stay
    inside the chart, on a projector and on a phone."""
    ctx = browser.new_context(viewport={"width": width, "height": 1200})
    pg = ctx.new_page()
    pg.goto(server + "/?s=Ein+Typ+arbeitet+an+einem+Geb%C3%A4ude.&view=training&at=0")
    pg.locator(".js-plotly-plot .gtitle", has_text="Cross-attention, layer").wait_for(timeout=120_000)
    wait_idle(pg, 120_000)
    out = pg.evaluate("""() => {
        const t = [...document.querySelectorAll('.js-plotly-plot .gtitle')]
            .find(e => e.textContent.startsWith('Cross'));
        const plot = t.closest('.js-plotly-plot').getBoundingClientRect();
        const box = t.closest('.explorer-figure').getBoundingClientRect();
        const sub = t.closest('svg').querySelector('.gtitle-subtitle');
        return {title: t.getBoundingClientRect().right, sub: sub ? sub.getBoundingClientRect().right : 0,
                right: Math.min(plot.right, box.right, window.innerWidth)}; }""")
    ctx.close()
    assert out["title"] <= out["right"] + 1 and out["sub"] <= out["right"] + 1, out


# The decoder self-attention at step 1 --------------------------------------------------------------------------


def test_the_first_decoder_row_says_why_it_is_one_solid_block():
    """Where the decoder self-attention is drawn with <sos> its only key (the dec map's first row, the trace's step
    1), a sentence says that the weight 1 is by construction."""
    import viz
    from views.trace import self_axes

    caption = viz.map_caption("dec", ["a", "man"])
    assert "The first row, “<sos> → a”, has only <sos> to look at" in html.unescape(caption)
    assert "weight 1: by construction" in caption
    axes = self_axes(["<sos>", "a", "man"], 3)
    assert "only token so far" in axes[0]["title"]["text"] and "weight 1" in axes[0]["title"]["text"]
    assert "&lt;sos&gt;" in axes[0]["title"]["text"]  # Plotly text, escaped
    assert all("title" not in a for a in axes[1:])  # later steps keep the figure's own axis title
    assert [a["ticktext"] for a in axes] == [["&lt;sos&gt;"], ["&lt;sos&gt;", "a"], ["&lt;sos&gt;", "a", "man"]]


# The what-if: any word, marked ----------------------------------------------------------------------------------


def test_the_trace_can_force_any_word_of_the_vocabulary(tiny_translator):
    """As `model.translate --force` takes any word of the English vocabulary, so does the trace (and its link); a
    word outside the vocabulary, a token the model never writes and the word the step says anyway get a note."""
    from views.state import MODEL_CHOICE, alternatives, forceable

    r = tiny_translator.translate("Ein Hund läuft im Park.")
    vocabulary = tiny_translator.tgt_vocab.stoi
    beyond = next(w for w in tiny_translator.tgt_vocab.itos[4:]
                  if w not in alternatives(r, 0) and w != r.steps[0].token)
    notes = []
    assert forceable(r, 0, beyond, vocabulary, notes) and notes == []
    assert forceable(r, 0, None, vocabulary, notes) and forceable(r, 0, MODEL_CHOICE, vocabulary, notes) and not notes
    assert not forceable(r, 0, "qwxzy", vocabulary, notes)
    assert not forceable(r, 0, "<pad>", vocabulary, notes)
    assert not forceable(r, 0, r.steps[0].token, vocabulary, notes)
    assert notes == ["whatif='qwxzy' is not a word of the model's English vocabulary",
                     "whatif='<pad>' is a token the model never writes",
                     f"whatif={r.steps[0].token!r} is the word step 1 says anyway"]


def test_the_forced_word_is_marked_in_the_result():
    """The what-if translation marks the word the page forced (outlined, and named in words), apart from what greedy
    decoding wrote after it, also where the diff lines it up with a word of the original."""
    from views.trace import forced_chips

    text = forced_chips(["a", "man", "is", "riding"], ["a", "man", "woman", "riding"], 2)
    assert text.count("forced") == 2 and text.count('title="forced at step 3"') == 1
    forced = text[text.index('title="forced'):]
    assert forced.split(">", 1)[1].startswith("woman</span>") and "◂&nbsp;forced" in forced
    # the forced "a" at step 3 is lined up with the original's "a": marked all the same, and only it
    text = forced_chips(["a", "man", "rides", "a", "bike"], ["a", "man", "a", "bike"], 2)
    assert text.count('title="forced at step 3"') == 1
    assert text.split('title="forced at step 3"')[0].count("<span") == 4  # a, man, rides (struck out), then it


@pytest.mark.slow
def test_a_link_forces_any_word_and_the_page_marks_it(monkeypatch, translator):
    """whatif= takes any word of the vocabulary (the step's candidates were the only ones before): the trace decodes
    on from it, marks it, and keeps it in the link; the vocabulary's box shows it."""
    step = translator.translate(SENTENCE).steps[2]
    assert "woman" not in [t for t, _ in step.top]
    at = from_url(monkeypatch, s=SENTENCE, view="trace", step="3", whatif="woman")
    assert not at.exception and not at.warning
    text = markdown(at)
    assert "forced to “woman”" in shown(text) and 'title="forced at step 3"' in text
    assert dict(at.query_params)["whatif"] == "woman"
    assert at.selectbox(key="whatif_word").value == "woman"
    data = component_data(at, "trace")
    assert data["whatif"] == "woman" and "woman" in data["steps"][2]["others"]  # the browser's box shows it too


@pytest.mark.slow
def test_another_word_opens_the_whole_vocabulary(app, translator):
    """The browser's what-if box ends with "(another word…)": picking it opens a box with every word of the
    vocabulary, the step's candidates first; a word picked there is forced as a candidate is."""
    app.text_input(key="sentence").input(SENTENCE).run()
    app.segmented_control(key="view").set_value("trace").run()
    app.session_state.trace_step, app.session_state.what_if = 2, ANY_WORD  # what the browser's pick asks
    app.run()
    assert not app.exception
    box = app.selectbox(key="whatif_word")
    want = translator.translate(SENTENCE).steps[1]
    candidates = [t for t, _ in want.top if t != want.token]
    assert box.value is None and box.options[:len(candidates)] == candidates
    assert "dog" in box.options and want.token not in box.options and "<pad>" not in box.options
    assert len(box.options) == len(translator.tgt_vocab.itos) - 3  # less <pad>, <sos> and the step's own word
    box.set_value("dog").run()
    assert not app.exception
    assert "forced to “dog”" in shown(markdown(app)) and dict(app.query_params)["whatif"] == "dog"


# Room for the Contributions maps ---------------------------------------------------------------------------------


LONG = ("Eine Gruppe von Menschen steht vor einem Iglu, während im Hintergrund ein Mann auf Skiern fährt und Kinder "
        "spielen.")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("sentence", ["Zwei Männer spielen Fußball auf einer Wiese.", LONG])
def test_the_contributions_maps_have_room_at_1400_px(browser, server, sentence):
    """Three maps in a 1400 px row left each about 160 px of cells; two a row (a row each for a long sentence), each
    at its own size, leave each well over 250."""
    from urllib.parse import quote_plus

    ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
    pg = ctx.new_page()
    pg.goto(server + f"/?s={quote_plus(sentence)}&view=contributions")
    pg.locator(".js-plotly-plot .gtitle", has_text="ALTI+: prefix tokens").wait_for(timeout=120_000)
    wait_idle(pg, 120_000)
    sizes = pg.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')]
        .filter(g => g.querySelector('.heatmaplayer .hm'))
        .map(g => [g.querySelector('.gtitle').textContent,
                   Math.round(g.querySelector('.nsewdrag').getBoundingClientRect().width)]))""")
    ctx.close()
    assert len(sizes) == 3 and all(w >= 250 for w in sizes.values()), sizes


# No gridline through a bar's number ------------------------------------------------------------------------------


def test_labelled_bars_draw_no_grid_on_their_value_axis():
    """Bars that print their number draw no gridline on the value axis: it ran through the numbers, brightly in the
    dark theme (the candidates, the source shares, a weight beside its norm)."""
    import viz

    bars = viz.candidates_bar([("is", 0.5), ("rides", 0.3)], "is")
    shares = viz.source_share_bars(["<sos> → a", "a → man"], [0.77, 0.6], median=0.7, threshold=0.44)
    norms = viz.weights_and_norms(["<sos>", "ein"], [0.3, 0.7], [0.5, 1.2])
    for fig, value_axes in ((bars, ["xaxis"]), (shares, ["yaxis"]), (norms, ["xaxis", "xaxis2"])):
        assert any(t.type == "bar" and t.text is not None for t in fig.data)
        assert all(fig.layout[axis].showgrid is False for axis in value_axes), fig.layout


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("view, chart", [("contributions", "Source share"), ("trace", "Top candidates")])
def test_no_gridline_runs_through_a_bars_number_in_the_dark(browser, server, view, chart):
    """In the dark theme, no gridline crosses a bar's printed number (a chart of views/figure.js, and the trace's)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1400}, color_scheme="dark")
    pg = ctx.new_page()
    pg.goto(server + f"/?s=Zwei+M%C3%A4nner+spielen+Fu%C3%9Fball+auf+einer+Wiese.&view={view}")
    pg.locator(".js-plotly-plot .gtitle", has_text=chart).wait_for(timeout=120_000)
    wait_idle(pg, 120_000)
    crossed = pg.evaluate("""title => {
        const g = [...document.querySelectorAll('.js-plotly-plot')]
            .find(p => p.querySelector('.gtitle')?.textContent.startsWith(title));
        const texts = [...g.querySelectorAll('.bartext')].map(t => [t.textContent, t.getBoundingClientRect()]);
        const lines = [...g.querySelectorAll('.gridlayer path')].map(p => p.getBoundingClientRect());
        const meet = (l, t) => l.left <= t.right && t.left <= l.right && l.top <= t.bottom && t.top <= l.bottom;
        return texts.filter(([, t]) => lines.some(l => meet(l, t)))
                    .map(([s]) => s).concat(texts.length ? [] : ['no numbers found']); }""", chart)
    ctx.close()
    assert crossed == [], crossed


# The map CSV's rows -----------------------------------------------------------------------------------------------


def test_a_maps_csv_names_its_rows_as_the_page_does(tiny_translator):
    """The page names a decoder row "<sos> → a" (the token read → the token chosen); the map's CSV under a view named
    it by the token read alone. A source row keeps its token."""
    from model.export import map_csv
    from views.export import map_rows

    r = tiny_translator.translate("Ein Hund läuft im Park.")
    rows = map_rows(r, r.tgt_tokens)
    assert rows == [f"{a} → {b.token}" for a, b in zip(r.tgt_tokens, r.steps)] and rows[0].startswith("<sos> → ")
    assert map_rows(r, r.src_tokens) == r.src_tokens
    df = pd.read_csv(io.StringIO(map_csv(r.cross_attentions[0, 0], rows, r.src_tokens)),
                     dtype={"query_token": str, "key_token": str}, keep_default_na=False)
    assert df.groupby("query_pos").query_token.first().tolist() == rows


def test_browsers_started_behind_the_servers_cannot_raise_their_priority():
    """tests/appserver.behind_the_servers: a program started afterwards (Chromium, as root, sets its threads to nice 0
    and -8) stays at the niceness asked for, even when it tries to go back to 0."""
    import subprocess
    import sys

    child = ("import os\ntry:\n    os.setpriority(os.PRIO_PROCESS, 0, 0)\nexcept PermissionError:\n    pass\n"
             "print(os.getpriority(os.PRIO_PROCESS, 0))")
    parent = ("import subprocess, sys\nfrom tests.appserver import behind_the_servers\n"
              "print(behind_the_servers(17))\n"
              f"print(subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, text=True).stdout.strip())")
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, cwd=ROOT, timeout=60)
    caps = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("CapEff:")).split()[1], 16)
    if caps >> 23 & 1 and not caps >> 8 & 1:  # CAP_SYS_NICE without CAP_SETPCAP: the drop cannot be made here
        pytest.skip("programs may raise their priority here, and dropping that needs CAP_SETPCAP")
    assert out.stdout.split() == ["True", "17"], (out.stdout, out.stderr)


def test_the_sinusoidal_models_position_tables_are_the_papers_formula():
    """views/positions.py draws the formula (viz.sinusoidal) for the sinusoidal model's table instead of loading that
    model: the two agree to float32 rounding, source and target."""
    import viz
    from model.translator import Translator
    from views.calls import SINUSOIDAL

    tables = Translator.load(str(SINUSOIDAL), device="cpu").position_tables()
    assert tables["source"].shape == tables["target"].shape and tables["source"].shape[1] > 64
    for side in ("source", "target"):
        np.testing.assert_allclose(tables[side], viz.sinusoidal(*tables[side].shape), rtol=0, atol=1e-6)
