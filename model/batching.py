"""Serving many sessions from one process: greedy translations for many threads at once, in batches that
are fair to short sentences, and heavy computations that take turns, session by session.

Each Streamlit session runs its script in a thread of one process. Translated one at a time, 20
sessions pressing Enter together hold the GIL 20 times for a decode loop of many small torch
calls; as one batch the same 20 sentences decode in about a tenth of the time (bench/load_test.py).
A caller hands its sentence to a worker thread and waits; the worker takes the requests waiting
(up to `max_batch`), runs them through `Translator.translate_batch` as one batch, each row with its
caller's head mask, and hands each caller its own result. A sentence decoded beside others can
differ from one decoded alone by float rounding (~1e-6 in a weight), as in `model.translate`,
which batches too.

Fair to short sentences: a batch decodes until its longest output ends, so one 97-token sentence in
a class's batch made every student wait for its 100 steps. Sentences are split by length into two
lanes, each with its own worker: the short lane (at most LONG_TOKENS source tokens, which 99.9% of
Multi30k's training sentences are) and the long lane. Before each step the long lane gives way: it
waits while the short lane has work, so a short sentence's batch never waits for a long one, nor
shares the cores with it. A long batch holds at most LONG_BUDGET source tokens (one sentence at
least), so one visitor's long sentences go in turn with another's. Why lanes rather than a token
budget alone: a budget splits batches, but a student's batch would still wait behind a long batch
already decoding, for up to its whole length. The lanes change which sentences share a batch and
when a step runs, never what a step computes.

A few views start a computation that holds a core for up to a second or more on a 100-token
sentence (live head importance, contributions, wide beams: bench/heavy_views.py). On 2 cores, two
of them at once would take both cores from the rest of the class: `TakeTurns` runs them one at a
time, session by session (see its docstring), and tells each waiting caller how many are ahead of it.
"""

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count

from .result import Translation

LONG_TOKENS = 32  # source tokens (without <sos>/<eos>) past which a sentence goes to the long lane
LONG_BUDGET = 256  # source tokens in one batch of the long lane (a single longer sentence still goes alone)


def batch_size(lengths: list[int], most: int, budget: int | None) -> int:
    """How many of the waiting requests (their source lengths, oldest first) the next batch takes: at most `most`,
    and with a budget, as many as fit in `budget` tokens, at least one."""
    n = total = 0
    for length in lengths[:most]:
        if budget is not None and n and total + length > budget:
            break
        n, total = n + 1, total + length
    return n


class BatchingTranslator:
    def __init__(self, translator, max_batch: int = 32, long_tokens: int = LONG_TOKENS,
                 long_budget: int = LONG_BUDGET):
        self.translator, self.max_batch = translator, max_batch
        self.long_tokens, self.long_budget = long_tokens, long_budget
        self._pending: dict[str, list[tuple[str, str, Future, int]]] = {"short": [], "long": []}
        self._short_busy = False  # the short lane is decoding a batch
        self._wake = threading.Condition()
        self.batches: list[int] = []  # the size of each batch run, for tests and benchmarks (last 1,000)
        self.lanes: list[str] = []  # the lane of each of those batches
        for lane in self._pending:
            threading.Thread(target=self._work, args=(lane,), name=f"translation batcher ({lane})",
                             daemon=True).start()

    def translate(self, sentence: str, heads_off: str = "") -> Translation:
        """What `Translator.translate(sentence, heads_off=heads_off)` gives; InputError for this caller alone."""
        _, ids, _ = self.translator.source_ids(sentence)  # an unusable sentence fails here, never in a batch
        self.translator.head_mask(heads_off)  # and so does a bad head spec
        length = len(ids) - 2
        done = Future()
        with self._wake:
            self._pending["long" if length > self.long_tokens else "short"].append(
                (sentence, heads_off or "", done, length))
            self._wake.notify_all()
        return done.result()

    def _take(self, lane: str) -> list:
        with self._wake:
            while not self._pending[lane]:
                self._wake.wait()
            queue = self._pending[lane]
            n = batch_size([r[3] for r in queue], self.max_batch, self.long_budget if lane == "long" else None)
            batch, self._pending[lane] = queue[:n], queue[n:]
            if lane == "short":
                self._short_busy = True
            return batch

    def _give_way(self):
        """Called before each step of a long batch: waits while the short lane has a batch or requests."""
        with self._wake:
            while self._short_busy or self._pending["short"]:
                self._wake.wait()

    def _work(self, lane: str):
        pause = self._give_way if lane == "long" else None
        while True:
            batch = self._take(lane)
            try:  # one batch, whatever heads each caller switched off: a mask per row
                results = self.translator.translate_batch([r[0] for r in batch], heads_off=[r[1] for r in batch],
                                                          pause=pause)
            except BaseException as e:  # every waiting caller hears of it; the worker goes on
                for r in batch:
                    r[2].set_exception(e)
            else:
                for r, result in zip(batch, results):
                    r[2].set_result(result)
            finally:
                with self._wake:
                    if lane == "short":
                        self._short_busy = False
                    self.batches, self.lanes = [*self.batches[-999:], len(batch)], [*self.lanes[-999:], lane]
                    self._wake.notify_all()


@dataclass(eq=False)
class _Ticket:
    who: object  # the session that asked
    order: int  # when it asked
    started: float = 0.0  # time.monotonic() when its turn came


def nicer(steps: int):
    """This thread's nice value `steps` higher (Linux keeps one per thread), up to 19; nothing where it cannot."""
    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        if now < 19:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, now + steps))
    except (OSError, AttributeError):  # not Linux, or not allowed
        pass


class TakeTurns:
    """At most `at_once` computations at a time, plus `spare` more for light sessions; each session (`who`) holds or
    waits for at most one at a time; when a turn is free, the waiting session served longest ago goes next (a session
    never served first; ties: first come first served).

    A light session is one that has held turns for less than `light_seconds` in the last `window` seconds: a student
    opening Contributions, not a visitor keeping the heaviest views busy on long sentences. A light session's turn
    starts in a spare one when the usual turns are taken, so it never waits for a long computation to end (one
    faithfulness or patching run on a 100-token sentence holds its turn for a minute and more); the sessions that
    keep the turns busy share the usual ones. A queue in the order of asking made a student wait for every
    computation four such sessions had queued (93 s instead of 0.9 s in a red-team run). What the queue holds is
    bounded by the sessions: one waiting ticket (no data) each, and the caller's own arguments.

    Turns do not nest: a holder that asks again waits for itself.

    `heavy_nice`: a session that is not light computes its turn `heavy_nice` steps nicer (Linux: the calling thread's
    own nice value, where torch computes with one thread, as the page's does), so a light session's turn beside it
    gets the larger share of the cores; the thread stays nicer after the turn (only root may lower it again), which
    on the page is the rest of that heavy session's run."""

    def __init__(self, at_once: int = 1, asker: Callable[[], object] | None = None, spare: int = 0,
                 light_seconds: float = 10.0, window: float = 600.0, heavy_nice: int = 0):
        """asker: called in the asking thread, says which session asks when `turn` is not told (None: nobody's)."""
        self.at_once, self.asker, self.spare = at_once, asker, spare
        self.light_seconds, self.window, self.heavy_nice = light_seconds, window, heavy_nice
        self._waiting: list[_Ticket] = []
        self._running: list[_Ticket] = []
        self._served: dict = {}  # who -> when it was last given a turn (the ticket counter's value)
        self._held: dict = {}  # who -> [(start, end)] of its turns that ended in the last window
        self._counter = count()
        self._changed = threading.Condition()

    def _next(self) -> list[_Ticket]:
        """The waiting tickets in the order they will be served (before any new asker); their sessions not running."""
        running = {t.who for t in self._running}
        ready = [t for t in self._waiting if t.who not in running]
        return sorted(ready, key=lambda t: (self._served.get(t.who, -1), t.order)) + \
            [t for t in self._waiting if t.who in running]

    def held(self, who, now: float) -> float:
        """Seconds `who` held turns in the last window (what is running counted up to now)."""
        since = now - self.window
        spans = [*self._held.get(who, []), *[(t.started, now) for t in self._running if t.who == who]]
        return sum(max(0.0, end - max(start, since)) for start, end in spans)

    def _may_start(self, ticket: _Ticket, order: list[_Ticket]) -> bool:
        if any(t.who == ticket.who for t in self._running):
            return False
        if len(self._running) < self.at_once:
            return order[0] is ticket
        if len(self._running) < self.at_once + self.spare:  # a spare turn: the first light session waiting
            now = time.monotonic()
            light = [t for t in order if self.held(t.who, now) < self.light_seconds]
            return bool(light) and light[0] is ticket
        return False

    @contextmanager
    def turn(self, waiting: Callable[[int], None] | None = None, who: object = None):
        """Wait for this caller's turn, then hold it for the `with` block. While it waits, `waiting(n)` is
        called with the number of computations ahead of it (running, or waiting to be served before it), at most
        every 0.25 s; once its turn has come, `waiting(0)`, so that a page can say at once that the computation
        runs. `who`: the session asking (None: the asker's answer; None again: a caller of its own)."""
        if who is None and self.asker is not None:
            who = self.asker()
        with self._changed:
            ticket = _Ticket(who if who is not None else object(), next(self._counter))
            self._waiting.append(ticket)
        try:
            while True:
                with self._changed:
                    order = self._next()
                    if self._may_start(ticket, order):
                        self._waiting.remove(ticket)
                        heavy = self.held(ticket.who, time.monotonic()) >= self.light_seconds
                        ticket.started = time.monotonic()
                        self._running.append(ticket)
                        self._served[ticket.who] = next(self._counter)
                        break
                    ahead = len(self._running) + order.index(ticket)
                    self._changed.wait(0.25)
                if waiting is not None and ahead:
                    waiting(ahead)
        except BaseException:  # a caller that gives up (its session closed) leaves the queue
            with self._changed:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                self._changed.notify_all()
            raise
        if heavy and self.heavy_nice:
            nicer(self.heavy_nice)
        try:
            if waiting is not None:
                waiting(0)
            yield
        finally:
            with self._changed:
                self._running.remove(ticket)
                now = time.monotonic()
                spans = [(a, b) for a, b in self._held.get(ticket.who, []) if b > now - self.window]
                self._held[ticket.who] = [*spans, (ticket.started, now)]
                if len(self._served) > 10_000:  # sessions long gone: forget the oldest half
                    for who, _ in sorted(self._served.items(), key=lambda kv: kv[1])[:5_000]:
                        self._served.pop(who)
                        self._held.pop(who, None)
                self._changed.notify_all()

    @property
    def busy(self) -> int:
        """Computations running or waiting now."""
        with self._changed:
            return len(self._running) + len(self._waiting)
