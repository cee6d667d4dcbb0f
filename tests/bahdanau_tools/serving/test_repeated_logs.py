"""A message that repeats is logged once per interval, and the next one after it says how many
were left out."""

import logging

import pytest

from bahdanau_tools.serving.repeated_logs import OncePerInterval

INTERVAL_S = 60


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def logged(clock):
    """The messages a logger with the filter logs, as they would be printed."""
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    logger = logging.getLogger("test_repeated_logs")
    logger.propagate = False
    logger.addHandler(handler)
    logger.addFilter(OncePerInterval(INTERVAL_S, clock=clock))
    yield logger, records
    logger.removeHandler(handler)
    logger.filters.clear()


def test_a_message_repeated_within_the_interval_is_logged_once(logged):
    logger, records = logged
    for connection in range(1000):
        logger.error("cannot accept connection %d", connection)
    assert records == ["cannot accept connection 0"]


def test_the_first_after_the_interval_says_how_many_were_left_out(logged, clock):
    logger, records = logged
    for _ in range(1000):
        logger.error("cannot accept a connection")
    clock.now += INTERVAL_S
    logger.error("cannot accept a connection")
    assert records[1] == (
        "cannot accept a connection (and 999 more like it in the 60 s since it was last logged, "
        "left out: each kind of message is logged at most once every 60 s)"
    )


def test_other_messages_and_levels_are_logged_each_in_its_own_interval(logged):
    logger, records = logged
    for _ in range(3):
        logger.error("one")
        logger.warning("one")
        logger.error("two")
    assert records == ["one", "one", "two"]


def test_information_is_never_held_back(logged):
    logger, records = logged
    for _ in range(3):
        logger.info("a request answered")
    assert len(records) == 3


def test_an_exceptions_first_line_and_type_make_its_kind(logged):
    logger, records = logged
    for error in (OSError("a"), OSError("b"), ValueError("c")):
        try:
            raise error
        except Exception:
            logger.exception("socket.accept() out of system resource\nsocket: <fd 6>")
    assert len(records) == 2
