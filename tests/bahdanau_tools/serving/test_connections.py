"""A crowd of connections that send nothing cannot shut other clients out: bahdanau-serve holds at
most as many connections as its file limit leaves room for, makes room for a new one by closing the
connection idle longest, answers 503 when every connection has a request under way, closes a
connection idle for --idle-timeout seconds, and logs each of these once a minute, not once each."""

import contextlib
import json
import re
import select
import socket
import threading
import time
from urllib.parse import urlsplit

import httpx
import pytest

from .conftest import Server

GOOD = {"text": "the dog sees a cat", "beam": 2}
FILE_LIMIT = 64  # `ulimit -n 64`: room for about a dozen connections
IDLE_CROWD = 100
IDLE_TIMEOUT_S = 1


def _connect(server) -> socket.socket:
    address = urlsplit(server.url)
    return socket.create_connection((address.hostname, address.port))


def _closed_by_the_server(connections, within_s: float) -> list:
    """Those of connections that the server closes within within_s seconds."""
    closed, deadline = [], time.monotonic() + within_s
    waiting = list(connections)
    while waiting and time.monotonic() < deadline:
        readable, _, _ = select.select(waiting, [], [], deadline - time.monotonic())
        for connection in readable:
            try:
                ended = connection.recv(1) == b""
            except ConnectionResetError:
                ended = True
            if ended:
                closed.append(connection)
                waiting.remove(connection)
    return closed


def _request_under_way(server) -> socket.socket:
    """A connection whose request has its headers in and waits for the rest of its body."""
    connection = _connect(server)
    connection.sendall(
        b"POST /translate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n" + b'{"text": "the'
    )
    return connection


@contextlib.contextmanager
def _bodies_coming(connections):
    """The connections' bodies keep coming, a space of the text every quarter of the idle
    timeout, while in the block."""
    done = threading.Event()

    def send() -> None:
        while not done.wait(IDLE_TIMEOUT_S / 4):
            for connection in connections:
                connection.sendall(b" ")

    sender = threading.Thread(target=send)
    sender.start()
    try:
        yield
    finally:
        done.set()
        sender.join()


def assert_still_serving(server) -> None:
    (translation,) = server.translate(GOOD)
    assert translation["hypotheses"][0]["translation"]
    assert "Traceback" not in server.output()


@pytest.fixture(scope="module")
def crowded_server(serving_checkpoint, data_bin, tmp_path_factory):
    """Under a file limit of 64, the idle timeout longer than any test here."""
    started = Server(
        serving_checkpoint,
        data_bin,
        tmp_path_factory.mktemp("crowded") / "server.log",
        "--idle-timeout",
        "600",
        file_limit=FILE_LIMIT,
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def two_connection_server(serving_checkpoint, data_bin, tmp_path_factory):
    started = Server(
        serving_checkpoint,
        data_bin,
        tmp_path_factory.mktemp("two") / "server.log",
        "--max-connections",
        "2",
        "--idle-timeout",
        str(IDLE_TIMEOUT_S),
    )
    yield started
    started.stop()


def _room(server) -> int:
    """The connections the server says that its file limit leaves room for."""
    (warning,) = re.findall(r"^warning: the file limit .*$", server.output(), flags=re.M)
    assert warning.startswith(f"warning: the file limit (ulimit -n {FILE_LIMIT}) leaves room for ")
    assert "not --max-connections 1,000: raise it (ulimit -n " in warning
    return int(re.search(r"leaves room for (\d+) connections", warning).group(1))


def test_a_request_is_answered_at_once_while_100_idle_connections_are_open(crowded_server):
    room = _room(crowded_server)
    assert 1 <= room < IDLE_CROWD // 2
    crowd = [_connect(crowded_server) for _ in range(IDLE_CROWD)]
    try:
        started = time.monotonic()
        response = httpx.post(crowded_server.url + "/translate", json=GOOD, timeout=20)
        assert response.status_code == 200, response.text
        assert time.monotonic() - started < 5
        # the server made room by closing the idle ones, all but those it has room for
        assert len(_closed_by_the_server(crowd, within_s=5)) >= IDLE_CROWD - room
    finally:
        for connection in crowd:
            connection.close()
    output = crowded_server.output()
    assert "out of system resource" not in output and "cannot accept" not in output
    # closed IDLE_CROWD - room or more to make room, and said so once (once a minute)
    assert output.count("closed the connection idle longest") == 1
    assert_still_serving(crowded_server)


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_timeout(two_connection_server):
    with _connect(two_connection_server) as idle:
        started = time.monotonic()
        assert _closed_by_the_server([idle], within_s=10) == [idle]
        assert IDLE_TIMEOUT_S * 0.9 <= time.monotonic() - started < IDLE_TIMEOUT_S + 3


def test_a_connection_that_sends_part_of_its_headers_is_closed_after_the_idle_timeout(
    two_connection_server,
):
    with _connect(two_connection_server) as slow:
        slow.sendall(b"POST /translate HTTP/1.1\r\nHost: te")
        started = time.monotonic()
        assert _closed_by_the_server([slow], within_s=10) == [slow]
        assert IDLE_TIMEOUT_S * 0.9 <= time.monotonic() - started < IDLE_TIMEOUT_S + 3


def test_a_connection_past_the_limit_is_answered_503_when_every_one_has_a_request_under_way(
    two_connection_server,
):
    busy = [_request_under_way(two_connection_server) for _ in range(2)]
    try:
        with _bodies_coming(busy):
            time.sleep(0.5)  # their headers read: under way, and never idle
            response = two_connection_server.post(GOOD)
            assert response.status_code == 503, response.text
            message = response.json()["error"]
            assert "\n" not in message
            assert message.startswith("all 2 connections this server holds are busy with requests")
            assert "--max-connections" in message
            assert _closed_by_the_server(busy, within_s=2 * IDLE_TIMEOUT_S) == []
    finally:
        for connection in busy:
            connection.close()
    assert two_connection_server.output().count("answered a connection 503") == 1
    assert_still_serving(two_connection_server)


def test_a_connection_whose_body_stops_coming_is_closed_after_the_idle_timeout(
    two_connection_server,
):
    """Its request counted as under way for ever: two such held this server's two connections,
    every other request was answered 503, and the server's shutdown waited on them."""
    stalled = [_request_under_way(two_connection_server) for _ in range(2)]
    try:
        started = time.monotonic()
        assert _closed_by_the_server(stalled, within_s=10) == stalled
        assert IDLE_TIMEOUT_S * 0.9 <= time.monotonic() - started < IDLE_TIMEOUT_S + 3
    finally:
        for connection in stalled:
            connection.close()
    assert_still_serving(two_connection_server)


def test_a_body_that_keeps_coming_is_read_whole_however_long_it_takes(two_connection_server):
    body = json.dumps(GOOD).encode()
    with _connect(two_connection_server) as slow:
        slow.settimeout(60)
        slow.sendall(
            b"POST /translate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        for byte in body[:12]:  # 3 idle timeouts
            time.sleep(IDLE_TIMEOUT_S / 4)
            slow.sendall(bytes([byte]))
        slow.sendall(body[12:])
        answer = slow.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
