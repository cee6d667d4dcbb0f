"""bahdanau-serve's connections: limited in number, closed when idle, accepted only when there is
room for them, so that a crowd of clients that connect and send nothing cannot shut others out.

uvicorn serves the HTTP; what it does not do, and this module does:

- An idle connection is closed after --idle-timeout seconds: one that has sent no request since it
  was opened, or since its last response, or only part of a request's headers. uvicorn's keep-alive
  timeout covers only the time after a response, and ends when any byte arrives; a connection that
  never sends a request, or sends its headers a byte at a time, was held for ever.
- So is a connection whose request's body stops coming: no byte of it for --idle-timeout seconds.
  uvicorn waits for a body without a limit, and such a request counts as under way: a crowd of
  clients that stalled mid-body (or one per connection the server holds) had every other request
  answered 503 for ever, and the server's shutdown waited on them for ever.
- At most max_connections are open (file_limit.py: within the process's file limit). asyncio's
  server accepts every connection waiting, up to uvicorn's backlog (2,048) at a time, before the
  application hears of any; past the file limit, accept() fails, and asyncio logged the error with
  a traceback once per waiting connection, thousands of times a second, while requests timed out.
  uvicorn's --limit-concurrency answers a request 503 only after its connection is accepted, and
  counts idle connections as well: a crowd of idle ones would have every request refused. So the
  Acceptor here accepts, with asyncio's public calls, only while there is room. At the limit, the
  connection idle the longest is closed to make room for the next one; when every connection has a
  request under way, the next is answered 503 and closed, and accept() never runs out of files.
"""

import asyncio
import errno
import json
import logging
import socket
from typing import Callable, Optional, Set

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger("uvicorn.error")  # uvicorn's own log, where the server's messages go

# accept() failing for want of a resource: wait this long before accepting again, as asyncio does.
OUT_OF_RESOURCE = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
RETRY_ACCEPT_S = 1
# Connections accepted at a time, so that a crowd does not hold the event loop.
ACCEPTS_PER_TURN = 100


def _all_busy_response(max_connections: int) -> bytes:
    body = json.dumps(
        {
            "error": f"all {max_connections:,} connections this server holds are busy with "
            "requests (bahdanau-serve --max-connections, within the file limit): try again in "
            "a moment"
        }
    ).encode()
    return (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n%s" % (len(body), body)
    )


class Connection(H11Protocol):
    """uvicorn's HTTP/1.1 connection, closed once idle for idle_timeout_s; on_made(self) when it
    is made, on_lost(self) when it closes."""

    def __init__(
        self, *args, idle_timeout_s: float, on_made: Callable, on_lost: Callable, **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.idle_timeout_s = idle_timeout_s
        self.on_made = on_made
        self.on_lost = on_lost
        self.idle_since: Optional[float] = None  # when it was opened, or sent its last response
        self._idle_timer: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport):
        super().connection_made(transport)
        self.on_made(self)
        self._wait_for_a_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_its_body:  # it came on: its wait starts again
            self._close_after_idle_timeout()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._wait_for_a_request()

    def connection_lost(self, exc) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        super().connection_lost(exc)
        self.on_lost(self)

    @property
    def idle(self) -> bool:
        """Open, with no request under way (a request is under way once its headers are in)."""
        if self.transport is None or self.transport.is_closing():  # not made yet, or closing
            return False
        return self.cycle is None or self.cycle.response_complete

    def close(self) -> None:
        """Closed as uvicorn closes a keep-alive connection that its timeout ends."""
        self.timeout_keep_alive_handler()

    @property
    def _waiting_for_its_body(self) -> bool:
        """A request under way whose body has not all come."""
        cycle = self.cycle
        return cycle is not None and cycle.more_body and not cycle.response_complete

    def _wait_for_a_request(self) -> None:
        self.idle_since = self.loop.time()
        self._close_after_idle_timeout()

    def _close_after_idle_timeout(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._idle_timer = self.loop.call_later(self.idle_timeout_s, self._close_if_idle)

    def _close_if_idle(self) -> None:
        if self.idle:  # else the end of its response starts the wait again
            self.close()
        elif self._waiting_for_its_body and self.flow.read_paused:
            # uvicorn stopped reading until the application takes the body it holds: not the
            # client's wait
            self._close_after_idle_timeout()
        elif self._waiting_for_its_body:  # none of it came since: the client stalled
            # not as an idle one: h11 sends no ConnectionClosed in the middle of a request
            self.transport.close()


class Acceptor:
    """Accepts connections on listener, a listening socket, while fewer than max_connections are
    open, and makes them with connection_factory(on_made=..., on_lost=...)."""

    def __init__(self, listener: socket.socket, connection_factory, max_connections: int):
        self.loop = asyncio.get_running_loop()
        self.listener = listener
        self.connection_factory = connection_factory
        self.max_connections = max_connections
        self.connections: Set[Connection] = set()  # made, not closed yet
        # Accepted, and being made: counted here until the task that makes it ends (after the
        # connection is made, which counts it twice for a moment, or fails).
        self.accepted = 0
        self.reading = False
        self.stopped = False
        self._making: Set[asyncio.Task] = set()  # the loop keeps only weak references to tasks
        self._all_busy = _all_busy_response(max_connections)

    def start(self) -> None:
        self._read()

    def stop(self) -> None:
        self.stopped = True
        self._pause()

    def _read(self) -> None:
        if not self.reading and not self.stopped:
            self.loop.add_reader(self.listener.fileno(), self._accept)
            self.reading = True

    def _pause(self) -> None:
        if self.reading:
            self.loop.remove_reader(self.listener.fileno())
            self.reading = False

    def _accept(self) -> None:
        """The listening socket is readable: a connection is waiting."""
        for turn in range(ACCEPTS_PER_TURN):
            if len(self.connections) + self.accepted >= self.max_connections:
                # Room is made for one known to wait: on a later turn none may be, and if one
                # is, the socket is still readable and this is called again.
                if turn == 0 and not self._close_the_longest_idle():
                    self._refuse()
                return
            accepted = self._next()
            if accepted is None:
                return
            self.accepted += 1
            task = self.loop.create_task(self.loop.connect_accepted_socket(self._make, accepted))
            self._making.add(task)
            task.add_done_callback(self._made)

    def _next(self) -> Optional[socket.socket]:
        """The next connection waiting, or None when none is, or accept() failed."""
        try:
            accepted, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return None
        except OSError as error:
            if error.errno not in OUT_OF_RESOURCE:
                raise
            logger.error(
                "cannot accept a connection (%s) with %d open: accepting again in %d s; lower "
                "--max-connections, or raise the file limit (ulimit -n)",
                error,
                len(self.connections),
                RETRY_ACCEPT_S,
            )
            self._pause()
            self.loop.call_later(RETRY_ACCEPT_S, self._read)
            return None
        accepted.setblocking(False)
        return accepted

    def _make(self) -> Connection:
        return self.connection_factory(on_made=self.connections.add, on_lost=self._lost)

    def _made(self, task: asyncio.Task) -> None:
        self._making.discard(task)
        self.accepted -= 1

    def _lost(self, connection: Connection) -> None:
        self.connections.discard(connection)
        self._read()

    def _close_the_longest_idle(self) -> bool:
        """Closes the connection idle the longest, and stops accepting until a connection closes;
        False when none is idle."""
        idle = [connection for connection in self.connections if connection.idle]
        if not idle:
            return False
        longest = min(idle, key=lambda connection: connection.idle_since)
        logger.warning(
            "closed the connection idle longest (%.1f s) to make room for a new one: %d are open, "
            "the most this server holds (--max-connections, within the file limit)",
            self.loop.time() - longest.idle_since,
            self.max_connections,
        )
        longest.close()
        self._pause()  # until it is closed
        return True

    def _refuse(self) -> None:
        """Every connection has a request under way: the next one waiting is answered 503 and
        closed at once."""
        refused = self._next()
        if refused is None:
            return
        logger.warning(
            "answered a connection 503: all %d connections are busy with requests "
            "(--max-connections, within the file limit)",
            self.max_connections,
        )
        with refused:
            try:
                refused.recv(65536)  # what it sent: closing over unread bytes resets the connection
            except OSError:  # nothing yet, or it left
                pass
            try:
                refused.send(self._all_busy)
            except OSError:  # it left
                pass


def bound_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound to host and port as uvicorn binds it; socket.gaierror for a host
    that names no address, OSError for an address that cannot be bound (a port in use)."""
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    listener = socket.socket(family, kind, protocol)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError:
        listener.close()
        raise
    return listener


class Server(uvicorn.Server):
    """uvicorn's server, with its connections accepted by an Acceptor and closed when idle, on a
    socket bound before (bound_socket)."""

    def __init__(
        self,
        config: uvicorn.Config,
        listener: socket.socket,
        max_connections: int,
        idle_timeout_s: float,
    ):
        super().__init__(config)
        self.listener = listener
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.acceptor: Optional[Acceptor] = None

    async def startup(self, sockets=None) -> None:
        """As uvicorn's, on a listening socket that the Acceptor serves rather than asyncio."""
        listener = self.listener
        listener.listen(self.config.backlog)
        listener.setblocking(False)
        await super().startup(sockets=[])
        self.acceptor = Acceptor(listener, self._connection, self.max_connections)
        self.acceptor.start()

    def _connection(self, on_made, on_lost) -> Connection:
        return Connection(
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
            idle_timeout_s=self.idle_timeout_s,
            on_made=on_made,
            on_lost=on_lost,
        )

    async def shutdown(self, sockets=None) -> None:
        if self.acceptor is not None:
            self.acceptor.stop()
            self.acceptor.listener.close()
        await super().shutdown(sockets=sockets)
