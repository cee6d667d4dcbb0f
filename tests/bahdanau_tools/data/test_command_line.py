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


def test_a_max_ratio_under_1_is_refused_before_any_work(capsys):
    """Taken, --max-ratio 0.5 dropped every pair, said only after the training text was tokenized:
    a longer side is never under 0.5 times the shorter."""
    with pytest.raises(SystemExit):
        pipeline_parser().parse_args(CORPUS + ["--bpe", "10", "--max-ratio", "0.5"])
    assert "argument --max-ratio: 0.5 is under 1, which drops every pair" in capsys.readouterr().err
