"""A training run owns its --save-dir: one run at a time, checked before training starts.

fairseq 0.12 lets two fairseq-train runs write into one --save-dir: the second overwrites the
first's checkpoints without a word, or dies in a traceback when both rename the same temporary
file. For these models (fairseq_patches.own_the_save_dir_in_training), a run holds its --save-dir
(``hold``): an exclusive lock (POSIX, fcntl) on a file there, HOLD, which names the process. A
second run is refused in one line that names the holder; the system releases the lock when the
holder ends, however it ends, so a hold whose process was killed is taken over, in one warning
line. The run removes the file as it exits. The lock is taken on the file's only descriptor in the
process, which nothing else opens: closing another would release it. ``hold_folder`` is that hold
for any folder and any tool, in its own words: bahdanau-prepare-data holds its --out with it for
the length of a run (``holding``).

fairseq checks that it can write a file into --save-dir before anything else: a --save-dir that is
a file or read-only fails there in a traceback, explained in one line by ``unwritable_save_dir``.
A disk too full for a checkpoint fails only when the first one is saved: ``check_room`` reserves
the room for the model's parameters as a checkpoint stores them (every checkpoint holds them, and
the optimizer's state besides), before training.
"""

import atexit
import datetime
import errno
import fcntl
import functools
import json
import os
import socket
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Optional, Type

import torch
from fairseq import checkpoint_utils

from . import errors
from .errors import PluginError

HOLD = ".training-run.json"
ROOM_PROBE = ".room-for-a-checkpoint"
COMMAND_SHOWN = 120  # characters of the holder's command named in a line


class SaveDirError(PluginError):
    """A --save-dir that this run cannot use."""


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


def hold(save_dir: str) -> None:
    """Hold save_dir for this process until it exits; a SaveDirError naming the holder where a
    live process holds it already."""
    # A second training in one process (hydra's multirun runs its jobs so) that names a folder
    # held already would resume the first's checkpoints as its own.
    if _hold_file(save_dir, HOLD) in _HELD:
        raise SaveDirError(
            f"--save-dir {save_dir} holds the checkpoints of an earlier training in this process "
            "(a job of a hydra multirun, say), which this one would resume and overwrite: give "
            "each its own, such as checkpoint.save_dir=checkpoints/${hydra:job.num}"
        )
    words = HoldWords(
        f"--save-dir {save_dir}",
        "another training run",
        "give this run another --save-dir",
        SaveDirError,
    )
    atexit.register(hold_folder(save_dir, HOLD, words))


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


class _Counting:
    """A file that keeps nothing but the number of bytes written to it."""

    def __init__(self):
        self.size = 0

    def write(self, data) -> int:
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass


def stored_size(model: torch.nn.Module) -> int:
    """The bytes that the model's parameters take in a checkpoint (torch.save's format)."""
    counting = _Counting()
    torch.save(model.state_dict(), counting)
    return counting.size


def check_room(save_dir: str, model: torch.nn.Module) -> None:
    """A SaveDirError where save_dir's disk (or a quota, or a file size limit) has no room for the
    model's parameters as a checkpoint stores them: reserved (posix_fallocate), then removed.
    Systems without posix_fallocate (macOS) find a full disk at the first save."""
    if not hasattr(os, "posix_fallocate"):
        return
    size = stored_size(model)
    probe = os.path.join(save_dir, ROOM_PROBE)
    try:
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.posix_fallocate(descriptor, 0, size)
        finally:
            os.close(descriptor)
            os.remove(probe)
    except OSError as error:
        if error.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system that cannot tell
            return
        raise SaveDirError(
            f"--save-dir {save_dir} has no room for a checkpoint of this model (its parameters "
            f"alone take {size:,} bytes there): {error.strerror}; make room on its disk, or give "
            "another --save-dir"
        ) from None


def unwritable_save_dir(error: BaseException) -> Optional[str]:
    """One line for the OSError of fairseq's check that it can write into --save-dir
    (checkpoint_utils.verify_checkpoint_directory), the folder read from the error's traceback;
    None for errors of any other kind."""
    if not isinstance(error, OSError):
        return None
    verifying = checkpoint_utils.verify_checkpoint_directory.__code__
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code is verifying:
            save_dir = frame.f_locals["save_dir"]
            return (
                f"cannot write checkpoints into --save-dir {save_dir}: {_cause(save_dir, error)}; "
                "give a folder this run can write to"
            )
    return None


def _cause(save_dir: str, error: OSError) -> str:
    if os.path.isfile(save_dir):
        return "it is a file, not a folder"
    if error.errno == errno.ENOTDIR:
        return f"{error.filename} is inside a file, not a folder"
    if error.errno == errno.EROFS:
        return "its file system is read-only"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"it is read-only for this user ({error.strerror}: {error.filename})"
    return f"{error.strerror} ({error.filename})"


errors.EXPLANATIONS.append(unwritable_save_dir)
