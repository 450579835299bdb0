"""Learn by predicting: guess first (?guess=1) hides a picture until its question is answered and marks the answer on
it; the exercises page judges an answer right or wrong by the model's own numbers; the presenter layout (?present=1)
puts the walk's picture on a projector's screen."""


import pytest

from conftest import figure_data, from_url, shown

SENTENCE = "Zwei Hunde spielen im Schnee."


def first_word_step(result) -> int:
    """The cross question's step, found again here: the first step whose token has a letter."""
    for t, s in enumerate(result.steps):
        if any(c.isalpha() for c in s.token):
            return t
    raise AssertionError("no word in the output")


def cross_answer(translator) -> tuple[list[str], str]:
    """The walk's stop 9 question, answered by a second route: the last cross layer's heads averaged by a loop, its
    row for the first word, the key of the largest weight by a loop."""
    r = translator.translate(SENTENCE)
    t, maps = first_word_step(r), r.cross_attentions[-1]
    row = [sum(float(maps[h, t, k]) for h in range(maps.shape[0])) / maps.shape[0] for k in range(maps.shape[2])]
    best = max(range(len(row)), key=lambda k: row[k])
    return r.src_tokens, r.src_tokens[best]


# --- AppTest: the question comes before the picture, for every view that asks -------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("view", ["walk", "cross", "enc", "dec", "inside", "trace"])
def test_guess_first_asks_before_the_picture_and_answers_after(monkeypatch, view):
    params = {"s": SENTENCE, "view": view, "guess": "1"} | ({"stop": "9"} if view == "walk" else {})
    at = from_url(monkeypatch, **params)
    assert not at.exception
    question = [m for m in at.markdown if "Guess first." in shown(m.value)]
    assert question, [shown(m.value)[:80] for m in at.markdown]
    options = [b for b in at.button if (b.key or "").startswith("guess_")]
    assert len(options) >= 2
    pictures = {"explorer_maps", "explorer_trace", "explorer_inside", "explorer_figure"}  # drawn by views/*.js
    assert not [c for c in at.get("bidi_component") if c.proto.component_name in pictures]
    translation = at.session_state["sentence"] and next(m for m in at.markdown if "Translation" in m.value)
    assert "hidden until you answer" in translation.value and "class='translation'" not in translation.value
    assert not [m for m in at.markdown if "class=\"chip" in m.value and "Output tokens" in m.value]
    options[0].click().run()
    assert not at.exception
    answered = next(m for m in at.markdown if "Translation" in m.value)
    still_open = [m for m in at.markdown if "Guess first." in shown(m.value)]  # the trace asks a second question
    # once nothing is asked, the translation and the output tokens show (also after a fragment's own run)
    assert ("class='translation'" in answered.value) == (not still_open), (view, answered.value)
    assert bool([m for m in at.markdown if "Output tokens" in m.value and "chip" in m.value]) == (not still_open)
    verdict = [shown(i.value) for i in [*at.success, *at.warning] if "Your guess" in shown(i.value)]
    assert verdict and ("Right." in verdict[0] or "Not quite" in verdict[0]), verdict
    assert at.query_params["guess"] in ("1", ["1"])  # the link keeps the switch


@pytest.mark.slow
def test_without_the_switch_nothing_is_hidden(monkeypatch):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop="9")
    assert not [m for m in at.markdown if "Guess first." in shown(m.value)]
    assert figure_data(at)


@pytest.mark.slow
def test_the_tally_counts_the_sessions_guesses(monkeypatch, translator):
    at = from_url(monkeypatch, s=SENTENCE, view="walk", stop="9", guess="1")
    tokens, best = cross_answer(translator)
    right = next(b for b in at.button if (b.key or "").startswith("guess_") and shown(b.label) == best)
    right.click().run()
    assert any("Right." in shown(i.value) and "1 of 1 right" in shown(i.value) for i in at.success)
    at.button(key="walk_next").click().run()  # stop 10: the next word
    wrong = [b for b in at.button if (b.key or "").startswith("guess_")]
    answer = translator.translate(SENTENCE).steps[0].token
    next(b for b in wrong if shown(b.label) != answer).click().run()
    assert any("Not quite" in shown(i.value) and "1 of 2 right" in shown(i.value) for i in at.warning)


# --- Chromium: the picture, the marks, the exercises, the projector -------------------------------------------------


@pytest.mark.slow
def test_the_presenter_layout_still_says_when_the_model_is_out_of_its_depth(monkeypatch):
    """The familiarity note stays out of the fold: on a projector too, an everyday sentence is said to be unlike
    what the model learned from, above the view."""
    at = from_url(monkeypatch, s="Ich habe heute keine Zeit.", view="walk", present="1")
    assert not at.exception
    assert not at.expander[0].warning  # the fold holds no note
    assert any("unlike anything the model learned from" in shown(w.value) for w in at.warning)


@pytest.mark.slow
def test_every_walk_stop_asks_before_its_picture(monkeypatch, translator):
    """Guess first asks at each of the walk's 11 stops before its picture, and grades from the model's numbers:
    stop 1 (tokens read), 6 (hidden units the ReLU leaves above 0, counted by a loop over the inside pass) and 11
    (steps of the loop) against second routes; every other stop's answer marks a verdict and draws its picture."""
    r = translator.translate(SENTENCE)
    ins = translator.inside(SENTENCE, [s.token for s in r.steps])
    hidden = ins.ffn["encoder"]["hidden"][0, 1]
    active = sum(1 for v in hidden if v > 0)
    known = {1: str(len(r.src_tokens)), 11: str(len(r.steps)),
             6: ["under a quarter", "a quarter to a half", "a half to three quarters",
                 "three quarters or more"][min(4 * active // len(hidden), 3)]}
    for stop in range(1, 12):
        at = from_url(monkeypatch, s=SENTENCE, view="walk", stop=str(stop), guess="1")
        assert not at.exception, stop
        assert [m for m in at.markdown if "Guess first." in shown(m.value)], stop
        assert not figure_data(at) and not at.dataframe, stop  # the picture waits
        options = [b for b in at.button if (b.key or "").startswith("guess_")]
        pick = next((b for b in options if b.label == known[stop]), None) if stop in known else options[0]
        assert pick is not None, (stop, [b.label for b in options])
        pick.click().run()
        verdict = [shown(i.value) for i in [*at.success, *at.warning] if "Your guess" in shown(i.value)]
        assert verdict and (stop not in known or "Right." in verdict[0]), (stop, verdict)
        assert figure_data(at) or at.dataframe or stop == 11, stop  # the picture is drawn (stop 11: chips)


@pytest.mark.slow
def test_answers_live_in_the_link_and_right_and_wrong_differ_by_word_and_icon(monkeypatch, translator):
    """A guess is kept in the link (answered=KEY.N): the same link opened again shows the verdict, not the question.
    Right is a success box with a tick and "Right."; wrong a warning with a cross and "Not quite" (not colour
    alone). A bad item of the link is named in the link's note."""
    right = str(len(translator.translate(SENTENCE).src_tokens))  # stop 1: the tokens the model reads
    for pick_right in (True, False):
        at = from_url(monkeypatch, s=SENTENCE, view="walk", stop="1", guess="1")
        options = [b for b in at.button if (b.key or "").startswith("guess_")]
        next(b for b in options if (b.label == right) == pick_right).click().run()
        link = dict(at.query_params)
        key, index = link["answered"].split(".")
        assert len(key) == 8 and options[int(index)].label == right if pick_right else options[int(index)].label != right
        boxes = at.success if pick_right else at.warning
        assert [b for b in boxes if "Your guess" in shown(b.value)], pick_right
        assert boxes[-1].icon == (":material/check_circle:" if pick_right else ":material/cancel:")
        assert ("Right." in shown(boxes[-1].value)) == pick_right and ("Not quite" in shown(boxes[-1].value)) != pick_right
        again = from_url(monkeypatch, **link)  # a reload, or the link sent on
        assert not [m for m in again.markdown if "Guess first." in shown(m.value)]
        assert [b for b in (again.success if pick_right else again.warning) if "Your guess" in shown(b.value)]
    bad = from_url(monkeypatch, s=SENTENCE, view="walk", stop="1", guess="1", answered="zz.1,1f0c2a9b.3")
    assert any("answered item 'zz.1'" in shown(w.value) for w in bad.warning)
