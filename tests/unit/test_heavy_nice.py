"""A session that is not light computes its heavy turn at a higher nice value (model/batching.py TakeTurns
heavy_nice), so that a light session's turn beside it gets the cores; a light one keeps its own."""

import os
import sys
import threading

import pytest

from model.batching import TakeTurns


def nice_inside(turns: TakeTurns, who: str) -> tuple[int, int]:
    """(this new thread's nice value before the turn, inside it)."""
    seen = []

    def run():
        tid = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, tid)
        with turns.turn(who=who):
            seen.append((before, os.getpriority(os.PRIO_PROCESS, tid)))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return seen[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's")
def test_a_heavy_session_computes_nicer_and_a_light_one_does_not():
    turns = TakeTurns(light_seconds=0.05, heavy_nice=5)
    before, inside = nice_inside(turns, "student")  # never served: light
    assert inside == before
    with turns.turn(who="visitor"):
        threading.Event().wait(0.1)  # the visitor holds turns longer than light_seconds
    before, inside = nice_inside(turns, "visitor")
    assert inside == min(19, before + 5)
    before, inside = nice_inside(turns, "student")  # the student stays light
    assert inside == before
    before, inside = nice_inside(TakeTurns(light_seconds=0.0), "anyone")  # every session heavy, heavy_nice 0
    assert inside == before
