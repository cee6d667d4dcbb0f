"""fairseq checkpoints load with torch's weights-only unpickler still on; nothing else does."""

import argparse
import os
import pickle

import pytest
import torch

import bahdanau_plugin  # noqa: F401


class _RunsACommand:
    def __reduce__(self):
        return (os.system, ("echo this should never run",))


def test_a_checkpoint_holding_an_argparse_namespace_loads_with_weights_only(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({"args": argparse.Namespace(lr=[1.0]), "model": {"w": torch.ones(2)}}, path)
    state = torch.load(path, weights_only=True)
    assert state["args"].lr == [1.0]


def test_a_pickle_that_calls_os_system_is_still_refused(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "payload": _RunsACommand()}, path)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        torch.load(path)
