"""An order-preserving parallel map whose read-ahead is bounded, so memory stays flat."""

import multiprocessing
import signal
from collections import deque
from contextlib import ExitStack, contextmanager
from itertools import islice
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Callable, Collection, Iterable, Iterator, List, TypeVar

from ..errors import DataError

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK_LINES = 2000  # big enough to outweigh the cost of passing a chunk between processes
# Ctrl+C, and SIGTERM, which bahdanau-prepare-data takes as Ctrl+C (command_line.py).
STOPS = (signal.SIGINT, signal.SIGTERM)
# How often a wait for a result looks whether a worker died; a result that comes ends it at once.
DEATH_CHECK_SECONDS = 1.0


def chunked(items: Iterable[Item], size: int = CHUNK_LINES) -> Iterator[List[Item]]:
    iterator = iter(items)
    while True:
        chunk = list(islice(iterator, size))
        if not chunk:
            return
        yield chunk


def ordered_map(
    function: Callable[[Item], Result], items: Iterable[Item], workers: int
) -> Iterator[Result]:
    """Yield function(item) for each item, in order, computed by `workers` processes.

    multiprocessing's imap would do the same, but it drains `items` into its task queue as fast as
    it can read them, which on a billion-word corpus means holding the corpus in memory; here at
    most 2 × workers items are in flight at any time. A worker killed meanwhile (by the kernel as
    memory runs out, say) ends the map in a DataError (result_of).
    """
    if workers <= 1:
        yield from map(function, items)
        return
    with ExitStack() as ending:
        children = set(multiprocessing.active_children())
        with stops_deferred():
            pool = ending.enter_context(
                multiprocessing.Pool(workers, initializer=leave_stops_to_the_main_process)
            )
        started = set(multiprocessing.active_children()) - children  # the pool's workers
        in_flight = deque()
        for item in items:
            in_flight.append(pool.apply_async(function, (item,)))
            if len(in_flight) >= 2 * workers:
                yield result_of(in_flight.popleft(), started)
        while in_flight:
            yield result_of(in_flight.popleft(), started)


def result_of(pending: AsyncResult, started: Collection[multiprocessing.Process]) -> Result:
    """pending's result, or a DataError once one of the workers started has died. The pool starts
    a new worker in the place of one that died, but the item it worked on is lost, and waiting
    for its result waited forever, the command hanging without a word (a worker the kernel killed
    for memory)."""
    while True:
        try:
            return pending.get(timeout=DEATH_CHECK_SECONDS)
        except multiprocessing.TimeoutError:
            died = next((worker for worker in started if worker.exitcode is not None), None)
            if died is not None:
                raise DataError(worker_died(died.exitcode)) from None


def worker_died(exit_code: int) -> str:
    """What ended a worker (a negative exit code is the signal that killed it), and what to do."""
    if exit_code < 0:
        how = f"was killed by {signal.Signals(-exit_code).name}"
        if -exit_code == signal.SIGKILL:
            how += ", as the kernel ends a process when memory runs out"
    else:
        how = f"ended with exit status {exit_code}"
    return (
        f"a worker process {how}, and its share of the work was lost: run the same command "
        "again to resume (the stages that finished are kept), with fewer --workers if memory "
        "ran out"
    )


@contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl+C and SIGTERM held back while the block starts a pool, and delivered as it ends.

    This thread blocks them, so that the workers it forks start with them blocked: a signal that
    came to a worker before Python in it has set itself up after the fork would be dropped there
    (the pool's SIGTERM: the worker lived on, and the pool's end waited for it forever). Its
    initializer decides what they do, then lets them in. Another thread, tqdm's, can still take
    them for this process meanwhile: they are noted then, rather than raised in one of the
    handlers Python runs around a fork, which prints the KeyboardInterrupt and drops it (the
    command would go on)."""
    received = []

    def note(number, frame):
        received.append(number)

    previous = {number: signal.signal(number, note) for number in STOPS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # those pending meet note now
        for number, handler in previous.items():
            signal.signal(number, handler)
    for number in received:
        signal.raise_signal(number)  # to the handler it would have met: KeyboardInterrupt, say


def leave_stops_to_the_main_process() -> None:
    """Ctrl+C reaches every process of the terminal's foreground group: the workers ignore it, so
    that only the main process stops, ending the pool as it leaves, and the user reads one line,
    not a traceback per worker. SIGTERM, by which the pool ends them, ends them at once, also one
    that came while they started (stops_deferred): the main process's handler, which they
    inherit, would print a traceback in each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def map_line_chunks(
    path: Path, function: Callable[[List[str]], Result], workers: int
) -> Iterator[Result]:
    """Stream the lines of a UTF-8 text file through function, one chunk of lines at a time, in
    order."""
    with path.open(encoding="utf-8", newline="\n") as text:
        stripped = (line.rstrip("\n") for line in text)
        yield from ordered_map(function, chunked(stripped), workers)
