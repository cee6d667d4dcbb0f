"""A folder held by one run at a time: an exclusive lock (POSIX, fcntl) on a file in it, which
names the process that holds it.

A second run is refused in one line that names the holder; the system releases the lock when the
holder ends, however it ends, so a hold whose process was killed is taken over, in one warning
line. The holder removes the file as it releases it. The lock is taken on the file's only
descriptor in the process, which nothing else opens: closing another would release it. fairseq-train
holds its --save-dir for these models (save_dir.py), bahdanau-prepare-data its --out, each in its
own words (``HoldWords``).
"""

import datetime
import errno
import fcntl
import functools
import json
import os
import socket
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Type

from .errors import PluginError

COMMAND_SHOWN = 120  # characters of the holder's command named in a line


@dataclass(frozen=True)
class HoldWords:
    """How a hold's lines name the folder and the runs that hold it."""

    folder: str  # as the user gave it, with its option: "--save-dir checkpoints"
    holders: str  # the kind of run that holds it: "another training run"
    remedy: str  # what to do instead of waiting: "give this run another --save-dir"
    error: Type[PluginError]  # what refuses the folder


# This process's holds, by hold file. A POSIX lock never refuses the process that holds it, so a
# second hold in the same process is refused here; closing its descriptor would also release the
# first hold's lock.
_HELD: Dict[str, int] = {}


def is_held(folder: str, hold_file: str) -> bool:
    """Whether this process holds folder already."""
    return _hold_file(folder, hold_file) in _HELD


@contextmanager
def holding(folder: str, hold_file: str, words: HoldWords) -> Iterator[None]:
    """folder held (hold_folder) while the block runs."""
    release = hold_folder(folder, hold_file, words)
    try:
        yield
    finally:
        release()


def hold_folder(folder: str, hold_file: str, words: HoldWords) -> Callable[[], None]:
    """Hold folder for this process: an exclusive lock on the file hold_file there, which names
    the process; the function that releases it. A words.error naming the holder where a live
    process, this one included, holds it already; a warning line where the process that held it
    ended without releasing it."""
    path = _hold_file(folder, hold_file)
    if path in _HELD:
        raise words.error(_in_use(words, _holder(_HELD[path], hold_file)))
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # a POSIX lock, the process's own: the processes it forks (fairseq's data loading
            # workers) do not inherit it, so it is released as soon as this one ends
            fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            holder = _holder(descriptor, hold_file) or "one that is starting"
            os.close(descriptor)
            raise words.error(_in_use(words, holder)) from None
        if _still_named(descriptor, path):
            break
        os.close(descriptor)  # its holder removed it as it exited: hold the file made anew
    previous = _holder(descriptor, hold_file)
    if previous:
        print(
            f"warning: {words.folder} was held by {previous}, which ended without releasing it "
            "(killed?): this run takes it over",
            file=sys.stderr,
            flush=True,
        )
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, json.dumps(_this_process()).encode("utf-8"), 0)
    _HELD[path] = descriptor
    return functools.partial(_release, path, descriptor)


def _hold_file(folder: str, hold_file: str) -> str:
    return os.path.join(os.path.realpath(folder), hold_file)


def _in_use(words: HoldWords, holder: str) -> str:
    return (
        f"{words.folder} is in use by {words.holders}, {holder}: wait for it to end, or "
        f"{words.remedy}"
    )


def _still_named(descriptor: int, path: str) -> bool:
    """Whether path still names the file open as descriptor."""
    try:
        return os.path.samestat(os.fstat(descriptor), os.stat(path))
    except FileNotFoundError:
        return False


def _this_process() -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join(sys.argv),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def _holder(descriptor: int, hold_file: str) -> str:
    """The process a hold file names, in words; "" for an empty file."""
    text = os.pread(descriptor, 65536, 0).decode("utf-8", "replace").strip()
    if not text:
        return ""
    try:
        holder = json.loads(text)
        command = holder["command"]
        if len(command) > COMMAND_SHOWN:
            command = command[: COMMAND_SHOWN - 3] + "..."
        return f"process {holder['pid']} on {holder['host']} since {holder['started']} ({command})"
    except (ValueError, KeyError, TypeError):
        return f"the process its {hold_file} names ({text[:COMMAND_SHOWN]})"


def _release(path: str, descriptor: int) -> None:
    if _still_named(descriptor, path):
        os.remove(path)
    os.close(descriptor)
    del _HELD[path]
