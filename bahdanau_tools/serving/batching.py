"""Dynamic batching: one thread owns the model and translates the sentences that wait together as
one batch, bounded in sentences, in beam tokens (tokens x beam, padded to the batch's longest) and
in how long its first sentence waits for others.

Callers (the web layer) submit a request's sentences at once and get a concurrent.futures.Future
per sentence; they never wait on the model themselves. A future cancelled before its batch starts
(its client went away) is left out.

Requests take turns: each batch is led by the next request in line (its sentences first, then
those of the requests after it, to fill the batch), and the request that led goes back in line
behind those that arrived meanwhile. A small request that arrives while a large one is translated
waits for one batch of it, not all of them, and every request advances at each turn.

That thread is the only one to run the model's torch code, its loading included (``ModelThread``):
torch's CPU builds parallelize with GNU OpenMP, which keeps a team of threads for every thread that
has run a parallel region, and once its threads outnumber the cores it stops spinning between
regions and puts them to sleep. Loaded in the main thread and run in another, the model translated
slower than loaded and run in one thread (docs/serving.md, "Design": the measurements).
"""

import queue
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Deque, List, Optional, Sequence

from bahdanau_plugin.errors import PluginError

from .translator import Sentence


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
    """translate(sentences of one beam size) -> their translations, run in the model's thread (by
    default one of the worker's own) on batches of at most max_batch_sentences and
    max_batch_beam_tokens (a sentence alone may be over), gathered for at most max_wait_s."""

    def __init__(
        self,
        translate: Callable[[Sequence[Sentence]], list],
        max_batch_sentences: int = 64,
        max_batch_beam_tokens: int = 8192,
        max_wait_s: float = 0.02,
        max_waiting: int = 1024,
        model_thread: Optional[ModelThread] = None,
    ):
        self._translate = translate
        self.max_batch_sentences = max_batch_sentences
        self.max_batch_beam_tokens = max_batch_beam_tokens
        self.max_wait_s = max_wait_s
        self.max_waiting = max_waiting
        self._model_thread = model_thread or ModelThread()
        self._running: Optional[Future] = None
        self._line: Deque[List[_Job]] = deque()  # requests, each its sentences not yet started
        self._led: List[_Job] = []  # what is left of the request that led the last batch
        self._changed = threading.Condition()
        self._stopping = False

    def start(self) -> None:
        self._running = self._model_thread.call(self._run)

    def stop(self) -> None:
        """Translate what is already waiting, then return the model's thread."""
        with self._changed:
            self._stopping = True
            self._changed.notify()
        self._running.result()

    def submit(self, sentences: Sequence[Sentence]) -> List[Future]:
        """One request's sentences, to translate: a future for each."""
        jobs = [_Job(sentence, Future()) for sentence in sentences]
        with self._changed:
            waiting = self._waiting()
            if waiting + len(jobs) > self.max_waiting:
                raise ServerBusy(
                    f"{waiting:,} sentences are already waiting to be translated, and the server "
                    f"holds {self.max_waiting:,} at most: try again in a moment"
                )
            self._line.append(jobs)
            self._changed.notify()
        return [job.future for job in jobs]

    def _waiting(self) -> int:
        return len(self._led) + sum(map(len, self._line))

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            started = [job for job in batch if job.future.set_running_or_notify_cancel()]
            if started:
                self._translate_jobs(started)

    def _next_batch(self) -> Optional[List[_Job]]:
        """Once a sentence waits, what else arrives within max_wait_s (unless a full batch waits
        already), then the batch of the request whose turn it is; None when the worker is to stop
        and none waits."""
        with self._changed:
            self._changed.wait_for(lambda: self._waiting() or self._stopping)
            if not self._waiting():
                return None
            self._changed.wait_for(
                lambda: self._waiting() >= self.max_batch_sentences or self._stopping,
                timeout=self.max_wait_s,
            )
            return self._in_turn()

    def _in_turn(self) -> List[_Job]:
        """The first request in line leads: its sentences first, then those of the requests after
        it of the same beam size (fairseq searches a batch with one beam), as long as the batch
        stays within its bounds. The request that led the last batch goes back in line first,
        behind the requests that arrived while that batch was translated."""
        if self._led:
            self._line.append(self._led)
        for request in self._line:  # their clients left
            request[:] = [job for job in request if not job.future.cancelled()]
        self._line = deque(request for request in self._line if request)
        if not self._line:
            self._led = []
            return []
        batch: List[_Job] = []
        beam = self._line[0][0].sentence.beam
        for request in self._line:
            if request[0].sentence.beam != beam:
                continue
            while request and not self._full(batch, request[0]):
                batch.append(request.pop(0))
            if request:
                break
        self._led = self._line.popleft()
        self._line = deque(request for request in self._line if request)
        return batch

    def _full(self, batch: List[_Job], job: _Job) -> bool:
        """Whether the batch cannot take the job (a batch takes its first job whatever its size)."""
        return bool(batch) and (
            len(batch) == self.max_batch_sentences
            or _padded_beam_tokens(batch + [job]) > self.max_batch_beam_tokens
        )

    def _translate_jobs(self, jobs: List[_Job]) -> None:
        try:
            results = self._translate([job.sentence for job in jobs])
        except Exception as error:  # a failed batch answers its requests with the error; goes on
            for job in jobs:
                job.future.set_exception(error)
            return
        for job, result in zip(jobs, results):
            job.future.set_result(result)


def _padded_beam_tokens(jobs: List[_Job]) -> int:
    """A batch's cost: fairseq pads its sentences to the longest."""
    return len(jobs) * max(len(job.sentence.tokens) for job in jobs) * jobs[0].sentence.beam
