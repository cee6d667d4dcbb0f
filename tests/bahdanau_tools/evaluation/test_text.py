"""Whether an untokenized reference and a tokenized one are the same sentence: by their letters
and digits, which Moses' tokenization (its escapes undone) leaves as they were."""

from bahdanau_tools.data.cleaning import tokenize
from bahdanau_tools.evaluation.text import same_sentence

SENTENCE = "L'homme [en t-shirt] voit \"AT&T\" | 3,5 km² à l'ouest… « ok »"


def test_a_sentence_and_its_moses_tokenization_are_the_same_sentence():
    assert same_sentence(SENTENCE, " ".join(tokenize(SENTENCE, "fr")))


def test_a_lowercased_tokenization_is_still_the_same_sentence():
    assert same_sentence(SENTENCE, " ".join(tokenize(SENTENCE, "fr")).lower())


def test_the_tokenization_of_another_sentence_is_not_the_same_sentence():
    assert not same_sentence(SENTENCE, " ".join(tokenize("L'homme en t-shirt", "fr")))
