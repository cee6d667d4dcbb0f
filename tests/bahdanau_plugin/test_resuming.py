"""fairseq-train resuming under options that cannot take the checkpoint's state is one line that
says what to give (bahdanau_plugin/resuming.py), not a traceback; nothing is written."""

import shutil

import pytest

from ..support.assertions import assert_one_line_error
from ..support.tools import tool_on_bytes
from ..support.training import train_command

pytestmark = pytest.mark.long  # run first: tests/conftest.py


@pytest.fixture
def resume(data_bin, checkpoints, tmp_path):
    """fairseq-train, with options added (and some of its own left out), into a --save-dir whose
    checkpoint_last.pt is a tiny rnnsearch_50 stopped after 4 updates, mid-epoch; (return code,
    its output, fairseq's log then stderr, the checkpoint)."""
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    checkpoint = save_dir / "checkpoint_last.pt"
    shutil.copy(checkpoints["rnnsearch_50"], checkpoint)

    def run(*options, leaving_out=()):
        command = train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "8", *options)
        for flag in leaving_out:  # with its value
            at = command.index(flag)
            del command[at : at + 2]
        returncode, stdout, stderr = tool_on_bytes("fairseq-train", *command)
        return returncode, stdout + stderr, checkpoint

    return run


def test_resuming_with_another_optimizer_is_one_line_naming_both_and_nothing_is_written(
    resume, checkpoints
):
    returncode, output, checkpoint = resume(
        "--optimizer", "adam", leaving_out=("--adadelta-rho", "--adadelta-eps")
    )
    assert_one_line_error(
        returncode,
        output,
        f"cannot resume from {checkpoint}: it was trained with --optimizer adadelta and this "
        "run with --optimizer adam",
        "resume it with --optimizer adadelta",
        f"a new --save-dir and --finetune-from-model {checkpoint}",
    )
    assert checkpoint.read_bytes() == checkpoints["rnnsearch_50"].read_bytes()
    assert sorted(path.name for path in checkpoint.parent.iterdir()) == ["checkpoint_last.pt"]


def test_resuming_with_another_criterion_is_one_line_naming_both(resume):
    returncode, output, _ = resume("--criterion", "label_smoothed_cross_entropy")
    assert_one_line_error(
        returncode,
        output,
        "it was trained with --criterion cross_entropy and this run with --criterion "
        "label_smoothed_cross_entropy",
        "resume it with --criterion cross_entropy",
    )


def test_resuming_in_another_precision_is_one_line_naming_both(resume):
    """fairseq keeps the optimizer's state of a half-precision run in a wrapper of its own."""
    returncode, output, _ = resume("--bf16")
    assert_one_line_error(
        returncode,
        output,
        "it was trained with float32 (no --fp16, --bf16 or --amp) and this run with --bf16",
        "resume it with float32",
    )


def test_resuming_mid_epoch_into_an_epoch_of_fewer_batches_is_one_line_saying_why(resume):
    """The checkpoint stopped after batch 4 of its epoch; in batches of 1,000 the epoch has 2."""
    returncode, output, checkpoint = resume("--batch-size", "1000")
    assert_one_line_error(
        returncode,
        output,
        f"cannot resume from {checkpoint}: it was saved after batch 4 of epoch 1, and this "
        "run's epoch 1 has 2 batches",
        "--batch-size",
        "resume it with those it was trained with",
    )


def test_resuming_with_other_model_options_that_fit_says_which_in_a_warning(resume):
    """The checkpoint is an rnnsearch_50 without dropout; the sizes are the same."""
    returncode, output, checkpoint = resume("--arch", "rnnsearch_30", "--dropout", "0.1")
    assert returncode == 0, output[-2000:]
    warnings = [line for line in output.splitlines() if "trained with other options" in line]
    assert len(warnings) == 1
    assert f"{checkpoint} was trained with other options than this run's (--arch is " in warnings[0]
    for difference in (
        "--arch is rnnsearch_50 there and rnnsearch_30 here",
        "dropout is 0.0 there and 0.1 here",
        "max_train_length is 50 there and 30 here",
    ):
        assert difference in warnings[0]


def test_resuming_with_the_options_it_was_trained_with_says_nothing_of_them(resume):
    returncode, output, _ = resume()
    assert returncode == 0, output[-2000:]
    assert "Loaded checkpoint" in output
    assert "trained with other options" not in output
