"""Greedy translations for many threads at once, as one batch (the page's sessions).

Each Streamlit session runs its script in a thread of one process. Translated one at a time, 20
sessions pressing Enter together hold the GIL 20 times for a decode loop of many small torch
calls; as one batch the same 20 sentences decode in about a tenth of the time (bench/load_test.py).
A caller hands its sentence to a worker thread and waits; the worker takes every request waiting
(up to `max_batch`), runs them through `Translator.translate_batch`, one batch per head mask, and
hands each caller its own result. A sentence decoded beside others can differ from one decoded
alone by float rounding (~1e-6 in a weight), as in `model.translate`, which batches too.
"""

import threading
from concurrent.futures import Future

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
            groups: dict[str, list] = {}
            for item in batch:
                groups.setdefault(item[1], []).append(item)
            for heads_off, items in groups.items():
                try:
                    results = self.translator.translate_batch([s for s, _, _ in items], heads_off=heads_off)
                except BaseException as e:  # every waiting caller hears of it; the worker goes on
                    for _, _, done in items:
                        done.set_exception(e)
                    continue
                for (_, _, done), result in zip(items, results):
                    done.set_result(result)
            self.batches = [*self.batches[-999:], len(batch)]
