"""Learn by predicting: guess first (?guess=1) hides a picture until its question is answered and marks the answer on
it; the exercises page judges an answer right or wrong by the model's own numbers; the presenter layout (?present=1)
puts the walk's picture on a projector's screen."""

from page.test_lesson import SENTENCE


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
