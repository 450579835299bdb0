"""model/batching.py: many threads translating at once get, each, what translating alone gives; heavy
computations take turns."""

import threading
import time

import numpy as np
import pytest

from conftest import GERMAN, seeded_translator
from model.batching import BatchingTranslator, TakeTurns
from model.errors import InputError

SENTENCES = [" ".join(GERMAN[4 + (i * 7 + j * 3) % 19] for j in range(2 + i % 9)) for i in range(24)]


def run_together(batcher, jobs):
    """Each job (sentence, heads_off) in its own thread, released together; results (or errors) in order."""
    out, start = [None] * len(jobs), threading.Barrier(len(jobs))

    def one(i, sentence, heads_off):
        start.wait()
        try:
            out[i] = batcher.translate(sentence, heads_off)
        except InputError as e:
            out[i] = e
    threads = [threading.Thread(target=one, args=(i, *job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def same(a, b):
    assert a.output_tokens == b.output_tokens and a.src_tokens == b.src_tokens
    np.testing.assert_allclose([s.prob for s in a.steps], [s.prob for s in b.steps], atol=1e-5)
    for x, y in zip((a.encoder_attentions, a.decoder_attentions, a.cross_attentions),
                    (b.encoder_attentions, b.decoder_attentions, b.cross_attentions)):
        np.testing.assert_allclose(x, y, atol=1e-5)


def test_threads_at_once_share_batches_and_each_gets_its_own_translation(monkeypatch):
    tr = seeded_translator()
    batcher = BatchingTranslator(tr)
    specs = ["", "enc.0.1", "", "cross.1"]  # two head masks, in the same batches
    jobs = [(s, specs[i % len(specs)]) for i, s in enumerate(SENTENCES)]
    calls, real = [], tr.translate_batch
    monkeypatch.setattr(tr, "translate_batch", lambda sentences, **kw: calls.append(kw["heads_off"]) or
                        real(sentences, **kw))
    got = run_together(batcher, jobs)
    monkeypatch.setattr(tr, "translate_batch", real)
    for (sentence, heads_off), result in zip(jobs, got):
        same(result, tr.translate(sentence, heads_off=heads_off))  # the other route: alone, no batcher
    assert sum(batcher.batches) == len(jobs) and max(batcher.batches) > 1  # they really went together
    assert len(calls) == len(batcher.batches)  # one decoding a batch, whatever heads its callers switched off
    assert any(len(set(c)) > 1 for c in calls)
    assert len({r.text for r in got}) > 5  # different sentences, different outputs: a mix-up would show


def test_a_bad_request_fails_alone():
    tr = seeded_translator()
    batcher = BatchingTranslator(tr)
    got = run_together(batcher, [("   ", ""), (SENTENCES[0], ""), (SENTENCES[1], "enc.9.9"), (SENTENCES[2], "")])
    assert isinstance(got[0], InputError) and isinstance(got[2], InputError)
    same(got[1], tr.translate(SENTENCES[0]))
    same(got[3], tr.translate(SENTENCES[2]))


def test_an_error_inside_a_batch_reaches_its_callers_and_the_worker_goes_on(monkeypatch):
    tr = seeded_translator()
    batcher = BatchingTranslator(tr)
    real = tr.translate_batch

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")
    monkeypatch.setattr(tr, "translate_batch", broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        batcher.translate(SENTENCES[0])
    monkeypatch.setattr(tr, "translate_batch", real)
    same(batcher.translate(SENTENCES[0]), tr.translate(SENTENCES[0]))


def identical(got, want):
    """Bit for bit: tokens, probabilities and every map."""
    assert got.output_tokens == want.output_tokens and [s.prob for s in got.steps] == [s.prob for s in want.steps]
    for kind in ("enc", "dec", "cross"):
        np.testing.assert_array_equal(got.maps(kind), want.maps(kind))


def test_one_batch_with_a_head_mask_per_row():
    """Sentences with different heads switched off decode as one batch, each row with its own mask. Two routes: each
    row against its sentence translated alone with its spec (1e-5); and bit for bit against the same batch decoded
    under one mask for every row, its spec's (an all-ones row is no mask: docs/contract.md, Head masks)."""
    tr = seeded_translator()
    specs = ["", "enc.0.1", "cross.1", "dec.1.0,enc.1"]
    sentences = SENTENCES[:12]
    rows = [specs[i % len(specs)] for i in range(len(sentences))]
    got = tr.translate_batch(sentences, heads_off=rows)
    for sentence, spec, result in zip(sentences, rows, got):
        same(result, tr.translate(sentence, heads_off=spec))
    for spec in specs:
        everyone = tr.translate_batch(sentences, heads_off=spec)
        for i in range(len(sentences)):
            if rows[i] == spec:
                identical(got[i], everyone[i])
    assert len({tuple(r.output_tokens) for r in got}) > 3  # different outputs: a mix-up of rows would show
    assert tr.translate_batch(sentences[:3], heads_off=["", "", None])[0].text == tr.translate(sentences[0]).text
    with pytest.raises(ValueError, match="2 head specs for 3 sentences"):
        tr.translate_batch(sentences[:3], heads_off=["", "enc.0.1"])


def test_heavy_computations_take_turns_first_come_first_served():
    """At most one holder at a time; the order is the order of asking; a waiter hears how many are ahead,
    fewer and fewer; a waiter that gives up leaves the queue; a failing holder frees its turn."""
    turns, log, ahead_seen = TakeTurns(at_once=1), [], {}
    inside, most = [0], [0]
    lock = threading.Lock()
    first_in = threading.Event()

    def job(name, hold):
        def waiting(ahead):
            ahead_seen.setdefault(name, []).append(ahead)
        with turns.turn(waiting):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                log.append(name)
            first_in.set()
            time.sleep(hold)
            with lock:
                inside[0] -= 1

    first = threading.Thread(target=job, args=("a", 0.6))
    first.start()
    first_in.wait()
    threads = []
    for name in "bcd":  # queued in this order, each while the others wait
        threads.append(threading.Thread(target=job, args=(name, 0.05)))
        threads[-1].start()
        time.sleep(0.1)
    for t in [first, *threads]:
        t.join()
    assert log == ["a", "b", "c", "d"] and most[0] == 1 and turns.busy == 0
    assert ahead_seen["d"][0] == 3 and ahead_seen["d"] == sorted(ahead_seen["d"], reverse=True)
    assert ahead_seen["a"] == [0] and all(seen[-1] == 0 for seen in ahead_seen.values())  # "computing now", once

    def gives_up(ahead):
        raise RuntimeError("the session closed")

    with turns.turn():
        with pytest.raises(RuntimeError):
            with turns.turn(gives_up):
                pass
        assert turns.busy == 1  # only the holder: the one that gave up left the queue
    with pytest.raises(ValueError):
        with turns.turn():
            raise ValueError("the computation failed")
    with turns.turn():  # and the turn was given back
        assert turns.busy == 1


def test_sessions_take_turns_and_a_session_holds_one_turn_at_a_time():
    """A session that keeps asking goes behind every session not served since: a newcomer waits only for the
    computation running, not for the ones queued before it (first come first served made it wait for all); a
    session never holds two turns, even with a turn free; the ahead counts follow the order of serving."""
    turns, log, ahead_seen = TakeTurns(at_once=1), [], {}
    first_in, lock = threading.Event(), threading.Lock()

    def job(name, who, hold):
        with turns.turn(lambda ahead: ahead_seen.setdefault(name, []).append(ahead), who=who):
            with lock:
                log.append(name)
            first_in.set()
            time.sleep(hold)

    threads = [threading.Thread(target=job, args=("x1", "visitor", 0.6))]
    threads[0].start()
    first_in.wait()
    for name, who in (("x2", "visitor"), ("y1", "other visitor"), ("x3", "visitor"), ("s1", "student")):
        threads.append(threading.Thread(target=job, args=(name, who, 0.05)))
        threads[-1].start()
        time.sleep(0.1)
    for t in threads:
        t.join()
    # y1 and s1 have never been served: before x2 and x3, whose session just was; then the visitor's in turn
    assert log == ["x1", "y1", "s1", "x2", "x3"], log
    assert ahead_seen["s1"][0] == 2  # x1 running, y1 before it; never x2 (asked earlier, served later)
    assert ahead_seen["x2"][0] == 1 and max(ahead_seen["x2"]) == 3  # y1 and s1 went ahead of it

    two = TakeTurns(at_once=2)
    with two.turn(who="visitor"):
        asked = threading.Event()
        got = []
        t = threading.Thread(target=lambda: [asked.set(), two.turn(who="visitor").__enter__(), got.append(1)])
        t.start()
        asked.wait()
        time.sleep(0.4)
        assert not got and two.busy == 2  # a second turn free, but not for the same session
        with two.turn(who="student"):  # another session takes it at once
            assert two.busy == 3
    t.join(timeout=5)
    assert got == [1]


def test_the_page_names_the_session_that_asks():
    """views/calls.HEAVY asks Streamlit's script context which session runs the thread; no context: no session."""
    from views.calls import HEAVY, session_id

    assert HEAVY.asker is session_id and session_id() is None


def test_a_long_batch_gives_way_to_short_sentences():
    """A long sentence (past the lane's limit, here 10 tokens for the tiny model's 24 positions) decodes in the long
    lane; a short sentence asked meanwhile is decoded while the long batch waits between its steps (no step of it
    runs during the short batch), and comes back first. Both results are bit for bit what each gives alone."""
    tr = seeded_translator()
    batcher = BatchingTranslator(tr, long_tokens=10)
    long_sentence = " ".join(GERMAN[4 + i % 19] for i in range(20))
    short = SENTENCES[3]
    steps, during, started = [0], [], threading.Event()
    real = tr.translate_batch

    def watched(sentences, pause=None, **kw):
        if pause is None:  # the short lane: how many long steps ran while it decoded
            before = steps[0]
            out = real(sentences, **kw)
            during.append(steps[0] - before)
            return out

        def slow_pause():
            pause()
            steps[0] += 1
            started.set()
            time.sleep(0.01)  # a long step, as on a slow machine
        return real(sentences, pause=slow_pause, **kw)
    tr.translate_batch = watched
    done = {}
    t = threading.Thread(target=lambda: done.setdefault("long", batcher.translate(long_sentence)))
    t.start()
    started.wait()
    got_short = batcher.translate(short)
    long_done_then = "long" in done
    t.join(timeout=60)
    del tr.translate_batch
    assert not long_done_then and during == [0]
    assert batcher.lanes == ["short", "long"] and batcher.batches == [1, 1]
    identical(got_short, tr.translate(short))
    identical(done["long"], tr.translate(long_sentence))
    assert steps[0] == len(done["long"].steps) > 3  # a step after each pause: the short one came back mid-way


def test_a_long_batch_takes_sentences_up_to_its_token_budget():
    from model.batching import LONG_BUDGET, batch_size

    assert batch_size([5, 6, 7], 32, None) == 3 and batch_size([5] * 40, 32, None) == 32
    assert batch_size([100, 100, 100], 32, 256) == 2 and batch_size([300, 10], 32, 256) == 1  # one at least
    assert batch_size([98] * 5, 32, LONG_BUDGET) == 2  # two visitor sessions' 97-token sentences (+<eos>) at most


def test_a_light_session_takes_the_spare_turn_and_a_busy_one_waits():
    """With one usual turn and one spare: a session that has held turns for longer than light_seconds lately waits
    for the usual turn; a session that has not (a student) starts at once in the spare one, beside the computation
    running, and never waits for it to end."""
    turns = TakeTurns(at_once=1, spare=1, light_seconds=0.3, window=60)
    with turns.turn(who="busy visitor"):
        time.sleep(0.4)  # now over light_seconds: no longer light
    assert turns.held("busy visitor", time.monotonic()) >= 0.4
    events, seen, lock = [], {}, threading.Lock()
    holding = threading.Event()

    def job(who, hold):
        with turns.turn(lambda ahead: seen.setdefault(who, []).append(ahead), who=who):
            with lock:
                events.append(("start", who))
            holding.set()
            time.sleep(hold)
        with lock:
            events.append(("end", who))

    long_one = threading.Thread(target=job, args=("other visitor", 1.0))
    long_one.start()
    holding.wait()
    busy = threading.Thread(target=job, args=("busy visitor", 0.05))
    busy.start()
    time.sleep(0.3)
    student = threading.Thread(target=job, args=("student", 0.05))
    student.start()
    for t in (long_one, busy, student):
        t.join()
    order = [f"{what} {who}" for what, who in events]
    assert order.index("start student") < order.index("end other visitor") < order.index("start busy visitor"), order
    assert seen["student"] == [0] and max(seen["busy visitor"]) >= 1

    no_spare = TakeTurns(at_once=1, light_seconds=0.3, window=60)  # without a spare turn: everyone waits
    with no_spare.turn(who="a"):
        t = threading.Thread(target=lambda: no_spare.turn(who="student").__enter__())
        t.start()
        time.sleep(0.3)
        assert no_spare.busy == 2 and t.is_alive()
    t.join(timeout=5)
