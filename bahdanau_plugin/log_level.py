"""The logging level fairseq's command-line tools take from LOGLEVEL (INFO unless set): the level of
the plugin's own loggers, and of the root logger where a fairseq tool or a plugin command runs
(fairseq_patches.log_at_the_level_of_fairseqs_tools)."""

import functools
import logging
import os

LEVELS = "DEBUG, INFO, WARNING, ERROR or CRITICAL"


def fairseqs_log_level() -> int:
    return _level(os.environ.get("LOGLEVEL", "INFO").upper())


@functools.lru_cache(maxsize=None)  # one warning for a level that is not one, however often read
def _level(name: str) -> int:
    level = logging.getLevelName(name)
    if isinstance(level, int):
        return level
    logging.getLogger(__name__).warning(
        "LOGLEVEL=%s is not a logging level (%s): logging at INFO", name, LEVELS
    )
    return logging.INFO
