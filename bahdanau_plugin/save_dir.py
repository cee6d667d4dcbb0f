"""A training run owns its --save-dir: one run at a time, checked before training starts.

fairseq 0.12 lets two fairseq-train runs write into one --save-dir: the second overwrites the
first's checkpoints without a word, or dies in a traceback when both rename the same temporary
file. For these models (fairseq_patches.own_the_save_dir_in_training), a run holds its --save-dir
(``hold``, folder_hold.py): an exclusive lock on a file there, HOLD, which names the process, until
the run exits. A second run is refused in one line that names the holder, and so is a second
training in the same process (a hydra multirun's jobs); a hold whose process was killed is taken
over, in one warning line.

fairseq checks that it can write a file into --save-dir before anything else: a --save-dir that is
a file or read-only fails there in a traceback, explained in one line by ``unwritable_save_dir``.
A disk too full for a checkpoint fails only when the first one is saved: ``check_room`` reserves
the room for the model's parameters as a checkpoint stores them (every checkpoint holds them, and
the optimizer's state besides), before training. A --save-dir that holds checkpoints of a point of
training past the --restore-file (or --finetune-from-model) the run starts from, past epoch 1
where --reset-dataloader starts the epochs again, or any numbered checkpoint where the run starts
from scratch, having no checkpoint_last.pt to resume, is refused (``check_no_later_checkpoints``):
the run would overwrite them, and fairseq's --keep-last-epochs delete its own.
"""

import atexit
import errno
import os
import re
from typing import List, Optional

import torch
from fairseq import checkpoint_utils

from . import errors
from .errors import PluginError
from .folder_hold import HoldWords, hold_folder, is_held

HOLD = ".training-run.json"
ROOM_PROBE = ".room-for-a-checkpoint"


class SaveDirError(PluginError):
    """A --save-dir that this run cannot use."""


def hold(save_dir: str) -> None:
    """Hold save_dir for this process until it exits; a SaveDirError naming the holder where a
    live process holds it already."""
    # A second training in one process (hydra's multirun runs its jobs so) that names a folder
    # held already would resume the first's checkpoints as its own.
    if is_held(save_dir, HOLD):
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


def later_checkpoints(save_dir: str, suffix: str, epoch: int, updates: int) -> List[str]:
    """The checkpoints in save_dir that a run starting at epoch (after updates) would write again:
    fairseq's checkpointE.pt of epoch E or later, checkpoint_E_U.pt of more updates, and, for a
    run starting from no update (from scratch, --finetune-from-model), checkpoint_best.pt, which
    its first validation writes, no best score known."""
    epochs = re.compile(rf"checkpoint(\d+){re.escape(suffix)}\.pt")
    steps = re.compile(rf"checkpoint_\d+_(\d+){re.escape(suffix)}\.pt")
    later = []
    for name in os.listdir(save_dir):
        of_epoch, of_step = epochs.fullmatch(name), steps.fullmatch(name)
        if (of_epoch and int(of_epoch.group(1)) >= epoch) or (
            of_step and int(of_step.group(1)) > updates
        ):
            later.append(name)
    best = f"checkpoint_best{suffix}.pt"
    later += [best] * (updates == 0 and os.path.isfile(os.path.join(save_dir, best)))
    return sorted(later, key=lambda name: [int(n) for n in re.findall(r"\d+", name)])


def check_no_later_checkpoints(
    save_dir: str, suffix: str, epoch: int, updates: int, why: str = ""
) -> None:
    """A SaveDirError where save_dir holds checkpoints of a training past the point this run starts
    from (a --restore-file or --finetune-from-model of an earlier point, --reset-dataloader,
    which starts again from epoch 1, or no checkpoint to resume at all; why: the words that say
    which): fairseq would write its own over them, mixing two trainings under one folder's names,
    and --keep-last-epochs (--keep-interval-updates) would delete the run's new checkpoints, ranked
    under those."""
    later = later_checkpoints(save_dir, suffix, epoch, updates)
    if later:
        shown = ", ".join(later[:3]) + (f" and {len(later) - 3} more" if len(later) > 3 else "")
        raise SaveDirError(
            f"--save-dir {save_dir} holds checkpoints saved past the point this run starts from "
            f"(epoch {epoch}, {updates} updates{why}): {shown}, which it would overwrite (and "
            "--keep-last-epochs delete its own checkpoints, ranked under them): move them aside, "
            "or give this run another --save-dir"
        )


# The words of check_no_later_checkpoints for a run whose --reset-dataloader starts at epoch 1.
STARTING_AGAIN = ": --reset-dataloader starts the epochs again from 1, at every launch"
# Its words for a run that found no checkpoint to resume, its --save-dir's checkpoint_last.pt
# missing (never written under --no-last-checkpoints, or removed): fairseq starts from scratch.
STARTING_FROM_SCRATCH = (
    ": from scratch, as there is no checkpoint_last.pt to resume (--no-last-checkpoints writes "
    "none); to go on from one of them, give it as --restore-file"
)


def unwritable_save_dir(error: BaseException) -> Optional[str]:
    """One line for the OSError of fairseq's check that it can write into --save-dir
    (checkpoint_utils.verify_checkpoint_directory), the folder read from the error's traceback;
    None for errors of any other kind."""
    if not isinstance(error, OSError):
        return None
    given = errors.locals_where(error, checkpoint_utils.verify_checkpoint_directory.__code__)
    if given is None:
        return None
    save_dir = given["save_dir"]
    return (
        f"cannot write checkpoints into --save-dir {save_dir}: {_cause(save_dir, error)}; "
        "give a folder this run can write to"
    )


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
