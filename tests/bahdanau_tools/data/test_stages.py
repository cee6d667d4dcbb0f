"""A stage record that is not one (damaged, or edited by hand) counts as none: the stage runs again,
after one warning line that names the file. A stage whose input or output changed runs again, even
where the new file has the old one's size and times, as after `cp -p`."""

import json
import os

import pytest

from bahdanau_tools.data import digests
from bahdanau_tools.data.stages import Stages
from bahdanau_tools.errors import DataError

from .copying import overwrite_keeping_size_and_times


@pytest.mark.parametrize(
    "damaged",
    [b'{"key": {"settings"', b"[]", b'{"key": {}, "result": 1}', b"\xff\xfe"],
    ids=["cut short", "not an object", "without outputs", "not UTF-8"],
)
def test_a_damaged_stage_record_is_named_in_a_warning_and_the_stage_runs_again(
    tmp_path, capsys, damaged
):
    stages = Stages(tmp_path)
    stages.run("count", None, [], [], lambda: 1)
    record = tmp_path / "stages" / "count.json"
    record.write_bytes(damaged)
    capsys.readouterr()
    assert stages.run("count", None, [], [], lambda: 2) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {record} is not the record of a finished stage (damaged?): the stage runs again"
    ]


def copy_stage(out, source):
    """A stage that copies source's text, run as a new process runs it (a Stages of its own)."""
    return Stages(out).run("copy", None, [source], [], source.read_text)


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "source.txt"
    path.write_text("old")
    return path


def test_an_input_overwritten_with_the_same_size_and_times_runs_the_stage_again(tmp_path, source):
    """`cp -p` of another file of the same size: its modification time is the old file's."""
    copy_stage(tmp_path, source)
    overwrite_keeping_size_and_times(source, b"new")
    assert copy_stage(tmp_path, source) == "new"


def test_a_stage_run_again_for_a_changed_input_names_it_in_one_line(tmp_path, source, capsys):
    copy_stage(tmp_path, source)
    source.write_text("new")
    capsys.readouterr()
    copy_stage(tmp_path, source)
    assert capsys.readouterr().err.splitlines() == [
        f"copy: {source} changed since the earlier run: the stage runs again"
    ]


def test_an_input_written_while_its_stage_reads_it_stops_the_run_without_a_record(tmp_path, source):
    """The stage read two versions of it: one side's lines after a copy over it beside the other
    side's from before, pairs that do not translate each other, kept by the next run."""

    def read_while_it_is_written():
        text = source.read_text()
        source.write_text("new")
        return text

    with pytest.raises(DataError, match=f"{source} changed while the copy stage read it"):
        Stages(tmp_path).run("copy", None, [source], [], read_while_it_is_written)
    assert not (tmp_path / "stages" / "copy.json").exists()


def test_an_input_touched_without_a_change_of_content_keeps_the_stage(tmp_path, source):
    """A change of metadata alone (touch, chmod) costs a hashing of the file, not a rerun."""
    copy_stage(tmp_path, source)
    os.utime(source, ns=(0, 0))
    assert Stages(tmp_path).run("copy", None, [source], [], lambda: "run again") == "old"


def test_an_output_overwritten_with_the_same_size_and_times_runs_the_stage_again(tmp_path):
    output = tmp_path / "output.txt"

    def write_output():
        output.write_text("made")
        return "ran"

    Stages(tmp_path).run("make", None, [], [output], write_output)
    overwrite_keeping_size_and_times(output, b"edit")
    assert Stages(tmp_path).run("make", None, [], [output], lambda: "ran again") == "ran again"


def test_a_rerun_reads_no_file_that_is_unchanged_since_it_was_hashed(tmp_path, source, monkeypatch):
    """What keeps a rerun as fast as before: WMT'14's archives and outputs are some 40 GB."""
    copy_stage(tmp_path, source)
    hashed = []
    monkeypatch.setattr(digests, "content_digest", lambda path: hashed.append(path))
    copy_stage(tmp_path, source)
    assert hashed == []


def write_legacy_record(out, source, result):
    """The record an earlier version of the tool left for copy_stage: sizes and times, no digest."""
    status = source.stat()
    record = {
        "key": {"settings": None, "inputs": {str(source): [status.st_size, status.st_mtime_ns]}},
        "outputs": {},
        "result": result,
    }
    (out / "stages").mkdir(exist_ok=True)
    (out / "stages" / "copy.json").write_text(json.dumps(record))


def test_a_record_of_the_earlier_version_whose_files_match_keeps_its_stage(tmp_path, source):
    """A folder prepared before (hours of WMT'14) is not prepared again for the upgrade: the
    record is kept once as that version kept it, and holds digests from then on."""
    write_legacy_record(tmp_path, source, "as recorded")
    assert copy_stage(tmp_path, source) == "as recorded"
    overwrite_keeping_size_and_times(source, b"new")
    assert copy_stage(tmp_path, source) == "new"


def test_a_record_of_the_earlier_version_whose_input_changed_runs_its_stage_again(tmp_path, source):
    write_legacy_record(tmp_path, source, "as recorded")
    source.write_text("newer")
    assert copy_stage(tmp_path, source) == "newer"


def test_an_input_given_by_another_spelling_of_its_path_keeps_the_stage(
    tmp_path, source, monkeypatch
):
    """Relative one day, absolute the next (or from another folder, or through a link): the same
    file, whose stages (hours of WMT'14) are not redone, nor said to have changed."""
    copy_stage(tmp_path, source)
    monkeypatch.chdir(tmp_path)
    relative = source.relative_to(tmp_path)
    assert Stages(tmp_path).run("copy", None, [relative], [], lambda: "run again") == "old"


def test_an_output_under_another_spelling_of_the_output_folder_keeps_the_stage(
    tmp_path, monkeypatch
):
    """--out wmt14 after --out /data/wmt14: the same folder, whose outputs the stage keeps."""
    output = tmp_path / "output.txt"

    def write_output():
        output.write_text("made")
        return "ran"

    Stages(tmp_path).run("make", None, [], [output], write_output)
    monkeypatch.chdir(tmp_path.parent)
    out = tmp_path.relative_to(tmp_path.parent)
    assert Stages(out).run("make", None, [], [out / "output.txt"], lambda: "ran again") == "ran"


def test_a_changed_input_given_by_another_spelling_is_named_alone(tmp_path, monkeypatch, capsys):
    """The message names the input that changed, not every input the record spells otherwise."""
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("one")
    second.write_text("two")
    Stages(tmp_path).run("join", None, [first, second], [], lambda: "ran")
    second.write_text("three")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    inputs = [first.relative_to(tmp_path), second.relative_to(tmp_path)]
    assert Stages(tmp_path).run("join", None, inputs, [], lambda: "ran again") == "ran again"
    assert capsys.readouterr().err.splitlines() == [
        "join: second.txt changed since the earlier run: the stage runs again"
    ]
