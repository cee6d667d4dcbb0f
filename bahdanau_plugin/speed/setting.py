"""The fast path's settings, read from the environment once per process.

``BAHDANAU_FAST_PATH`` (formerly ``BAHDANAU_CPU_FAST_PATH``): ``auto``, the default, compiles and
captures the modules' own code (``compiling.py``, ``capture.py``); ``plain`` runs it eagerly.
``BAHDANAU_CPU_SEARCH_COMPILE_AFTER``: the seconds a search runs eagerly on a CPU before it is
compiled; 0 compiles it at once.
"""

import functools
import os
import re

from ..errors import ConfigurationError

SETTING = "BAHDANAU_FAST_PATH"
FORMER_SETTING = "BAHDANAU_CPU_FAST_PATH"
MODES = ("auto", "plain")
SEARCH_SETTING = "BAHDANAU_CPU_SEARCH_COMPILE_AFTER"
SEARCH_SECONDS = 60.0  # what compiling costs a short decoding: docs/performance.md


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


@functools.lru_cache(maxsize=None)
def cpu_search_compile_after() -> float:
    """Seconds of a search's steps run eagerly on a CPU before they are compiled."""
    value = os.environ.get(SEARCH_SETTING, "").strip() or str(SEARCH_SECONDS)
    if not re.fullmatch(r"\d+(\.\d*)?", value):
        raise ConfigurationError(
            f"{SEARCH_SETTING}={value}: use the seconds a search on a CPU runs eagerly before it "
            f"is compiled ({SEARCH_SECONDS:.0f} if not set; 0 compiles it at once)"
        )
    return float(value)
