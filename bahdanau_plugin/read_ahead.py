"""fairseq's read-ahead threads, stopped before a command ends (fairseq_patches.py registers it).

fairseq reads batches ahead of training and translation in a daemon thread of its own (its
BackgroundConsumer, for any --data-buffer-size but 0), which makes them with torch. Where a command
ended while that thread was in torch's C++ code, it now and then aborted after its last line
("terminate called without an active exception", SIGABRT): once Python finalizes, a daemon thread
that takes the GIL back is ended with pthread_exit, whose unwinding through torch's frames that may
not unwind calls std::terminate. A thread waiting for room in its queue waits in Python's lock, out
of torch, where Python ends it harmlessly.
"""

import queue
import sys
import threading
import time

# How long a command waits for the read-ahead threads to finish the batch each is making: a batch
# takes a fraction of a second; one that takes longer (a data loader's worker that hangs) does not
# make the command hang with it, which then ends as it did before.
LONGEST_WAIT_S = 10.0


def read_ahead_threads() -> list:
    """fairseq's read-ahead threads still running in this process."""
    iterators = sys.modules.get("fairseq.data.iterators")
    if iterators is None:  # fairseq never read batches here
        return []
    return [t for t in threading.enumerate() if isinstance(t, iterators.BackgroundConsumer)]


def stop_reading_ahead() -> None:
    """Each read-ahead thread ends after the batch it is making, and this returns when all have
    (LONGEST_WAIT_S at most). What they read ahead is dropped: the command is ending. fairseq
    has no call for it: its thread's loop ends once it has made as many batches as asked
    (_max_len), and it waits for room in its queue (_queue) for each batch and for its end."""
    threads = read_ahead_threads()
    for thread in threads:
        thread._max_len = 0
    deadline = time.monotonic() + LONGEST_WAIT_S
    for thread in threads:
        while thread.is_alive() and time.monotonic() < deadline:
            empty(thread._queue)
            thread.join(0.01)


def empty(batches: queue.Queue) -> None:
    while True:
        try:
            batches.get_nowait()
        except queue.Empty:
            return
