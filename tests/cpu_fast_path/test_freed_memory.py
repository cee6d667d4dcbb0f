"""cpu_fast_path/freed_memory.py: from the first training step of a model of the plugin, glibc
keeps large freed blocks for reuse, so a step's large tensors are not mapped and zeroed afresh at
every step; a process that only translates or runs no model of the plugin, a user's own malloc
tuning and the plain setting are left alone."""

import os
import subprocess
import sys

import pytest

from bahdanau_plugin.cpu_fast_path import freed_memory, measured_choice
from bahdanau_plugin.cpu_fast_path.freed_memory import (
    M_MMAP_THRESHOLD,
    M_TRIM_THRESHOLD,
    REUSE_BYTES,
    keep_freed_memory_for_reuse,
)
from tests.support.paths import REPO

# The page faults of allocating and writing a 64 MiB tensor again after freeing it (the logits of
# a training batch are of that size), in a fresh interpreter where a tiny rnnsearch (sys.argv[1]):
# "trained" took a training step, "translated" a forward pass without gradients, "absent" was not
# built.
FAULTS_OF_A_REUSED_BLOCK = """
import resource
import sys
import torch
from tests.support.tiny import build_tiny_model

if sys.argv[1] != "absent":
    model = build_tiny_model("rnnsearch")
    source, previous = torch.tensor([[4, 5, 2]]), torch.tensor([[2, 6, 7]])
    with torch.set_grad_enabled(sys.argv[1] == "trained"):
        model(source, torch.tensor([3]), previous)

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

for _ in range(3):
    torch.ones(64 << 18)
before = faults()
torch.ones(64 << 18)
print(faults() - before)
"""
PAGES_OF_64_MIB = (64 << 20) // os.sysconf("SC_PAGE_SIZE")


def faults_of_a_reused_block(setting, model="trained"):
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("MALLOC_") and name not in ("GLIBC_TUNABLES", "LD_PRELOAD")
    }
    env[measured_choice.SETTING] = setting
    completed = subprocess.run(
        [sys.executable, "-c", FAULTS_OF_A_REUSED_BLOCK, model],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return int(completed.stdout.split()[-1])


needs_glibc = pytest.mark.skipif(freed_memory.glibc() is None, reason="glibc's malloc only")


@needs_glibc
def test_after_a_training_step_a_freed_large_block_is_reused_without_mapping_it_again():
    assert faults_of_a_reused_block("auto") < PAGES_OF_64_MIB // 100


@needs_glibc
@pytest.mark.parametrize("model", ["translated", "absent"])
def test_a_process_that_trains_no_model_of_the_plugin_keeps_glibc_s_defaults(model):
    assert faults_of_a_reused_block("auto", model) >= PAGES_OF_64_MIB


@needs_glibc
def test_with_the_fast_path_set_to_plain_glibc_maps_a_large_block_afresh_each_time():
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
def auto_setting(monkeypatch):
    monkeypatch.setattr(measured_choice.CHOOSER, "_setting", "auto")


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


def test_the_fast_path_set_to_plain_leaves_malloc_alone(monkeypatch):
    monkeypatch.setattr(measured_choice.CHOOSER, "_setting", "plain")
    libc = FakeLibc()
    assert not keep_freed_memory_for_reuse(libc, environ={})
    assert libc.calls == []


def test_without_glibc_nothing_is_set(auto_setting, monkeypatch):
    monkeypatch.setattr(freed_memory, "glibc", lambda: None)
    assert not keep_freed_memory_for_reuse(environ={})


def test_only_the_first_training_step_of_a_process_sets_the_thresholds(monkeypatch):
    calls = []
    monkeypatch.setattr(freed_memory, "_set_for_training", False)
    monkeypatch.setattr(freed_memory, "keep_freed_memory_for_reuse", lambda: calls.append(1))
    freed_memory.for_training()
    freed_memory.for_training()
    assert calls == [1]
