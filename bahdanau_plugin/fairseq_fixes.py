"""Fixes for fairseq 0.12 behaviour that loses sentences or fails runs, applied when the plugin is
imported.

fairseq's ``data_utils.batch_by_size`` drops the last batch whenever its size is not a multiple of
``--required-batch-size-multiple`` (8 by default), so fairseq-generate silently skips up to 7 test
sentences (fairseq issue #5036). The paper's evaluation must translate every test sentence, so the
plugin hands the dropped sentences back as one final batch, as fairseq did before that change.
"""

import atexit
import functools
import io
import sys
import threading

import numpy as np
from fairseq.data import data_utils, iterators

# How long the interpreter's exit waits for a background loader to finish the batch it is reading.
LOADER_EXIT_TIMEOUT_S = 10


def _keeping_last_batch(batch_by_size):
    @functools.wraps(batch_by_size)
    def wrapper(indices, num_tokens_fn, num_tokens_vec=None, max_tokens=None, max_sentences=None,
                required_batch_size_multiple=1, fixed_shapes=None):
        if not isinstance(indices, np.ndarray):
            indices = np.fromiter(indices, dtype=np.int64, count=-1)
        batches = batch_by_size(indices, num_tokens_fn, num_tokens_vec, max_tokens,
                                max_sentences, required_batch_size_multiple, fixed_shapes)
        batched = sum(len(batch) for batch in batches)
        if fixed_shapes is None and batched < len(indices):
            batches.append(indices[batched:])  # batches are consecutive runs of indices
        return batches

    wrapper.keeps_last_batch = True
    return wrapper


def keep_last_batch() -> None:
    if not getattr(data_utils.batch_by_size, "keeps_last_batch", False):
        data_utils.batch_by_size = _keeping_last_batch(data_utils.batch_by_size)


def tolerate_invalid_utf8_input() -> None:
    """fairseq-interactive reads sys.stdin; under a strict UTF-8 decoder (PYTHONIOENCODING=utf-8,
    say) one line of invalid bytes ends the whole session. Undecodable bytes become U+FFFD instead,
    which the dictionary maps to <unk>, and the line is translated like any other."""
    if isinstance(sys.stdin, io.TextIOWrapper) and sys.stdin.errors == "strict":
        sys.stdin.reconfigure(errors="replace")


class _ExitGate:
    """A region (``with gate:``) that threads may enter until the interpreter starts exiting;
    closing waits for the threads inside to leave, and threads that come later wait for good."""

    def __init__(self):
        self._condition = threading.Condition()
        self._closed = False
        self._inside = 0

    def __enter__(self) -> None:
        with self._condition:
            self._condition.wait_for(lambda: not self._closed)
            self._inside += 1

    def __exit__(self, *exception) -> None:
        with self._condition:
            self._inside -= 1
            self._condition.notify_all()

    def close(self, timeout: float) -> None:
        with self._condition:
            self._closed = True
            self._condition.wait_for(lambda: self._inside == 0, timeout)


_LOADING = _ExitGate()
_END = object()


def _items_until_exit(source):
    """source's items, each read inside the gate."""
    with _LOADING:
        iterator = iter(source)
    while True:
        with _LOADING:
            item = next(iterator, _END)
        if item is _END:
            return
        yield item


def _reading_until_exit(run):
    @functools.wraps(run)
    def wrapper(consumer):
        consumer._source = _items_until_exit(consumer._source)
        run(consumer)

    wrapper.stops_at_exit = True
    return wrapper


def stop_background_loading_at_exit() -> None:
    """fairseq reads batches ahead in a daemon thread (``BackgroundConsumer``) that is still running
    when training stops before the end of an epoch (--max-update). If the interpreter exits while
    that thread is inside one of torch's operations, the thread is ended on its way back and
    libstdc++ aborts the whole process ("terminate called without an active exception", exit code
    134) after the checkpoints are saved. At exit, the thread now finishes the batch it is reading
    and then waits, outside torch, until the process ends."""
    consumer = iterators.BackgroundConsumer
    if not getattr(consumer.run, "stops_at_exit", False):
        consumer.run = _reading_until_exit(consumer.run)
        atexit.register(_LOADING.close, LOADER_EXIT_TIMEOUT_S)
