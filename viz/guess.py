"""A learner's guess marked on the picture it was asked about (views/guess.py asks before the picture is shown)."""

from model.i18n import _

GUESS_COLOR = "#d62728"  # the guess: dashed red (on both themes' backgrounds and every map colour)
ANSWER_COLOR = "#2ca02c"  # the answer: solid green


def mark_guess(fig, guess: tuple | None, answer: tuple, xaxis: str = "x"):
    """Outline the cell of the learner's guess and of the right answer on a figure whose axes are positions 0, 1, 2,
    ... (viz.attention_heatmap): (x, y) each; x None outlines the whole row y (viz.candidates_bar's bars). One outline,
    "your guess: right", when they are the same. xaxis: the subplot's ("x3" for viz.score_chain's weights). Returns
    the figure."""
    marks = [(answer, ANSWER_COLOR, "solid", _("your guess: right") if guess == answer else _("the answer"))]
    if guess is not None and guess != answer:
        marks.append((guess, GUESS_COLOR, "dash", _("your guess")))
    for ((x, y), color, dash, text), below in zip(marks, (False, True)):  # the guess's label below the answer's
        row = x is None  # the whole row: from the plot's left edge to its right
        fig.add_shape(type="rect", x0=0 if row else x - 0.5, x1=1 if row else x + 0.5, y0=y - 0.45, y1=y + 0.45,
                      xref=f"{xaxis} domain" if row else xaxis, yref="y", line=dict(color=color, width=3, dash=dash),
                      name=text)
        fig.add_annotation(x=0.75 if row else x, y=y, xref=f"{xaxis} domain" if row else xaxis, yref="y", text=text,
                           showarrow=not row, arrowcolor=color, ax=0, ay=28 if below else -28,
                           font=dict(color=color, size=12), bgcolor="rgba(255,255,255,0.85)")
    return fig
