"""Output folders, checked before the work: a folder that cannot take the outputs is one line that
names it and the cause, before anything is computed, not a traceback after it.

``check_output_folder`` refuses a path that is a file, or a folder that cannot be created, is
read-only or is on a full disk: it creates the folder (and its parents) and writes a small file
there, then deletes it. bahdanau-prepare-data (``--out``), bahdanau-evaluate and
bahdanau-plot-alignment (``--out-dir``) check first; it takes the option's name, so it fits any
tool's output folder. ``check_output_file`` does the same for the folder of an output file
(bahdanau-average-checkpoints' and bahdanau-unk-dictionary's ``--output``), which must not be a
folder itself. The tools check within ``output_folder`` or ``output_file``: the folders the check
made are removed again if the tool ends in an error before writing in them (a checkpoint that does
not load, a corpus not found), so that a refused input leaves no empty folder behind. A disk that
fills while the tool writes, after the check, ends the tool in one line too:
``write_failures_explained`` turns the OSError into it. ``written_whole`` writes a file under a
temporary name, then renames it, so that a failed write keeps what the file held.
"""

import contextlib
import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Dict, Iterable, Iterator

from .errors import PluginError

# The suffix of a file being written before it takes its name: fairseq's own for the checkpoint
# file torch_persistent_save renames.
TEMPORARY = ".tmp"
# What the check writes: enough to need a block of a disk that is full, not enough to take time.
PROBE_BYTES = 64 * 1024
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# The errors of writing that say where the outputs go, not what they are.
WRITE_FAILURES = NO_SPACE + (errno.EROFS, errno.EFBIG)


class OutputFolderError(PluginError):
    """An output folder that cannot take a tool's outputs, explained in one line that says what to
    do."""


def check_output_folder(path: Path, option: str) -> Path:
    """path, created if missing, after checking that files can be written there."""
    if path.exists() and not path.is_dir():
        raise OutputFolderError(
            f"{option} {path} is a file, not a folder: give a folder (it is created if missing)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        _write_and_delete_a_file(path)
    except OSError as error:
        raise OutputFolderError(
            f"{option} {path} cannot take the outputs: {cause(error)}; {remedy(error)}"
        ) from None
    return path


def check_output_file(path: Path, option: str, example: str) -> Path:
    """path, the file a tool writes, checked before the work: not a folder, and in a folder that
    can take it (check_output_folder's checks)."""
    if path.is_dir():
        raise OutputFolderError(
            f"{option} {path} is a folder: name the file to write in it, such as {path / example}"
        )
    check_output_folder(path.parent, f"{option}'s folder")
    return path


@contextmanager
def output_folder(path: Path, option: str) -> Iterator[Path]:
    """path checked (check_output_folder) for the block; if the block raises, the folders that the
    check made (path and its missing parents) are removed where they are still empty."""
    with _made_removed_if_unused(path):
        yield check_output_folder(path, option)


@contextmanager
def output_file(path: Path, option: str, example: str) -> Iterator[Path]:
    """path checked (check_output_file) for the block; as output_folder, for its folder."""
    with _made_removed_if_unused(path.parent):
        yield check_output_file(path, option, example)


@contextmanager
def _made_removed_if_unused(folder: Path) -> Iterator[None]:
    missing = [path for path in (folder, *folder.parents) if not path.exists()]  # deepest first
    try:
        yield
    except BaseException:
        for path in missing:  # one that holds anything stays, and so do those above it
            try:
                path.rmdir()
            except OSError:
                break
        raise


def check_no_input_replaced(output: Path, inputs: Dict[str, Iterable[Path]], product: str) -> None:
    """The file a tool writes (--output) is none of those it reads, by what each is (``inputs``),
    compared where they resolve to (a link, another spelling of the path): the ``product`` would
    take that file's place, and it would be lost."""
    for what, paths in inputs.items():
        if output.resolve() in {path.resolve() for path in paths}:
            raise OutputFolderError(
                f"--output {output} is {what}, which the {product} would replace: name another file"
            )


@contextmanager
def written_whole(path: str) -> Iterator[BinaryIO]:
    """A file opened for writing in place of path, which takes path's name only once whole and
    on disk; if writing fails, it is removed, path keeps what it held, and the error goes on."""
    temporary = path + TEMPORARY
    try:
        with open(temporary, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


def _write_and_delete_a_file(folder: Path) -> None:
    descriptor, name = tempfile.mkstemp(dir=folder, prefix=".write-check-")
    try:
        with os.fdopen(descriptor, "wb") as probe:
            probe.write(bytes(PROBE_BYTES))
            probe.flush()
            os.fsync(probe.fileno())  # where a disk reports that it is full only now
    finally:
        os.unlink(name)


@contextmanager
def write_failures_explained(folder: Path, option: str, then: str = "") -> Iterator[None]:
    """An error of writing (a full disk, a file system that turned read-only) that ends the block
    becomes one line naming the file (or the folder) and the cause; then: what else to say (what
    a rerun keeps, say). Other errors go on as they are."""
    try:
        yield
    except OSError as error:
        if error.errno not in WRITE_FAILURES:
            raise
        where = error.filename or f"under {option} {folder}"
        raise OutputFolderError(
            f"writing {where} failed: {cause(error)}; {remedy(error)}{then}"
        ) from None


def cause(error: OSError) -> str:
    """The cause of an error of writing or creating a folder, in words."""
    if error.errno == errno.ENOTDIR:
        return "a folder on its path is a file"
    return (error.strerror or str(error)).lower()


def remedy(error: OSError) -> str:
    """What to do about it."""
    if error.errno in NO_SPACE:
        return "free some space on its disk, or give a folder on another disk"
    return "give a folder you can write to"
