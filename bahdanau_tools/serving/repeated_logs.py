"""An error that repeats is logged once per interval, not once per event: a client can make the
server's warnings and errors repeat as fast as it sends (a crowd of connections, bad requests), and
a line per event fills the disk. Before, 1,100 idle connections made asyncio log its accept error
with a traceback 1.26 million times, 530 MB in about 70 s.

A record is the same as an earlier one when its logger, level, exception type and the first line of
its message's template (with the arguments left out) are the same. The first is logged; the same
again within REPEAT_INTERVAL_S of it is left out and counted; the first after the interval is logged
with the count of those left out, and starts a new interval.
"""

import logging
import threading
import time

REPEAT_INTERVAL_S = 60
# The loggers that a client can make repeat: asyncio's, and uvicorn's, where the server's own
# messages go too (connections.py).
REPEATING_LOGGERS = ("asyncio", "uvicorn.error")


class OncePerInterval(logging.Filter):
    """A logging filter: records of WARNING and above, each kind once per interval_s."""

    def __init__(self, interval_s: float = REPEAT_INTERVAL_S, clock=time.monotonic):
        super().__init__()
        self.interval_s = interval_s
        self.clock = clock
        self._last = {}  # kind -> (when it was last logged, how many were left out since)
        self._lock = threading.Lock()  # records come from the event loop and worker threads

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        kind = (
            record.name,
            record.levelno,
            str(record.msg).split("\n", 1)[0],
            record.exc_info[0] if record.exc_info else None,
        )
        now = self.clock()
        with self._lock:
            logged, left_out = self._last.get(kind, (None, 0))
            if logged is not None and now - logged < self.interval_s:
                self._last[kind] = (logged, left_out + 1)
                return False
            self._last[kind] = (now, 0)
        if left_out:
            record.msg = (
                f"{record.msg} (and {left_out:,} more like it in the {now - logged:,.0f} s since "
                "it was last logged, left out: each kind of message is logged at most once every "
                f"{self.interval_s:g} s)"
            )
        return True


def log_repeats_once_per_interval() -> None:
    """Install OncePerInterval on the loggers that a client can make repeat."""
    repeats = OncePerInterval()
    for name in REPEATING_LOGGERS:
        logging.getLogger(name).addFilter(repeats)
