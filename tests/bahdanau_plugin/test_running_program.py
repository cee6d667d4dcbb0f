"""Which program this process runs (bahdanau_plugin/running_program.py)."""

import importlib.machinery
import sys
import types

import pytest

from bahdanau_plugin import running_program


def run_as(monkeypatch, argv0: str, main_module: str) -> None:
    """This process made to look as one started as argv0 (``-m``: as ``python -m main_module``)."""
    monkeypatch.setattr(sys, "argv", [argv0])
    main = types.ModuleType("__main__")
    main.__spec__ = importlib.machinery.ModuleSpec(main_module, None) if argv0 == "-m" else None
    monkeypatch.setitem(sys.modules, "__main__", main)


@pytest.mark.parametrize(
    "argv0, main_module, tool",
    [
        ("/venv/bin/fairseq-interactive", "__main__", "fairseq-interactive"),
        ("-m", "fairseq_cli.hydra_train", "fairseq-hydra-train"),
        ("/home/me/train.py", "__main__", None),
        ("", "__main__", None),
    ],
)
def test_the_running_fairseq_tool_is_read_from_its_command_or_module(
    argv0, main_module, tool, monkeypatch
):
    run_as(monkeypatch, argv0, main_module)
    assert running_program.running_fairseq_tool() == tool


@pytest.mark.parametrize(
    "argv0, main_module, running",
    [
        ("/venv/bin/bahdanau-evaluate", "__main__", True),
        ("-m", "bahdanau_tools.plot_alignment", True),
        ("/venv/bin/fairseq-train", "__main__", False),
        ("/home/me/notebook.py", "__main__", False),
    ],
)
def test_the_running_plugin_command_is_read_from_its_command_or_module(
    argv0, main_module, running, monkeypatch
):
    run_as(monkeypatch, argv0, main_module)
    assert running_program.running_plugin_command() is running
