"""fairseq checkpoints load with torch's weights-only unpickler still on; where the plugin loads,
whatever the environment says. Other models' loading in a program that imports the plugin is
fairseq's own."""

import argparse
import pickle

import pytest
import torch
from fairseq import checkpoint_utils

import bahdanau_plugin  # noqa: F401
from bahdanau_plugin import checkpoint_safety

from ..support.malicious import CreatesAFile
from ..support.tools import python_program


def test_a_checkpoint_holding_an_argparse_namespace_loads_with_weights_only(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({"args": argparse.Namespace(lr=[1.0]), "model": {"w": torch.ones(2)}}, path)
    state = torch.load(path, weights_only=True)
    assert state["args"].lr == [1.0]


def test_a_pickle_that_calls_os_system_is_still_refused(tmp_path):
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    torch.save({"model": {}, "payload": CreatesAFile(marker)}, path)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        torch.load(path)
    assert not marker.exists()


def test_fairseqs_loading_for_the_plugin_never_honours_torch_force_no_weights_only_load(
    tmp_path, monkeypatch
):
    """torch lets that variable turn safe loading off wherever weights_only is not passed, and
    fairseq passes none: the hub, fairseq's tools and the plugin's commands load through this."""
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    torch.save({"model": {}, "payload": CreatesAFile(marker)}, path)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        with checkpoint_safety.fairseqs_loading_weights_only():
            checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert not marker.exists()


def test_a_program_that_only_imports_the_plugin_keeps_fairseqs_own_loading():
    """Other models' checkpoints load as fairseq loads them (the variable honoured, as torch
    does), outside the plugin's commands and its hub: in a program of its own, which no other
    test's loading has run in."""
    python_program(
        "import torch\n"
        "from fairseq import checkpoint_utils\n"
        "import bahdanau_plugin\n"
        "assert checkpoint_utils.torch is torch, checkpoint_utils.torch\n"
    )
