import subprocess
import sys

import numpy as np
from fairseq.data import data_utils

import bahdanau_plugin  # noqa: F401

ABORTED = -6  # SIGABRT, as libstdc++'s std::terminate ends a process

# fairseq's BufferedIterator reads ahead in a daemon thread; each of these items takes a long
# GIL-free torch operation, so the thread is inside torch when the main thread exits.
EXIT_WHILE_READING_AHEAD = """
import sys
import torch
from fairseq.data import iterators
if sys.argv[1] == "with-plugin":
    import bahdanau_plugin
torch.set_num_threads(1)

class SlowItems:
    def __len__(self):
        return 1000

    def __iter__(self):
        matrix = torch.ones(1500, 1500)
        for _ in range(1000):
            yield (matrix @ matrix).sum().item()

next(iterators.BufferedIterator(1000, SlowItems()))
"""


def exit_while_reading_ahead(*argv):
    return subprocess.run([sys.executable, "-c", EXIT_WHILE_READING_AHEAD, *argv],
                          capture_output=True, text=True, timeout=120)


def test_batching_keeps_the_last_partial_batch():
    indices = np.arange(13, dtype=np.int64)
    batches = data_utils.batch_by_size(indices, num_tokens_fn=lambda i: 5, num_tokens_vec=np.full(13, 5),
                                       max_sentences=5, required_batch_size_multiple=4)
    assert np.concatenate(batches).tolist() == list(range(13))


def test_without_the_plugin_exiting_while_fairseq_reads_ahead_aborts():
    """The failure the next test guards against; if fairseq or torch fix it, this test says so."""
    completed = exit_while_reading_ahead("without-plugin")
    assert completed.returncode == ABORTED
    assert "terminate called without an active exception" in completed.stderr


def test_with_the_plugin_exiting_while_fairseq_reads_ahead_succeeds():
    completed = exit_while_reading_ahead("with-plugin")
    assert completed.returncode == 0, completed.stderr[-2000:]
