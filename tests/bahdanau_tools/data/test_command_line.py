"""bahdanau-prepare-data's options, as a user gives them."""

from pathlib import Path

import pytest

from bahdanau_tools.data.command_line import pipeline_parser

CORPUS = ["corpus", "--train", "t", "--source-lang", "en", "--target-lang", "fr", "--out", "o"]


def test_test_given_again_adds_its_test_sets_to_those_given_before():
    """Stored, --test a --test b kept b alone: the test set a was left out without a word."""
    arguments = pipeline_parser().parse_args(
        CORPUS + ["--bpe", "10", "--test", "a", "--test", "b", "c"]
    )
    assert arguments.test == [Path("a"), Path("b"), Path("c")]


def test_a_max_ratio_that_is_not_a_number_is_refused(capsys):
    """Taken, --max-ratio nan dropped no pair for its length ratio: every comparison with nan is
    false."""
    with pytest.raises(SystemExit):
        pipeline_parser().parse_args(CORPUS + ["--bpe", "10", "--max-ratio", "nan"])
    assert "argument --max-ratio: nan is not a positive number" in capsys.readouterr().err
