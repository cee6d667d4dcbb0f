"""The batching worker, with a stand-in for the model that records the batches it is given."""

import itertools
import threading
import time
from concurrent.futures import CancelledError

import pytest

from bahdanau_tools.serving.batching import BatchingWorker, ModelThread, ServerBusy
from bahdanau_tools.serving.translator import Sentence

RESULT_TIMEOUT_S = 10


class RecordingModel:
    """Translates a sentence into its text upside down; remembers every batch; can be held."""

    def __init__(self):
        self.batches = []
        self.release = threading.Event()
        self.release.set()

    def __call__(self, sentences):
        self.release.wait()
        self.batches.append([sentence.text for sentence in sentences])
        return [
            ValueError(sentence.text) if sentence.text == "bad" else sentence.text[::-1]
            for sentence in sentences
        ]


@pytest.fixture
def model():
    return RecordingModel()


@pytest.fixture
def running():
    """Starts a worker and stops it after the test."""
    workers = []

    def start(model, **options):
        worker = BatchingWorker(model, **options)
        worker.start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


def _results(futures):
    return [future.result(RESULT_TIMEOUT_S) for future in futures]


def test_sentences_that_arrive_together_are_translated_as_one_batch(model, running):
    worker = running(model, max_wait_s=0.5)
    futures = [worker.submit(Sentence(f"s{number}", beam=5)) for number in range(10)]
    assert _results(futures) == [f"{number}s" for number in range(10)]
    assert model.batches == [[f"s{number}" for number in range(10)]]


def test_a_batch_holds_at_most_max_batch_sentences(model, running):
    model.release.clear()  # the first batch waits, so the rest queue up behind it
    worker = running(model, max_batch_sentences=4, max_wait_s=0.2)
    futures = [worker.submit(Sentence(f"s{number}", beam=5)) for number in range(10)]
    model.release.set()
    _results(futures)
    assert [len(batch) for batch in model.batches] == [4, 4, 2]


def test_a_sentence_alone_waits_no_longer_than_max_wait(model, running):
    worker = running(model, max_wait_s=0.05)
    start = time.monotonic()
    assert worker.submit(Sentence("alone", beam=5)).result(RESULT_TIMEOUT_S) == "enola"
    assert time.monotonic() - start < 1.0


def test_sentences_of_different_beams_are_translated_in_separate_batches(model, running):
    worker = running(model, max_wait_s=0.5)
    futures = [
        worker.submit(Sentence(text, beam=beam)) for text, beam in (("a", 5), ("b", 2), ("c", 5))
    ]
    _results(futures)
    assert model.batches == [["a", "c"], ["b"]]


def test_a_cancelled_sentence_is_not_translated(model, running):
    model.release.clear()
    worker = running(model, max_wait_s=0.0)
    first = worker.submit(Sentence("first", beam=5))
    time.sleep(0.2)  # the worker holds "first"
    left = worker.submit(Sentence("left", beam=5))
    kept = worker.submit(Sentence("kept", beam=5))
    assert left.cancel()
    model.release.set()
    assert _results([first, kept]) == ["tsrif", "tpek"]
    with pytest.raises(CancelledError):
        left.result(RESULT_TIMEOUT_S)
    assert all("left" not in batch for batch in model.batches)


def test_a_refused_sentence_gets_its_error_and_the_others_their_translation(model, running):
    worker = running(model, max_wait_s=0.5)
    bad, good = worker.submit(Sentence("bad", beam=5)), worker.submit(Sentence("good", beam=5))
    with pytest.raises(ValueError):
        bad.result(RESULT_TIMEOUT_S)
    assert good.result(RESULT_TIMEOUT_S) == "doog"


def test_a_batch_that_fails_answers_each_sentence_with_the_error_and_the_worker_goes_on(running):
    calls = itertools.count()

    def failing_first(sentences):
        if next(calls) == 0:
            raise RuntimeError("out of memory")
        return [sentence.text for sentence in sentences]

    worker = running(failing_first, max_wait_s=0.2)
    futures = [worker.submit(Sentence(text, beam=5)) for text in ("a", "b")]
    for future in futures:
        with pytest.raises(RuntimeError, match="out of memory"):
            future.result(RESULT_TIMEOUT_S)
    assert worker.submit(Sentence("c", beam=5)).result(RESULT_TIMEOUT_S) == "c"


def test_a_full_queue_refuses_a_sentence_saying_the_server_is_busy(model, running):
    model.release.clear()
    worker = running(model, max_wait_s=0.0, max_waiting=2)
    worker.submit(Sentence("held", beam=5))
    time.sleep(0.2)  # the worker holds it; two more fill the queue
    waiting = [worker.submit(Sentence(text, beam=5)) for text in ("a", "b")]
    with pytest.raises(ServerBusy, match="2 sentences are already waiting"):
        worker.submit(Sentence("c", beam=5))
    model.release.set()
    assert _results(waiting) == ["a", "b"]


def test_the_model_thread_runs_its_calls_in_order_in_one_thread_of_its_own():
    model_thread = ModelThread()
    order = []
    futures = [
        model_thread.call(lambda number=number: order.append(number) or threading.get_ident())
        for number in range(5)
    ]
    threads = set(_results(futures))
    assert order == list(range(5))
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_an_exception_in_a_call_reaches_its_caller_and_the_model_thread_goes_on():
    model_thread = ModelThread()
    with pytest.raises(ZeroDivisionError):
        model_thread.call(lambda: 1 / 0).result(RESULT_TIMEOUT_S)
    assert model_thread.call(lambda: "next").result(RESULT_TIMEOUT_S) == "next"


def test_a_worker_translates_in_the_model_thread_it_is_given(model):
    model_thread = ModelThread()
    loaded_in = model_thread.call(threading.get_ident).result(RESULT_TIMEOUT_S)
    translated_in = []
    worker = BatchingWorker(
        lambda sentences: translated_in.append(threading.get_ident()) or model(sentences),
        model_thread=model_thread,
    )
    worker.start()
    assert _results([worker.submit(Sentence("ab", beam=5))]) == ["ba"]
    worker.stop()
    assert translated_in == [loaded_in]


def test_a_stopped_worker_gives_the_model_thread_back(model):
    model_thread = ModelThread()
    worker = BatchingWorker(model, model_thread=model_thread)
    worker.start()
    worker.stop()
    assert model_thread.call(lambda: "free").result(RESULT_TIMEOUT_S) == "free"
