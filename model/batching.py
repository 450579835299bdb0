"""Serving many sessions from one process: greedy translations for many threads at once, as one batch,
and heavy computations that take turns.

Each Streamlit session runs its script in a thread of one process. Translated one at a time, 20
sessions pressing Enter together hold the GIL 20 times for a decode loop of many small torch
calls; as one batch the same 20 sentences decode in about a tenth of the time (bench/load_test.py).
A caller hands its sentence to a worker thread and waits; the worker takes every request waiting
(up to `max_batch`), runs them through `Translator.translate_batch` as one batch, each row with its
caller's head mask, and hands each caller its own result. A sentence decoded beside others can
differ from one decoded alone by float rounding (~1e-6 in a weight), as in `model.translate`,
which batches too.

A few views start a computation that holds a core for up to a second or more on a 100-token
sentence (live head importance, contributions, wide beams: bench/heavy_views.py). On 2 cores, two
of them at once would take both cores from the rest of the class: `TakeTurns` runs them one at a
time, first come first served, and tells each waiting caller how many are ahead of it.
"""

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import contextmanager

from .result import Translation


class BatchingTranslator:
    def __init__(self, translator, max_batch: int = 32):
        self.translator, self.max_batch = translator, max_batch
        self._pending: list[tuple[str, str, Future]] = []
        self._wake = threading.Condition()
        self.batches: list[int] = []  # the size of each batch run, for tests and benchmarks (last 1,000)
        threading.Thread(target=self._work, name="translation batcher", daemon=True).start()

    def translate(self, sentence: str, heads_off: str = "") -> Translation:
        """What `Translator.translate(sentence, heads_off=heads_off)` gives; InputError for this caller alone."""
        self.translator.source_ids(sentence)  # an unusable sentence fails here, never inside someone's batch
        self.translator.head_mask(heads_off)  # and so does a bad head spec
        done = Future()
        with self._wake:
            self._pending.append((sentence, heads_off or "", done))
            self._wake.notify()
        return done.result()

    def _work(self):
        while True:
            with self._wake:
                while not self._pending:
                    self._wake.wait()
                batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            try:  # one batch, whatever heads each caller switched off: a mask per row
                results = self.translator.translate_batch([s for s, _, _ in batch], heads_off=[h for _, h, _ in batch])
            except BaseException as e:  # every waiting caller hears of it; the worker goes on
                for _, _, done in batch:
                    done.set_exception(e)
            else:
                for (_, _, done), result in zip(batch, results):
                    done.set_result(result)
            self.batches = [*self.batches[-999:], len(batch)]


class TakeTurns:
    """At most `at_once` holders at a time, in the order they asked; the others wait their turn."""

    def __init__(self, at_once: int = 1):
        self.at_once = at_once
        self._queue: deque = deque()  # tickets waiting, oldest first
        self._running = 0
        self._changed = threading.Condition()

    @contextmanager
    def turn(self, waiting: Callable[[int], None] | None = None):
        """Wait for this caller's turn, then hold it for the `with` block. While it waits, `waiting(n)` is
        called with the number of computations ahead of it (running or queued), at most every 0.25 s; once its turn
        has come, `waiting(0)`, so that a page can say at once that the computation runs."""
        ticket = object()
        with self._changed:
            self._queue.append(ticket)
        try:
            while True:
                with self._changed:
                    if self._queue[0] is ticket and self._running < self.at_once:
                        self._queue.popleft()
                        self._running += 1
                        break
                    ahead = self._running + self._queue.index(ticket)
                    self._changed.wait(0.25)
                if waiting is not None and ahead:
                    waiting(ahead)
        except BaseException:  # a caller that gives up (its session closed) leaves the queue
            with self._changed:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                self._changed.notify_all()
            raise
        try:
            if waiting is not None:
                waiting(0)
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    @property
    def busy(self) -> int:
        """Computations running or waiting now."""
        with self._changed:
            return self._running + len(self._queue)
