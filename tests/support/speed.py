"""What the tests of the speed layer share: counting the fused recurrence's runs, and the plain
modules as the reference."""

import contextlib

import torch

from bahdanau_plugin.speed.cpu.measured_choice import CHOOSER
from bahdanau_plugin.speed.decoder import FusedRecurrence


@contextlib.contextmanager
def plain_modules():
    """Within: the fast path set to plain (every module's own code), on every device; a model
    built before keeps its layers, which then compute as torch's."""
    setting = CHOOSER._setting
    CHOOSER._setting = "plain"
    try:
        yield
    finally:
        CHOOSER._setting = setting


@contextlib.contextmanager
def fused_calls(monkeypatch):
    """Within: a list with one entry per run of a model's fused recurrence (whether it ran with
    gradients), its checks against the modules not counted; on any device."""
    calls = []
    checking = []
    fused_recur, allowed = FusedRecurrence.fused_recur, FusedRecurrence.allowed

    def counted_recur(self, *args, **kwargs):
        if not checking:
            calls.append(torch.is_grad_enabled())
        return fused_recur(self, *args, **kwargs)

    def counted_allowed(self, *args, **kwargs):
        checking.append(True)
        try:
            return allowed(self, *args, **kwargs)
        finally:
            checking.pop()

    monkeypatch.setattr(FusedRecurrence, "fused_recur", counted_recur)
    monkeypatch.setattr(FusedRecurrence, "allowed", counted_allowed)
    yield calls
    monkeypatch.setattr(FusedRecurrence, "fused_recur", fused_recur)
    monkeypatch.setattr(FusedRecurrence, "allowed", allowed)
