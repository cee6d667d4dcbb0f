"""The fast path's one setting, read from the environment once per process.

``BAHDANAU_FAST_PATH``: ``auto`` (the default) compiles the modules' own code where a compiler is
(``compiling.py``) and on a GPU replays their loop from CUDA graphs in training (``capture.py``);
``plain`` runs the same code eagerly, as PyTorch runs any module. ``BAHDANAU_CPU_FAST_PATH``, the
setting's name from before the GPU had a fast path, is read where the new one is not set.
"""

import functools
import os

from ..errors import ConfigurationError

SETTING = "BAHDANAU_FAST_PATH"
FORMER_SETTING = "BAHDANAU_CPU_FAST_PATH"
MODES = ("auto", "plain")


@functools.lru_cache(maxsize=None)
def mode() -> str:
    """auto or plain, as this process first read it."""
    name = SETTING if SETTING in os.environ else FORMER_SETTING
    value = os.environ.get(name, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ConfigurationError(
            f"{name}={value}: use auto (the modules compiled, the default) or plain (eager)"
        )
    return value


def eager() -> bool:
    return mode() == "plain"
