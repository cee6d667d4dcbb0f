"""fairseq's own errors for common mistakes in a run's data and options are one line that says what
the data-bin holds or what to give (bahdanau_plugin/fairseq_errors.py), not a traceback."""

import pytest

from bahdanau_plugin.errors import one_line

from ..support.assertions import assert_one_line_error
from ..support.tools import tool_on_bytes
from ..support.training import train_command


def training(data_bin, tmp_path, *options):
    command = train_command(data_bin, tmp_path, "rnnsearch", "--max-update", "1", "--no-save")
    return tool_on_bytes("fairseq-train", *command, *options)


def test_a_split_the_data_bin_lacks_is_one_line_naming_those_it_holds(data_bin, tmp_path):
    returncode, _, stderr = training(data_bin, tmp_path, "--valid-subset", "dev")
    assert_one_line_error(
        returncode,
        stderr,
        f"the data-bin {data_bin} has no 'dev' split of en-fr (splits there: test, train, valid)",
        "--disable-validation",
    )


def test_a_language_the_data_bin_lacks_is_one_line_naming_its_languages(data_bin, tmp_path):
    returncode, _, stderr = training(
        data_bin, tmp_path, "--source-lang", "de", "--target-lang", "fr"
    )
    assert_one_line_error(
        returncode,
        stderr,
        "has no dictionary for the language de",
        "its languages are en, fr: give --source-lang and --target-lang among them",
    )


@pytest.mark.parametrize(
    "error, words",
    [
        (ValueError("--finetune-from-model ck/nope.pt does not exist"), "give the checkpoint file"),
        (AssertionError("Torch not compiled with CUDA enabled"), "with --bf16"),
    ],
    ids=["finetune-from-model", "fp16-on-a-cpu"],
)
def test_fairseqs_one_line_errors_say_what_to_give(error, words):
    assert words in one_line(error)
