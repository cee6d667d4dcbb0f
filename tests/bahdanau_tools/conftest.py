"""A checkpoint shared by the tests of the tools that search (bahdanau-evaluate, -serve and
-plot-alignment) with fairseq's length options."""

from pathlib import Path

import pytest
from fairseq.data import Dictionary

from ..support.output_biases import checkpoint_with_output_biases_raised


@pytest.fixture(scope="session")
def checkpoint_preferring_one_more_word(checkpoints, tmp_path_factory) -> Path:
    """rnnsearch_50's checkpoint in which every step writes, nearly surely, the target dictionary's
    first word (about 0.73) or the end of sentence (about 0.27), whatever the source: each word
    more lowers a translation's summed log-probability but raises its log-probability per token,
    so that of the translations a search finishes, the sum (--lenpen 0) ranks the shortest first
    and the mean per token (--lenpen 1) the longest."""
    first_word = Dictionary().nspecial  # fairseq numbers the words after its special symbols
    return checkpoint_with_output_biases_raised(
        checkpoints,
        tmp_path_factory,
        "prefers-one-more-word",
        {first_word: 101, Dictionary().eos(): 100},  # e / (e + 1) = 0.73
    )
