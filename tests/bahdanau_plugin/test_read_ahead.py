"""fairseq's read-ahead threads are stopped before a fairseq tool or the plugin's command ends
(bahdanau_plugin/read_ahead.py)."""

import subprocess
import sys
import textwrap
import threading
import time

import torch
from fairseq.data.iterators import BackgroundConsumer, BufferedIterator

from bahdanau_plugin import read_ahead

# A fairseq tool (its file's name says so, as a console script's does) that ends, with an explained
# error or as training ends at --max-update, while fairseq's read-ahead thread makes batches with
# torch (a few matrix products each); it says, as Python ends, how many such threads are left.
A_TOOL_ENDING_WHILE_READING_AHEAD = textwrap.dedent(
    """
    import atexit, sys, threading, torch
    from fairseq.data.iterators import BackgroundConsumer, BufferedIterator
    def threads_left():
        left = sum(isinstance(t, BackgroundConsumer) for t in threading.enumerate())
        print(f"read-ahead threads left: {left}")
    atexit.register(threads_left)  # before the plugin's, so run after it (last in, first out)
    import bahdanau_plugin
    from bahdanau_plugin import errors
    class Batches:
        def __len__(self):
            return 1000
        def __iter__(self):
            x = torch.randn(300, 300)
            for _ in range(1000):
                yield x @ x @ x
    next(BufferedIterator(1000, Batches()))
    print("translated so far")
    if sys.argv[1] == "error":
        raise errors.ConfigurationError("--x 0: give a positive size")
    """
)


def tool_ending_while_reading_ahead(tmp_path, ending: str) -> subprocess.CompletedProcess:
    tool = tmp_path / "fairseq-stand-in.py"
    tool.write_text(A_TOOL_ENDING_WHILE_READING_AHEAD)
    program = [sys.executable, str(tool), ending]
    return subprocess.run(program, capture_output=True, text=True, timeout=120)


def test_a_tool_ending_with_its_line_leaves_no_read_ahead_thread_to_abort_it(tmp_path):
    """Before, the thread was still in torch as Python ended, and the command aborted after the
    line ('terminate called without an active exception', return code -6) 30 runs in 30."""
    ended = tool_ending_while_reading_ahead(tmp_path, "error")
    last_line = ended.stderr.splitlines()[-1:]
    assert (ended.returncode, last_line) == (1, ["error: --x 0: give a positive size"])
    assert ended.stdout == "translated so far\nread-ahead threads left: 0\n"


def test_a_tool_ending_without_error_leaves_no_read_ahead_thread_to_abort_it(tmp_path):
    """As fairseq-train ends at --max-update mid-epoch: it aborted after 'done training'."""
    ended = tool_ending_while_reading_ahead(tmp_path, "done")
    assert ended.returncode == 0, ended.stderr[-2000:]
    assert ended.stdout == "translated so far\nread-ahead threads left: 0\n"


class Batches:
    """A data loader of n batches made with torch, each after the first only once allowed."""

    def __init__(self, n: int):
        self.n, self.allowed = n, threading.Event()

    def __len__(self):
        return self.n

    def __iter__(self):
        for made in range(self.n):
            if made:
                self.allowed.wait()
            yield torch.ones(2, 3).sum()


def reading_ahead(batches: Batches, queue_size: int) -> BackgroundConsumer:
    """fairseq's read-ahead thread, started as its tools start it: by the first batch read."""
    reader = BufferedIterator(queue_size, batches)
    next(reader)
    return reader._consumer


def test_a_read_ahead_thread_waiting_for_room_in_its_queue_is_stopped():
    batches = Batches(10**9)  # more than it could make before the test's end
    batches.allowed.set()
    thread = reading_ahead(batches, queue_size=1)
    read_ahead.stop_reading_ahead()
    assert not thread.is_alive()


def test_a_batch_that_never_ends_keeps_the_command_no_longer_than_the_limit(monkeypatch):
    monkeypatch.setattr(read_ahead, "LONGEST_WAIT_S", 0.5)
    batches = Batches(5)
    thread = reading_ahead(batches, queue_size=1)
    started = time.monotonic()
    read_ahead.stop_reading_ahead()
    waited = time.monotonic() - started
    still_making_one = thread.is_alive()
    batches.allowed.set()  # and the thread, told to stop, ends after that batch
    read_ahead.stop_reading_ahead()
    assert still_making_one and 0.5 <= waited < 5
