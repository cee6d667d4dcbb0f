"""Dynamic batching: one thread owns the model and translates the sentences that arrive together as
one batch, bounded in size and in how long its first sentence waits for others.

Callers (the web layer) get a concurrent.futures.Future per sentence and never wait on the model
themselves. A future cancelled before its batch starts (its client went away) is left out.

That thread is the only one to run the model's torch code, its loading included (``ModelThread``):
torch's CPU builds parallelize with GNU OpenMP, which keeps a team of threads for every thread that
has run a parallel region, and once its threads outnumber the cores it stops spinning between
regions and puts them to sleep. Loaded in the main thread and run in another, the model translated
batches of 16 sentences at 85 sentences/s instead of 106 (docs/serving.md).
"""

import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from bahdanau_plugin.errors import PluginError

from .translator import Sentence

_STOP = object()


class ServerBusy(PluginError):
    """Too many sentences are waiting already."""


@dataclass
class _Job:
    sentence: Sentence
    future: Future


class ModelThread:
    """One thread that runs the functions given to ``call`` one after the other. A daemon: a server
    that ends without stopping its worker does not hang at exit."""

    def __init__(self):
        self._calls: queue.Queue = queue.Queue()
        threading.Thread(target=self._run, name="bahdanau-serve model", daemon=True).start()

    def call(self, function: Callable, *args, **kwargs) -> Future:
        """function(*args, **kwargs) run in this thread after the calls before it: a future."""
        future: Future = Future()
        self._calls.put((future, function, args, kwargs))
        return future

    def _run(self) -> None:
        while True:
            future, function, args, kwargs = self._calls.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args, **kwargs))
                except BaseException as error:  # the caller gets it from the future
                    future.set_exception(error)


class BatchingWorker:
    """translate(sentences of one beam size) -> one result or exception per sentence, run in the
    model's thread (by default one of the worker's own) on batches of at most max_batch_sentences,
    gathered for at most max_wait_s after the first one arrives."""

    def __init__(
        self,
        translate: Callable[[Sequence[Sentence]], list],
        max_batch_sentences: int = 64,
        max_wait_s: float = 0.02,
        max_waiting: int = 1024,
        model_thread: Optional[ModelThread] = None,
    ):
        self._translate = translate
        self.max_batch_sentences = max_batch_sentences
        self.max_wait_s = max_wait_s
        self._jobs: queue.Queue = queue.Queue(max_waiting)
        self._model_thread = model_thread or ModelThread()
        self._running: Optional[Future] = None

    def start(self) -> None:
        self._running = self._model_thread.call(self._run)

    def stop(self) -> None:
        """Translate what is already waiting, then return the model's thread."""
        self._jobs.put(_STOP)
        self._running.result()

    def submit(self, sentence: Sentence) -> Future:
        future: Future = Future()
        try:
            self._jobs.put_nowait(_Job(sentence, future))
        except queue.Full:
            raise ServerBusy(
                f"{self._jobs.maxsize:,} sentences are already waiting to be translated: try again "
                "in a moment"
            ) from None
        return future

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch, stopping = self._next_batch()
            started = [job for job in batch if job.future.set_running_or_notify_cancel()]
            for jobs in _by_beam(started).values():
                self._translate_jobs(jobs)

    def _next_batch(self) -> Tuple[List[_Job], bool]:
        """The next batch, and whether the worker is to stop after it."""
        first = self._jobs.get()
        if first is _STOP:
            return [], True
        batch = [first]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch_sentences:
            try:
                job = self._jobs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if job is _STOP:
                return batch, True
            batch.append(job)
        return batch, False

    def _translate_jobs(self, jobs: List[_Job]) -> None:
        try:
            results = self._translate([job.sentence for job in jobs])
        except (
            Exception
        ) as error:  # one failed batch answers its requests with the error; the worker goes on
            results = [error] * len(jobs)
        for job, result in zip(jobs, results):
            if isinstance(result, Exception):
                job.future.set_exception(result)
            else:
                job.future.set_result(result)


def _by_beam(jobs: List[_Job]) -> Dict[int, List[_Job]]:
    """fairseq searches a batch with one beam size."""
    groups: Dict[int, List[_Job]] = {}
    for job in jobs:
        groups.setdefault(job.sentence.beam, []).append(job)
    return groups
