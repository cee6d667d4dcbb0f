"""bahdanau-plot-alignment, run as typed: every path it is given is read from where the user
stands."""

import os
import shutil

from ..support.tools import run


def test_paths_are_read_from_the_current_directory_also_those_that_start_with_dot_dot(
    checkpoints, data_bin, tmp_path
):
    work = tmp_path / "work"
    (work / "checkpoints").mkdir(parents=True)
    shutil.copy(checkpoints["rnnsearch_50"], work / "checkpoints" / "checkpoint_last.pt")
    data = os.path.relpath(data_bin, work)
    assert data.startswith("..")
    output = run(
        "bahdanau-plot-alignment",
        "--checkpoint",
        "checkpoints/checkpoint_last.pt",
        "--data",
        data,
        "--out-dir",
        "figures",
        "the dog sees a cat",
        cwd=work,
    )
    assert "figures/alignment_1.png\t" in output
    assert (work / "figures" / "alignment_1.png").stat().st_size > 0
