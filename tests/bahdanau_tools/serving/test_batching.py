"""The batching worker, with a stand-in for the model that records the batches it is given."""

import itertools
import threading
import time
from concurrent.futures import CancelledError

import pytest

from bahdanau_tools.serving.batching import BatchingWorker, ModelThread, ServerBusy
from bahdanau_tools.serving.translator import Sentence

RESULT_TIMEOUT_S = 10


def sentence(text, beam=5, tokens=1):
    """A sentence named text, of that many tokens."""
    return Sentence((text,) + ("x",) * (tokens - 1), beam=beam)


def text(sentence):
    return sentence.tokens[0]


def submit_each(worker, *sentences):
    """Each sentence a request of its own: their futures."""
    return [future for one in sentences for future in worker.submit([one])]


class RecordingModel:
    """Translates a sentence into its text upside down; remembers every batch; can be held."""

    def __init__(self):
        self.batches = []
        self.release = threading.Event()
        self.release.set()

    def __call__(self, sentences):
        self.release.wait()
        self.batches.append([text(sentence) for sentence in sentences])
        return [text(sentence)[::-1] for sentence in sentences]


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
    futures = submit_each(worker, *(sentence(f"s{number}") for number in range(10)))
    assert _results(futures) == [f"{number}s" for number in range(10)]
    assert model.batches == [[f"s{number}" for number in range(10)]]


def test_a_batch_holds_at_most_max_batch_sentences(model, running):
    model.release.clear()  # the first batch waits, so the rest queue up behind it
    worker = running(model, max_batch_sentences=4, max_wait_s=0.2)
    futures = submit_each(worker, *(sentence(f"s{number}") for number in range(10)))
    model.release.set()
    _results(futures)
    assert [len(batch) for batch in model.batches] == [4, 4, 2]


def test_a_batch_holds_at_most_max_batch_beam_tokens_padded_to_its_longest(model, running):
    worker = running(model, max_batch_beam_tokens=60, max_wait_s=0.2)
    futures = worker.submit(
        [sentence("short", tokens=2), sentence("long", tokens=6), sentence("next", tokens=2)]
    )
    _results(futures)
    # short and long: 2 x 6 tokens x beam 5 = 60; with next, 3 x 6 x 5 = 90
    assert model.batches == [["short", "long"], ["next"]]


def test_a_sentence_over_max_batch_beam_tokens_is_translated_alone(model, running):
    worker = running(model, max_batch_beam_tokens=10, max_wait_s=0.2)
    futures = worker.submit([sentence("long", tokens=100), sentence("short")])
    assert _results(futures) == ["gnol", "trohs"]
    assert model.batches == [["long"], ["short"]]


def test_a_sentence_alone_waits_no_longer_than_max_wait(model, running):
    worker = running(model, max_wait_s=0.05)
    start = time.monotonic()
    (future,) = worker.submit([sentence("alone")])
    assert future.result(RESULT_TIMEOUT_S) == "enola"
    assert time.monotonic() - start < 1.0


def test_sentences_of_different_beams_are_translated_in_separate_batches(model, running):
    worker = running(model, max_wait_s=0.5)
    futures = submit_each(worker, sentence("a", beam=5), sentence("b", beam=2), sentence("c", 5))
    _results(futures)
    assert sorted(model.batches) == [["a", "c"], ["b"]]


def test_a_request_that_arrives_while_a_large_one_is_translated_waits_for_one_batch_of_it(
    model, running
):
    model.release.clear()
    worker = running(model, max_batch_sentences=1, max_wait_s=0.0)
    large = worker.submit([sentence(f"large{number}") for number in range(3)])
    time.sleep(0.2)  # the worker holds large0
    (small,) = worker.submit([sentence("small")])
    model.release.set()
    _results([*large, small])
    assert model.batches == [["large0"], ["small"], ["large1"], ["large2"]]


def test_waiting_requests_lead_a_batch_in_turn(model, running):
    model.release.clear()
    worker = running(model, max_batch_sentences=1, max_wait_s=0.0)
    (held,) = worker.submit([sentence("held")])
    time.sleep(0.2)  # the worker holds it; the others wait in line
    large = worker.submit([sentence(f"large{number}") for number in range(3)])
    a, b = submit_each(worker, sentence("a"), sentence("b"))
    model.release.set()
    _results([held, *large, a, b])
    assert model.batches == [["held"], ["large0"], ["a"], ["b"], ["large1"], ["large2"]]


def test_a_batch_is_filled_with_the_sentences_of_the_requests_after_its_leader(model, running):
    model.release.clear()
    worker = running(model, max_batch_sentences=3, max_wait_s=0.0)
    (held,) = worker.submit([sentence("held")])
    time.sleep(0.2)
    futures = worker.submit([sentence("a1"), sentence("a2")])
    futures += worker.submit([sentence("b1"), sentence("b2")])
    model.release.set()
    _results([held, *futures])
    assert model.batches == [["held"], ["a1", "a2", "b1"], ["b2"]]


def test_a_cancelled_sentence_is_not_translated(model, running):
    model.release.clear()
    worker = running(model, max_wait_s=0.0)
    (first,) = worker.submit([sentence("first")])
    time.sleep(0.2)  # the worker holds "first"
    left, kept = submit_each(worker, sentence("left"), sentence("kept"))
    assert left.cancel()
    model.release.set()
    assert _results([first, kept]) == ["tsrif", "tpek"]
    with pytest.raises(CancelledError):
        left.result(RESULT_TIMEOUT_S)
    assert all("left" not in batch for batch in model.batches)


def test_a_batch_that_fails_answers_each_sentence_with_the_error_and_the_worker_goes_on(running):
    calls = itertools.count()

    def failing_first(sentences):
        if next(calls) == 0:
            raise RuntimeError("out of memory")
        return [text(sentence) for sentence in sentences]

    worker = running(failing_first, max_wait_s=0.2)
    futures = submit_each(worker, sentence("a"), sentence("b"))
    for future in futures:
        with pytest.raises(RuntimeError, match="out of memory"):
            future.result(RESULT_TIMEOUT_S)
    assert _results(worker.submit([sentence("c")])) == ["c"]


def test_a_request_that_would_overfill_the_queue_is_refused_whole_saying_the_server_is_busy(
    model, running
):
    model.release.clear()
    worker = running(model, max_wait_s=0.0, max_waiting=3)
    worker.submit([sentence("held")])
    time.sleep(0.2)  # the worker holds it; two more wait
    waiting = worker.submit([sentence("a"), sentence("b")])
    with pytest.raises(ServerBusy, match="2 sentences are already waiting"):
        worker.submit([sentence("c"), sentence("d")])
    model.release.set()
    assert _results(waiting) == ["a", "b"]
    assert all("c" not in batch for batch in model.batches)


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
    assert _results(worker.submit([sentence("ab")])) == ["ba"]
    worker.stop()
    assert translated_in == [loaded_in]


def test_a_stopped_worker_gives_the_model_thread_back(model):
    model_thread = ModelThread()
    worker = BatchingWorker(model, model_thread=model_thread)
    worker.start()
    worker.stop()
    assert model_thread.call(lambda: "free").result(RESULT_TIMEOUT_S) == "free"
