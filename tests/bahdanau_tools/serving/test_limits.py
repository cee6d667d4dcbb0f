"""What one request may ask, measured on the text as the model reads it (limits.py)."""

import pytest

from bahdanau_tools.serving.limits import Limits, OverLimit, sentences_within
from bahdanau_tools.serving.translator import Translator

WORDS = "the dog sees a cat".split() * 6  # 113 characters with a character between each two


@pytest.fixture(scope="module")
def translator(serving_checkpoint, data_bin):
    """Without --tokenizer, which would turn other whitespace into spaces."""
    return Translator.load(serving_checkpoint, data_bin, cpu=True)


@pytest.mark.parametrize("separator", ["\t", "\u00a0", "\u3000"], ids=["tab", "nbsp", "u3000"])
def test_words_apart_by_other_whitespace_than_spaces_are_each_a_word_within_the_limit(
    translator, separator
):
    """The BPE and fairseq split a line at any whitespace: it was one word of 113 characters."""
    (sentence,) = sentences_within(Limits(), translator, [separator.join(WORDS)], 2, 1)
    assert sentence.tokens == tuple(WORDS)


def test_a_word_over_the_limit_is_still_refused_among_words_apart_by_tabs(translator):
    with pytest.raises(OverLimit, match="a word of 101 characters"):
        sentences_within(Limits(), translator, ["\t".join(["the", "x" * 101, "cat"])], 2, 1)
