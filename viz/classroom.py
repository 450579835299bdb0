"""A class's answers to one question (views/classroom.py): a bar per choice and round, the model's answer marked."""

import plotly.graph_objects as go

from model.i18n import _

ROUND_COLORS = {1: "#8c9bb5", 2: "#3b6fb6"}  # the first round pale, the second strong: how the answers moved


def class_votes(options: list[str], counts: dict, answer: int | None) -> go.Figure:
    """Horizontal bars: one per choice for each round in `counts` ({round: [count per choice]}); with `answer` (the
    right choice's index, once revealed) its label says so in words, not in colour alone."""
    mark = _("✓ the model's answer")
    labels = [f"{o} {mark}" if i == answer else o for i, o in enumerate(options)]
    fig = go.Figure()
    for rnd, values in sorted(counts.items()):
        fig.add_bar(y=labels, x=values, orientation="h", name=_("first round") if rnd == 1 else _("second round"),
                    marker_color=ROUND_COLORS[rnd], text=[str(v) for v in values], textposition="outside",
                    hovertemplate="%{y}: %{x} " + _("answers") + "<extra>%{fullData.name}</extra>")
    total = max((sum(v) for v in counts.values()), default=0)
    fig.update_layout(title=_("The class's answers (first and second round)") if len(counts) > 1 else
                      _("The class's answers"),
                      barmode="group", height=120 + 60 * len(options), margin=dict(l=10, r=30, t=50, b=30),
                      font=dict(size=15),  # read off a projector
                      showlegend=len(counts) > 1, legend=dict(orientation="h", y=-0.2),
                      xaxis=dict(title=_("answers"), range=[0, max(1, total) * 1.15], dtick=max(1, total // 5 or 1)),
                      yaxis=dict(autorange="reversed", automargin=True))
    return fig
