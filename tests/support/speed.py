"""What the tests of the fast path share: the plain modules as the reference, the compiled
step's runs counted, and modes that look at each operation, as a researcher's would."""

import contextlib
import functools
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from bahdanau_plugin.speed import compiling, setting


def fast_path(mode: str):
    """Within: the fast path set to ``mode`` (auto: the modules compiled; plain: eager)."""
    return mock.patch.object(setting, "mode", lambda: mode)


def plain_modules(monkeypatch):
    """Within: the fast path set to plain (the modules' code run eagerly), on every device."""
    return fast_path("plain")


def search_compiled_at_once(monkeypatch) -> None:
    """From now on in the test: a search on a CPU compiled from its first step, as on a GPU (by
    default it runs eagerly until it has run a while)."""
    monkeypatch.setattr(setting, "cpu_search_compile_after", lambda: 0.0)


@contextlib.contextmanager
def compiled_calls(monkeypatch, search_compile_after: float = 0.0):
    """Within: a list with the method's name for each call that compiled code computed (not the
    method run eagerly), whichever compilation it was; a search on a CPU compiled once it has run
    eagerly ``search_compile_after`` seconds (by default from its first step); the reasons to run
    eagerly warned afresh (once each within, whatever ran before in this process)."""
    calls = []
    run_compiled = compiling.Compilation.run_compiled

    def counting(self, module, *inputs):
        calls.append(self.function.__name__)
        return run_compiled(self, module, *inputs)

    with monkeypatch.context() as patch:
        patch.setattr(compiling.Compilation, "run_compiled", counting)
        warned_afresh = functools.lru_cache(maxsize=None)(compiling.warn_once.__wrapped__)
        patch.setattr(compiling, "warn_once", warned_afresh)
        patch.setattr(setting, "cpu_search_compile_after", lambda: search_compile_after)
        yield calls


def messages(caplog, level) -> list:
    """The messages the plugin logged at ``level`` or above (torch's own records left out)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("bahdanau_plugin") and record.levelno >= level
    ]


class Tanhs(TorchFunctionMode):
    """Counts the calls of torch.tanh made inside: a researcher's look at the step's operations."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += func is torch.tanh
        return func(*args, **(kwargs or {}))


class TanhKernels(TorchDispatchMode):
    """Counts the tanh kernels run inside (forward only), as torch's own FLOP counter counts."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += func is torch.ops.aten.tanh.default
        return func(*args, **(kwargs or {}))


MODES = {"TorchFunctionMode": Tanhs, "TorchDispatchMode": TanhKernels}
