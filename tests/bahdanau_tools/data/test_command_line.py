"""bahdanau-prepare-data's options, as a user gives them."""

from pathlib import Path

from bahdanau_tools.data.command_line import pipeline_parser

CORPUS = ["corpus", "--train", "t", "--source-lang", "en", "--target-lang", "fr", "--out", "o"]


def test_test_given_again_adds_its_test_sets_to_those_given_before():
    """Stored, --test a --test b kept b alone: the test set a was left out without a word."""
    arguments = pipeline_parser().parse_args(
        CORPUS + ["--bpe", "10", "--test", "a", "--test", "b", "c"]
    )
    assert arguments.test == [Path("a"), Path("b"), Path("c")]
