"""An output folder is checked before the work (bahdanau_plugin/output_folder.py): created with its
parents, written to, left as it was; what cannot take the outputs is one line naming the option,
the folder and the cause. tests/bahdanau_tools/test_output_folders.py runs the commands that use
it on read-only folders and full disks."""

import errno

import pytest

from bahdanau_plugin.output_folder import (
    OutputFolderError,
    check_output_folder,
    output_folder,
    write_failures_explained,
)


def test_a_missing_folder_is_created_with_its_parents_and_left_empty(tmp_path):
    out = tmp_path / "a" / "b"
    assert check_output_folder(out, "--out") == out
    assert out.is_dir() and list(out.iterdir()) == []


def test_the_folders_made_for_a_block_that_fails_are_removed(tmp_path):
    with pytest.raises(KeyError), output_folder(tmp_path / "a" / "b", "--out"):
        raise KeyError("an input refused")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_made_for_a_block_that_fails_stays_once_written_in(tmp_path):
    with pytest.raises(KeyError), output_folder(tmp_path / "a" / "b", "--out") as out:
        (out / "stage.txt").write_text("kept\n", encoding="utf-8")
        raise KeyError("stopped after a stage")
    assert (tmp_path / "a" / "b" / "stage.txt").read_text(encoding="utf-8") == "kept\n"


def test_a_folder_that_is_a_file_is_refused_and_the_file_kept(tmp_path):
    (tmp_path / "out").write_text("kept\n", encoding="utf-8")
    with pytest.raises(OutputFolderError) as raised:
        check_output_folder(tmp_path / "out", "--out-dir")
    assert str(raised.value) == (
        f"--out-dir {tmp_path / 'out'} is a file, not a folder: give a folder (it is created if "
        "missing)"
    )
    assert (tmp_path / "out").read_text(encoding="utf-8") == "kept\n"


def test_a_folder_below_a_file_is_refused_naming_the_cause(tmp_path):
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(OutputFolderError) as raised:
        check_output_folder(tmp_path / "file" / "out", "--out")
    assert str(raised.value) == (
        f"--out {tmp_path / 'file' / 'out'} cannot take the outputs: a folder on its path is a "
        "file; give a folder you can write to"
    )


def test_a_write_that_fails_for_want_of_space_is_one_line_naming_the_file(tmp_path):
    with pytest.raises(OutputFolderError) as raised:
        with write_failures_explained(tmp_path, "--out", "; a rerun keeps what finished"):
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.bin"))
    assert str(raised.value) == (
        f"writing {tmp_path / 'x.bin'} failed: no space left on device; free some space on its "
        "disk, or give a folder on another disk; a rerun keeps what finished"
    )


def test_a_write_failure_without_a_file_name_names_the_folder(tmp_path):
    with pytest.raises(OutputFolderError, match=f"^writing under --out-dir {tmp_path} failed: "):
        with write_failures_explained(tmp_path, "--out-dir"):
            raise OSError(errno.EROFS, "Read-only file system")


def test_other_errors_go_on_as_they_are(tmp_path):
    with pytest.raises(FileNotFoundError):
        with write_failures_explained(tmp_path, "--out"):
            (tmp_path / "missing").read_text(encoding="utf-8")
