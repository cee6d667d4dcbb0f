"""How many connections bahdanau-serve may hold open within the process's file limit
(RLIMIT_NOFILE, what `ulimit -n` sets): a server that runs out of files can accept nothing, and
asyncio then logged its accept error thousands of times a second while every request timed out.

Each connection takes its socket, and a file of the page while one is sent (FILES_PER_CONNECTION);
the files already open (the model's libraries, logs, the terminal) and RESERVE more (uvicorn's event
loop and listening socket, modules imported later) stay outside the connections. The soft limit is
raised as far as --max-connections needs, up to the hard limit, which a process may do itself; the
connections are then as many as --max-connections asks, or as the limit leaves room for.
"""

import os
import resource
from typing import NamedTuple

from bahdanau_plugin.errors import PluginError

FILES_PER_CONNECTION = 2
RESERVE = 32


class FileLimitError(PluginError):
    """A file limit that leaves no room for a connection."""


class ConnectionRoom(NamedTuple):
    connections: int  # the most held open at once
    file_limit: int  # the soft limit, after raising it
    files_needed: int  # the soft limit that would hold every connection asked for


def open_files() -> int:
    return len(os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"))


def _raise_soft_limit(needed: int) -> int:
    """The soft limit, raised to needed if it is lower, as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return needed if soft == resource.RLIM_INFINITY else soft
    raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    except (ValueError, OSError):  # macOS caps the soft limit below an unlimited hard one
        return soft
    return raised


def connection_room(max_connections: int) -> ConnectionRoom:
    """The connections the file limit holds, up to max_connections; FileLimitError for none."""
    already_open = open_files()
    outside = already_open + RESERVE
    needed = outside + FILES_PER_CONNECTION * max_connections
    limit = _raise_soft_limit(needed)
    connections = min(max_connections, (limit - outside) // FILES_PER_CONNECTION)
    if connections < 1:
        raise FileLimitError(
            f"the file limit (ulimit -n {limit}) leaves no room for a connection: bahdanau-serve "
            f"has {already_open} files open, keeps {RESERVE} more for itself and needs "
            f"{FILES_PER_CONNECTION} per connection: raise the limit (ulimit -n {needed}) or "
            "lower --max-connections"
        )
    return ConnectionRoom(connections, limit, needed)
