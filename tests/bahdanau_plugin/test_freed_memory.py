"""freed_memory.py: where fairseq-train runs with the plugin, glibc keeps large
freed blocks for reuse, so a training step's large tensors are not mapped and zeroed afresh at
every step; any other program, a user's own malloc tuning and the plain setting are left alone."""

import os

import pytest

from bahdanau_plugin import freed_memory
from bahdanau_plugin.freed_memory import (
    M_MMAP_THRESHOLD,
    M_TRIM_THRESHOLD,
    REUSE_BYTES,
    keep_freed_memory_for_reuse,
)
from bahdanau_plugin.speed import setting as speed_setting
from tests.support.paths import REPO
from tests.support.tools import python_program

# glibc's malloc on the host: nothing of it to test on a GPU.
pytestmark = pytest.mark.cpu_only

# The page faults of allocating and writing a 64 MiB tensor again after freeing it (the logits of
# a training batch are of that size), in a fresh interpreter that stands for the program named by
# sys.argv[1] (fairseq-train's console script, or a script of the user's) and trains a tiny
# rnnsearch for a step.
FAULTS_OF_A_REUSED_BLOCK = """
import resource
import sys
sys.argv[0] = sys.argv[1]
import torch
from tests.support.models import build_tiny_model

model = build_tiny_model("rnnsearch")
source, previous = torch.tensor([[4, 5, 2]]), torch.tensor([[2, 6, 7]])
model(source, torch.tensor([3]), previous)[0].sum().backward()

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

for _ in range(3):
    torch.ones(64 << 18)
before = faults()
torch.ones(64 << 18)
print(faults() - before)
"""
PAGES_OF_64_MIB = (64 << 20) // os.sysconf("SC_PAGE_SIZE")


def faults_of_a_reused_block(setting, program="/usr/bin/fairseq-train"):
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("MALLOC_") and name not in ("GLIBC_TUNABLES", "LD_PRELOAD")
    }
    env[speed_setting.SETTING] = setting
    completed = python_program(FAULTS_OF_A_REUSED_BLOCK, program, env=env, cwd=REPO)
    return int(completed.stdout.split()[-1])


needs_glibc = pytest.mark.skipif(freed_memory.glibc() is None, reason="glibc's malloc only")


@needs_glibc
def test_where_fairseq_train_runs_a_freed_large_block_is_reused_without_mapping_it_again():
    assert faults_of_a_reused_block("auto") < PAGES_OF_64_MIB // 100


@needs_glibc
def test_another_program_keeps_glibc_s_defaults_even_where_it_trains():
    assert faults_of_a_reused_block("auto", program="train_my_model.py") >= PAGES_OF_64_MIB


@needs_glibc
def test_with_the_fast_path_set_to_plain_fairseq_train_keeps_glibc_s_defaults():
    assert faults_of_a_reused_block("plain") >= PAGES_OF_64_MIB


class FakeLibc:
    """mallopt, recorded; it refuses an mmap threshold above ``mmap_cap``."""

    def __init__(self, mmap_cap=None):
        self.calls = []
        self.mmap_cap = mmap_cap

    def mallopt(self, parameter, value):
        self.calls.append((parameter, value))
        return int(self.mmap_cap is None or parameter != M_MMAP_THRESHOLD or value <= self.mmap_cap)


@pytest.fixture
def auto_setting(fast_path_setting):
    fast_path_setting("auto")


def test_the_mmap_threshold_is_set_before_the_trim_threshold(auto_setting):
    libc = FakeLibc()
    assert keep_freed_memory_for_reuse(libc, environ={})
    assert libc.calls == [(M_MMAP_THRESHOLD, REUSE_BYTES), (M_TRIM_THRESHOLD, REUSE_BYTES)]


def test_a_glibc_that_refuses_the_threshold_keeps_all_its_defaults(auto_setting):
    libc = FakeLibc(mmap_cap=32 << 20)
    assert not keep_freed_memory_for_reuse(libc, environ={})
    assert libc.calls == [(M_MMAP_THRESHOLD, REUSE_BYTES)]


@pytest.mark.parametrize(
    "environ",
    [
        {"MALLOC_TRIM_THRESHOLD_": "131072"},
        {"MALLOC_MMAP_THRESHOLD_": "65536"},
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"},
        {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
    ],
)
def test_malloc_tuned_by_the_user_is_left_alone(auto_setting, environ):
    libc = FakeLibc()
    assert not keep_freed_memory_for_reuse(libc, environ=environ)
    assert libc.calls == []


def test_the_fast_path_set_to_plain_leaves_malloc_alone(fast_path_setting):
    fast_path_setting("plain")
    libc = FakeLibc()
    assert not keep_freed_memory_for_reuse(libc, environ={})
    assert libc.calls == []


def test_without_glibc_nothing_is_set(auto_setting, monkeypatch):
    monkeypatch.setattr(freed_memory, "glibc", lambda: None)
    assert not keep_freed_memory_for_reuse(environ={})
