"""Checkpoints written whole: a file under a checkpoint's name is always complete.

fairseq 0.12's save_checkpoint writes a save's first file (checkpoint_E_U.pt, say) through
torch_persistent_save, under a temporary name then renamed, and copies it to the others
(checkpoint_best.pt, checkpoint_last.pt) in place: a process killed, or a disk that fills, during a
copy leaves checkpoint_last.pt cut short, and the next run cannot resume from it. A full disk ends
training in a traceback, after three tries 2.5 seconds apart, its temporary file left behind.

While fairseq-train saves these models (fairseq_patches.own_the_save_dir_in_training), every file is
written as the first one is, under a temporary name, then synced and renamed
(``checkpoints_written_whole``): the copies through a PathManager whose ``copy`` does that
(``PathManagerCopyingWhole``), the first through ``save_whole``. A write that fails removes its
temporary file and ends training in one line that names the file and the system's reason
(``CheckpointSaveError``); the checkpoints saved before keep their contents. Remote paths (fairseq's
PathManager handlers) and --write-checkpoints-asynchronously are fairseq's own.
"""

import contextlib
import os
import shutil
from typing import Optional

import torch
from fairseq import checkpoint_utils

from .errors import PluginError
from .output_folder import written_whole


class CheckpointSaveError(PluginError):
    """A checkpoint that could not be written (a full disk, a file size limit)."""


def os_error(error: BaseException) -> Optional[OSError]:
    """The OSError behind an error: torch.save reports a failed write as a RuntimeError whose
    context is the file's OSError."""
    while error is not None and not isinstance(error, OSError):
        error = error.__cause__ or error.__context__
    return error


@contextlib.contextmanager
def replacing_whole(path: str):
    """A file opened for writing in place of path, which takes path's name only once whole and
    on disk (output_folder.written_whole); a failed write is one line naming the checkpoint."""
    try:
        with written_whole(path) as file:
            yield file
    except Exception as error:
        cause = os_error(error)
        if cause is None:
            raise
        raise CheckpointSaveError(
            f"cannot save checkpoint {path}: {cause.strerror}; the checkpoints saved before are "
            "kept whole: make room on its disk (or give another --save-dir), then run the same "
            "command to resume"
        ) from error


def save_whole(fairseqs_save):
    """fairseq's torch_persistent_save, writing a local checkpoint with replacing_whole."""

    def torch_persistent_save(obj, filename, async_write: bool = False):
        if async_write or checkpoint_utils.PathManager.path_requires_pathmanager(filename):
            return fairseqs_save(obj, filename, async_write=async_write)
        with replacing_whole(filename) as file:
            torch.save(obj, file)

    return torch_persistent_save


class PathManagerCopyingWhole:
    """fairseq's PathManager, but for ``copy``, which copies a local file with replacing_whole."""

    def __init__(self, path_manager):
        self._path_manager = path_manager

    def __getattr__(self, name):
        return getattr(self._path_manager, name)

    def copy(self, src_path: str, dst_path: str, overwrite: bool = False) -> bool:
        manager = self._path_manager
        remote = manager.path_requires_pathmanager(src_path) or manager.path_requires_pathmanager(
            dst_path
        )
        if remote or (not overwrite and os.path.exists(dst_path)):
            return manager.copy(src_path, dst_path, overwrite=overwrite)
        with replacing_whole(dst_path) as file, open(src_path, "rb") as source:
            shutil.copyfileobj(source, file)
        return True


@contextlib.contextmanager
def checkpoints_written_whole():
    """fairseq's save_checkpoint, run in this block, writes every file whole."""
    path_manager, save = checkpoint_utils.PathManager, checkpoint_utils.torch_persistent_save
    checkpoint_utils.PathManager = PathManagerCopyingWhole(path_manager)
    checkpoint_utils.torch_persistent_save = save_whole(save)
    try:
        yield
    finally:
        checkpoint_utils.PathManager, checkpoint_utils.torch_persistent_save = path_manager, save
