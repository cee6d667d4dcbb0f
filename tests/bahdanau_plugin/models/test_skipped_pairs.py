"""A training split of which fairseq skips every pair is one line that says which limits to raise
(bahdanau_plugin/models/skipped_pairs.py), not fairseq's traceback."""

from bahdanau_plugin.errors import one_line

from ...support.assertions import assert_one_line_error
from ...support.tools import tool_on_bytes
from ...support.training import train_command


def test_a_length_limit_that_every_pair_is_over_is_one_line_naming_the_lengths(data_bin, tmp_path):
    command = train_command(data_bin, tmp_path, "rnnsearch", "--max-train-length", "1")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--no-save")
    assert_one_line_error(
        returncode,
        stderr,
        "fairseq skipped every pair of the split: none is within the lengths (2, 2)",
        "raise --max-train-length",
    )


def test_fairseqs_empty_dataset_is_one_line_saying_what_to_raise():
    """The few pairs left after the skipped ones fill no batch."""
    error = Exception("The dataset is empty. This could indicate that all elements in the ...")
    assert "raise --max-train-length" in one_line(error)


def test_a_task_s_limit_that_every_pair_is_over_is_named_before_the_models(data_bin, tmp_path):
    """The length limit is the smaller of the task's and the models': under rnnsearch_50's 51
    source tokens, the task's --max-source-positions 5 binds, which --max-train-length cannot
    raise."""
    command = train_command(data_bin, tmp_path, "rnnsearch_50", "--max-source-positions", "5")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--no-save")
    assert_one_line_error(
        returncode,
        stderr,
        "none is within the lengths (5, 51)",
        ": raise --max-source-positions (now 5), the translation task's limit; or raise "
        "--max-train-length",
    )
