"""An order-preserving parallel map whose read-ahead is bounded, so memory stays flat."""

import multiprocessing
import os
import signal
from collections import deque
from contextlib import ExitStack, contextmanager
from itertools import islice
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK_LINES = 2000  # big enough to outweigh the cost of passing a chunk between processes
# Ctrl+C, and SIGTERM, which bahdanau-prepare-data takes as Ctrl+C (command_line.py).
STOPS = (signal.SIGINT, signal.SIGTERM)


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
    most 2 × workers items are in flight at any time.
    """
    if workers <= 1:
        yield from map(function, items)
        return
    with ExitStack() as ending:
        with stops_deferred():
            pool = ending.enter_context(
                multiprocessing.Pool(workers, initializer=leave_stops_to_the_main_process)
            )
        in_flight = deque()
        for item in items:
            in_flight.append(pool.apply_async(function, (item,)))
            if len(in_flight) >= 2 * workers:
                yield in_flight.popleft().get()
        while in_flight:
            yield in_flight.popleft().get()


@contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl+C and SIGTERM noted while the block runs, and delivered as it ends. While a pool starts,
    either would otherwise reach a worker before it can ignore it (a traceback per worker), or this
    process inside one of the handlers Python runs around a fork, which prints the
    KeyboardInterrupt and drops it: the command would go on. (Blocking the signals would not do:
    another thread, tqdm's, would take them.) A worker forked meanwhile, which has this handler
    until its initializer runs, takes them as its initializer would have it: SIGTERM, by which the
    pool ends it, must end it."""
    main_process = os.getpid()
    received = []

    def note(number, frame):
        if os.getpid() != main_process:  # a worker, its initializer still to come
            leave_stops_to_the_main_process()
            signal.raise_signal(number)
            return
        received.append(number)

    previous = {number: signal.signal(number, note) for number in STOPS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    for number in received:
        signal.raise_signal(number)  # to the handler it would have met: KeyboardInterrupt, say


def leave_stops_to_the_main_process() -> None:
    """Ctrl+C reaches every process of the terminal's foreground group: the workers ignore it, so
    that only the main process stops, ending the pool as it leaves, and the user reads one line,
    not a traceback per worker. SIGTERM, by which the pool ends them, ends them at once: the main
    process's handler, which they inherit, would print a traceback in each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def map_line_chunks(
    path: Path, function: Callable[[List[str]], Result], workers: int
) -> Iterator[Result]:
    """Stream the lines of a UTF-8 text file through function, one chunk of lines at a time, in
    order."""
    with path.open(encoding="utf-8", newline="\n") as text:
        stripped = (line.rstrip("\n") for line in text)
        yield from ordered_map(function, chunked(stripped), workers)
