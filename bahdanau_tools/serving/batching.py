"""Dynamic batching: one thread owns the model and translates the sentences that wait together as
one batch, bounded in sentences, in beam tokens (tokens x beam, padded to the batch's longest) and
in how long its first sentence waits for others.

Callers (the web layer) submit a request's sentences at once and get a concurrent.futures.Future
per sentence; they never wait on the model themselves. A future cancelled before its batch starts
(its client went away) is left out.

The most urgent sentences go first: a request is due at its arrival plus the time its beam tokens
would take at BEAM_TOKENS_PER_S. A small request that arrives while a large one waits is therefore
translated first, and a large one is never passed by requests that arrive after it is due: no
request is stuck behind another, and none waits forever.

That thread is the only one to run the model's torch code, its loading included (``ModelThread``):
torch's CPU builds parallelize with GNU OpenMP, which keeps a team of threads for every thread that
has run a parallel region, and once its threads outnumber the cores it stops spinning between
regions and puts them to sleep. Loaded in the main thread and run in another, the model translated
batches of 16 sentences at 85 sentences/s instead of 106 (docs/serving.md).
"""

import itertools
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

from bahdanau_plugin.errors import PluginError

from .translator import Sentence

# The pace at which a request's beam tokens put off its turn: about what 2 CPU cores translate with
# a Multi30k-sized model (docs/serving.md). Only the order it gives matters, not the time.
BEAM_TOKENS_PER_S = 10_000


class ServerBusy(PluginError):
    """Too many sentences are waiting already."""


@dataclass(order=True)
class _Job:
    due: float  # time.monotonic()
    arrival: int
    sentence: Sentence = field(compare=False)
    future: Future = field(compare=False)


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
        beam_tokens_per_s: float = BEAM_TOKENS_PER_S,
    ):
        self._translate = translate
        self.max_batch_sentences = max_batch_sentences
        self.max_batch_beam_tokens = max_batch_beam_tokens
        self.max_wait_s = max_wait_s
        self.max_waiting = max_waiting
        self.beam_tokens_per_s = beam_tokens_per_s
        self._model_thread = model_thread or ModelThread()
        self._running: Optional[Future] = None
        self._waiting: List[_Job] = []
        self._changed = threading.Condition()
        self._arrivals = itertools.count()
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
        due = time.monotonic() + sum(s.beam_tokens for s in sentences) / self.beam_tokens_per_s
        jobs = [_Job(due, next(self._arrivals), sentence, Future()) for sentence in sentences]
        with self._changed:
            if len(self._waiting) + len(jobs) > self.max_waiting:
                raise ServerBusy(
                    f"{len(self._waiting):,} sentences are already waiting to be translated, and "
                    f"the server holds {self.max_waiting:,} at most: try again in a moment"
                )
            self._waiting.extend(jobs)
            self._changed.notify()
        return [job.future for job in jobs]

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
        already), then the most urgent of them; None when the worker is to stop and none waits."""
        with self._changed:
            self._changed.wait_for(lambda: self._waiting or self._stopping)
            if not self._waiting:
                return None
            self._changed.wait_for(
                lambda: len(self._waiting) >= self.max_batch_sentences or self._stopping,
                timeout=self.max_wait_s,
            )
            batch = self._most_urgent()
            taken = set(map(id, batch))
            self._waiting = [
                job for job in self._waiting if id(job) not in taken and not job.future.cancelled()
            ]
            return batch

    def _most_urgent(self) -> List[_Job]:
        """The most urgent sentence, then the next most urgent of its beam size (fairseq searches
        a batch with one beam) as long as the batch stays within its bounds."""
        batch: List[_Job] = []
        for job in sorted(job for job in self._waiting if not job.future.cancelled()):
            if batch and job.sentence.beam != batch[0].sentence.beam:
                continue
            if batch and (
                len(batch) == self.max_batch_sentences
                or _padded_beam_tokens(batch + [job]) > self.max_batch_beam_tokens
            ):
                break
            batch.append(job)
        return batch

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
