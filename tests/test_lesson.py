"""Learn by predicting: guess first (?guess=1) hides a picture until its question is answered and marks the answer on
it; the exercises page judges an answer right or wrong by the model's own numbers; the presenter layout (?present=1)
puts the walk's picture on a projector's screen."""

from urllib.parse import urlencode

import pytest

from appserver import wait_idle
from conftest import figure_data, fresh_page, from_url, shown
from model.checkpoint import DEFAULT_CHECKPOINT
from model.exercises import check, exercises

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
    options[0].click().run()
    assert not at.exception
    verdict = [shown(i.value) for i in at.info if "Your guess" in shown(i.value)]
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
    assert any("Right." in shown(i.value) and "1 of 1 right" in shown(i.value) for i in at.info)
    at.button(key="walk_next").click().run()  # stop 10: the next word
    wrong = [b for b in at.button if (b.key or "").startswith("guess_")]
    answer = translator.translate(SENTENCE).steps[0].token
    next(b for b in wrong if shown(b.label) != answer).click().run()
    assert any("Not quite" in shown(i.value) and "1 of 2 right" in shown(i.value) for i in at.info)


# --- Chromium: the picture, the marks, the exercises, the projector -------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_a_guess_in_the_walk_shows_no_picture_then_marks_the_answer(browser, server, translator):
    tokens, best = cross_answer(translator)
    wrong = next(t for t in tokens if t != best)
    link = "/?" + urlencode({"s": SENTENCE, "view": "walk", "stop": "9", "guess": "1"})
    ctx, pg, errors = fresh_page(browser, server + link)
    pg.get_by_text("Guess first.").wait_for(timeout=60_000)
    assert pg.locator(".st-key-view_box .js-plotly-plot").count() == 0
    pg.locator(".st-key-view_box").get_by_role("button", name=wrong, exact=True).click()
    pg.get_by_text("Not quite").wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    pg.locator(".st-key-view_box .js-plotly-plot").first.wait_for(timeout=30_000)
    marks = pg.evaluate("""() => [...document.querySelectorAll('.st-key-view_box .js-plotly-plot')]
        .flatMap(p => (p._fullLayout.annotations || []).map(a => a.text))""")
    assert "your guess" in marks and "the answer" in marks, marks
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_exercises_page_judges_a_right_and_a_wrong_answer(browser, server, translator):
    exs = [ex for ex in exercises(translator, DEFAULT_CHECKPOINT) if ex.options]
    first, second = exs[0], exs[1]
    wrong = next(o for o in second.options if not check(second, o))
    ctx, pg, errors = fresh_page(browser, server + "/?" + urlencode({"s": SENTENCE, "view": "exercises"}))
    pg.get_by_text(f"Exercise {first.number}", exact=True).wait_for(timeout=120_000)
    for ex, option, verdict in ((first, first.answer, "Right."), (second, wrong, "Not quite")):
        box = pg.locator(f".st-key-exercise_box_{ex.number}")
        box.get_by_role("radio", name=option, exact=True).check(force=True)
        box.get_by_text(verdict).wait_for(timeout=60_000)
        wait_idle(pg, 60_000)
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_presenter_layout_puts_the_walks_picture_on_a_projector(browser, server):
    link = "/?" + urlencode({"s": SENTENCE, "view": "walk", "stop": "9", "present": "1"})
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = ctx.new_page()
    pg.goto(server + link)
    chart = pg.locator(".st-key-view_box .js-plotly-plot").first
    chart.wait_for(timeout=120_000)
    wait_idle(pg, 60_000)
    top = chart.evaluate("e => e.getBoundingClientRect().top")
    assert top < 768 - 150, f"the picture starts at {top} px"  # and at least 150 px of it on the screen
    assert pg.locator("h1").count() == 0  # the title made room
    ctx.close()


def test_the_next_word_question_does_not_give_its_answer_by_place(translator):
    """The candidates are offered in alphabetical order, not by probability (the answer would always come first),
    and the marks land on the bars of the guessed and the chosen word."""
    import viz
    from views.guess import next_word_question

    r = translator.translate(SENTENCE)
    q = next_word_question(r, 0)
    assert list(q.options) == sorted(q.options) and q.answer == r.steps[0].token
    bars = [tok for tok, _ in r.steps[0].top]
    fig = viz.mark_guess(viz.candidates_bar(list(r.steps[0].top), q.answer), (None, bars.index(bars[1])),
                         (None, bars.index(q.answer)))
    marks = {a.text: a.y for a in fig.layout.annotations}
    assert marks == {"the answer": 0, "your guess": 1}


@pytest.mark.slow
def test_the_presenter_layout_still_says_when_the_model_is_out_of_its_depth(monkeypatch):
    """The familiarity note stays out of the fold: on a projector too, an everyday sentence is said to be unlike
    what the model learned from, above the view."""
    at = from_url(monkeypatch, s="Ich habe heute keine Zeit.", view="walk", present="1")
    assert not at.exception
    assert not at.expander[0].warning  # the fold holds no note
    assert any("unlike anything the model learned from" in shown(w.value) for w in at.warning)
