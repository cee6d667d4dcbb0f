"""bahdanau-serve's options are checked before anything loads, with argparse's one-line errors."""

import pytest

from bahdanau_tools.serving.command_line import main


def _argument_error(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit:
        main([str(argument) for argument in argv])
    assert exit.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_a_missing_checkpoint_is_named(capsys, data_bin, tmp_path):
    missing = tmp_path / "missing.pt"
    assert (
        _argument_error(capsys, missing, "--data", data_bin)
        == f"bahdanau-serve: error: {missing} does not exist"
    )


def test_bpe_without_its_codes_is_refused(capsys, data_bin, serving_checkpoint):
    error = _argument_error(capsys, serving_checkpoint, "--data", data_bin, "--bpe", "subword_nmt")
    assert "--bpe subword_nmt and --bpe-codes go together" in error


def test_a_default_beam_over_the_largest_the_server_searches_is_refused(
    capsys, data_bin, serving_checkpoint
):
    error = _argument_error(capsys, serving_checkpoint, "--data", data_bin, "--beam", 100)
    assert "--beam 100 is over 64" in error


def test_a_non_positive_batch_size_is_refused(capsys, data_bin, serving_checkpoint):
    error = _argument_error(
        capsys, serving_checkpoint, "--data", data_bin, "--max-batch-sentences", 0
    )
    assert "argument --max-batch-sentences: 0 is not a positive integer" in error
