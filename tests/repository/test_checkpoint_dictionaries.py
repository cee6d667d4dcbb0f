"""A checkpoint knows its data: every tool that loads one refuses a data-bin of other dictionaries,
in one line naming both, also where the dictionaries have as many symbols; a checkpoint saved before
the dictionaries' fingerprints loads as it did.

The paper's vocabulary (bahdanau-prepare-data --shortlist N) gives every corpus N + 4 symbols: the
demo's 2,000 training pairs and 200 of them make two data-bins of one size and other words."""

import shutil
import subprocess

import pytest
import torch

from bahdanau_plugin import fingerprints
from bahdanau_plugin.errors import CheckpointError
from bahdanau_plugin.models import RNNsearchModel
from bahdanau_tools.evaluation import command_line

from ..support.assertions import assert_one_line_error
from ..support.demo_data import SHORTLIST, prepare_demo_with_shortlist
from ..support.paths import PLUGIN
from ..support.tools import command_in_this_process, fairseq_env, fairseq_tool, run, tool_on_bytes
from ..support.training import train_command

pytestmark = pytest.mark.long  # run first: tests/conftest.py

SMALL_CORPUS = 200  # training pairs of the other corpus


@pytest.fixture(scope="module")
def data_bins(shortlist_prepared, data_bin, tmp_path_factory):
    """The demo corpus prepared with a shortlist ("trained"), and 200 of its pairs ("other")."""
    root, raw = tmp_path_factory.mktemp("shortlists"), data_bin.parent / "raw"
    small = root / "raw-small"
    small.mkdir()
    for language in ("en", "fr"):
        lines = (raw / f"train.{language}").read_text(encoding="utf-8").splitlines(True)
        (small / f"train.{language}").write_text("".join(lines[:SMALL_CORPUS]), encoding="utf-8")
        for split in ("valid", "test"):
            shutil.copy(raw / f"{split}.{language}", small / f"{split}.{language}")
    bins = {
        "trained": shortlist_prepared / "data-bin",
        "other": prepare_demo_with_shortlist(small, root / "other") / "data-bin",
    }
    for language in ("en", "fr"):
        dictionaries = [(bins[name] / f"dict.{language}.txt").read_text() for name in bins]
        assert len(dictionaries[0].splitlines()) == len(dictionaries[1].splitlines()) == SHORTLIST
        assert dictionaries[0] != dictionaries[1]
    return bins


@pytest.fixture(scope="module")
def checkpoint(shortlist_checkpoint):
    """Trained on data_bins["trained"]."""
    return shortlist_checkpoint


def _arguments(tool, checkpoint, data, tmp_path):
    translating = [data, "--user-dir", PLUGIN, "--path", checkpoint, "--cpu"]
    return {
        "fairseq-generate": translating,
        "fairseq-interactive": [*translating, "--source-lang", "en", "--target-lang", "fr"],
        "bahdanau-plot-alignment": [
            *("--checkpoint", checkpoint, "--data", data, "--out-dir", tmp_path / "figures"),
            "a man is reading .",
        ],
        "bahdanau-serve": [checkpoint, "--data", data, "--cpu"],  # refused before it listens
    }[tool]


@pytest.mark.parametrize(
    "tool",
    ["fairseq-generate", "fairseq-interactive", "bahdanau-plot-alignment", "bahdanau-serve"],
)
def test_a_tool_given_a_data_bin_of_other_dictionaries_refuses_in_one_line_naming_both(
    tool, data_bins, checkpoint, tmp_path
):
    completed = subprocess.run(
        [fairseq_tool(tool), *map(str, _arguments(tool, checkpoint, data_bins["other"], tmp_path))],
        input=b"a man is reading .\n",
        capture_output=True,
        env=fairseq_env(),
        timeout=120,  # bahdanau-serve would serve until then
    )
    assert_one_line_error(
        completed.returncode,
        completed.stderr.decode(),
        f"{checkpoint} was trained with other dictionaries than {data_bins['other']}",
        f"{data_bins['other'] / 'dict.en.txt'} has {SHORTLIST + 4}",
    )
    assert b"H-0" not in completed.stdout


def test_a_model_loaded_for_the_reverse_direction_is_refused_in_one_line_naming_its_own(
    shortlist_prepared, checkpoint
):
    """fairseq reads the data-bin binarized en-fr for fr->en too: an en->fr model loaded so had
    dictionaries of the same sizes, the other way round, and the line said to give the data-bin
    it was trained with, which was the one given."""
    data = shortlist_prepared / "data-bin"
    returncode, stdout, stderr = tool_on_bytes(
        "fairseq-generate",
        *(data, "--user-dir", PLUGIN, "--path", checkpoint, "--cpu"),
        *("--source-lang", "fr", "--target-lang", "en"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"{checkpoint} translates en->fr, the reverse of this run's fr->en (its source dictionary "
        f"is {data}/dict.en.txt): give --source-lang en --target-lang fr, or a model trained for "
        "fr->en",
    )
    assert "H-0" not in stdout


def test_bahdanau_evaluate_stops_at_the_line_naming_both_before_translating(
    data_bins, checkpoint, tmp_path
):
    """Its main run here (command_in_this_process): how its errors reach the user as a process is
    tests/bahdanau_tools/evaluation/test_command_line.py's."""
    completed = command_in_this_process(
        command_line.main,
        *("--data", data_bins["other"], "--out-dir", tmp_path / "out"),
        *("--model", f"rnnsearch={checkpoint}"),
    )
    returncode, stderr = completed.returncode, completed.stderr
    assert returncode == 1 and "Traceback" not in stderr
    (refusal,) = [line for line in stderr.splitlines() if "other dictionaries" in line]
    assert refusal.startswith(f"error: {checkpoint} was trained with other dictionaries than")
    assert "sentences translated" not in stderr


def test_the_hub_refuses_a_data_bin_of_other_dictionaries_naming_both(data_bins, checkpoint):
    with pytest.raises(CheckpointError) as refused:
        RNNsearchModel.from_pretrained(
            str(checkpoint.parent),
            checkpoint_file=checkpoint.name,
            data_name_or_path=str(data_bins["other"]),
        )
    assert f"{checkpoint} was trained with other dictionaries than {data_bins['other']}" in str(
        refused.value
    )


def test_resuming_with_a_data_bin_of_other_dictionaries_is_refused_in_one_line(
    data_bins, checkpoint, tmp_path
):
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    shutil.copy(checkpoint, save_dir / "checkpoint_last.pt")
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(data_bins["other"], save_dir, "rnnsearch_50", "--max-update", "4"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"cannot resume from {save_dir / 'checkpoint_last.pt'}: it was trained with other "
        f"dictionaries than {data_bins['other']}",
        "new --save-dir",
    )
    assert (save_dir / "checkpoint_last.pt").read_bytes() == checkpoint.read_bytes()


def test_a_checkpoint_saved_before_the_fingerprints_still_translates(
    data_bins, checkpoint, tmp_path
):
    state = torch.load(checkpoint, weights_only=True)
    fingerprints.take_(state["model"])
    older = tmp_path / "older.pt"
    torch.save(state, older)
    output = run(
        "fairseq-interactive",
        *_arguments("fairseq-interactive", older, data_bins["trained"], tmp_path),
        "--beam",
        "2",
        stdin="a man is reading .\n",
    )
    assert "H-0\t" in output
