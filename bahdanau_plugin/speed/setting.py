"""The fast path's one setting, read from the environment once per process.

``BAHDANAU_FAST_PATH``: ``auto`` (the default) computes every part the fast path offers where it
applies, on a CPU with each library or loop chosen by timing it (``cpu/measured_choice.py``);
``fast`` takes every fast computation that agrees with the plain one, untimed; ``plain`` builds
none of it, and the model computes with the modules' own PyTorch code on every device. On a GPU
``auto`` and ``fast`` are the same: nothing there is chosen by timing. ``BAHDANAU_CPU_FAST_PATH``,
the setting's name from before the GPU had a fast path, is read where the new one is not set.
"""

import os

from ..errors import ConfigurationError

SETTING = "BAHDANAU_FAST_PATH"
FORMER_SETTING = "BAHDANAU_CPU_FAST_PATH"
MODES = ("auto", "fast", "plain")


def from_environment() -> str:
    name = SETTING if SETTING in os.environ else FORMER_SETTING
    value = os.environ.get(name, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ConfigurationError(f"{name}={value}: use auto, fast or plain")
    return value
