"""A stage record that is not one (damaged, or edited by hand) counts as none: the stage runs again,
after one warning line that names the file."""

import pytest

from bahdanau_tools.data.stages import Stages


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
