"""The smaller things seen on a phone, at a projector and in the dark theme, each fixed at its root: the training
replay's map title is never cut, its curves' axis says what it is and whose run they are; the decoder
self-attention of step 1 says why it is one solid block; the decoding trace forces any word of the model's
vocabulary, as the command line does, and marks it in the result; the Contributions maps have room; labelled bars
draw no gridline through their numbers; a map's CSV names its rows as the page does."""

import html
import io

import numpy as np
import pandas as pd


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
    vocabulary = tiny_translator.tgt_vocab
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


# Room for the Contributions maps ---------------------------------------------------------------------------------


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
