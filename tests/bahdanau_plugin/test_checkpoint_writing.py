"""A checkpoint file is written whole or not at all (bahdanau_plugin/checkpoint_writing.py): a
write that fails (a full disk, a file size limit) keeps what the file held, removes its temporary
file and says why in one line."""

import contextlib
import errno
import os
import resource

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.file_io import PathManager

from bahdanau_plugin.checkpoint_writing import (
    CheckpointSaveError,
    PathManagerCopyingWhole,
    checkpoints_written_whole,
    replacing_whole,
)
from bahdanau_plugin.output_folder import TEMPORARY

OLD = b"the checkpoint saved before"


@contextlib.contextmanager
def files_limited_to(size: int):
    """Writes past size bytes fail with EFBIG, as writes on a full disk fail with ENOSPC (Python
    ignores the SIGXFSZ that comes with them)."""
    previous = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, previous[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, previous)


@pytest.fixture
def saved_before(tmp_path):
    path = tmp_path / "checkpoint_last.pt"
    path.write_bytes(OLD)
    return path


def test_a_file_takes_the_checkpoint_s_name_once_written(saved_before):
    with replacing_whole(str(saved_before)) as file:
        file.write(b"new")
        assert saved_before.read_bytes() == OLD
    assert saved_before.read_bytes() == b"new"
    assert os.listdir(saved_before.parent) == [saved_before.name]


def test_a_write_that_fails_keeps_the_file_removes_its_temporary_file_and_says_why(saved_before):
    with pytest.raises(CheckpointSaveError, match="No space left on device") as failed:
        with replacing_whole(str(saved_before)) as file:
            file.write(b"half a checkpoint")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert str(failed.value).startswith(f"cannot save checkpoint {saved_before}: ")
    assert saved_before.read_bytes() == OLD
    assert os.listdir(saved_before.parent) == [saved_before.name]


def test_a_torch_save_that_fails_says_the_system_s_reason(saved_before):
    """torch.save reports a failed write as a RuntimeError of its own; the OSError is behind it."""
    with pytest.raises(CheckpointSaveError, match="File too large"):
        with files_limited_to(4096), checkpoints_written_whole():
            checkpoint_utils.torch_persistent_save({"w": torch.ones(10_000)}, str(saved_before))
    assert saved_before.read_bytes() == OLD
    assert not (saved_before.parent / (saved_before.name + TEMPORARY)).exists()


def test_a_copy_that_fails_keeps_the_copy_s_destination_whole(saved_before):
    source = saved_before.parent / "checkpoint_1_5.pt"
    source.write_bytes(b"x" * 100_000)
    with pytest.raises(CheckpointSaveError, match="File too large"):
        with files_limited_to(50_000):
            PathManagerCopyingWhole(PathManager).copy(
                str(source), str(saved_before), overwrite=True
            )
    assert saved_before.read_bytes() == OLD
    assert sorted(os.listdir(saved_before.parent)) == [source.name, saved_before.name]


def test_after_the_block_fairseq_saves_and_copies_with_its_own_functions():
    save, path_manager = checkpoint_utils.torch_persistent_save, checkpoint_utils.PathManager
    with checkpoints_written_whole():
        assert checkpoint_utils.torch_persistent_save is not save
        assert checkpoint_utils.PathManager is not path_manager
    assert checkpoint_utils.torch_persistent_save is save
    assert checkpoint_utils.PathManager is path_manager
