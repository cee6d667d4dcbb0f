"""Source lengths are counted in words, with BPE pieces joined back together."""

import torch
from fairseq.data import Dictionary

from bahdanau_tools.evaluation.binarized_split import (
    BinarizedSplit,
    Side,
    sentences_without_unknown_words,
    source_lengths_in_words,
)


def side(*sentences: str) -> Side:
    dictionary = Dictionary()
    for sentence in sentences:
        for token in sentence.split():
            dictionary.add_symbol(token)
    return Side(
        dictionary,
        [dictionary.encode_line(sentence, add_if_not_exist=False) for sentence in sentences],
    )


def test_source_length_counts_words_not_bpe_pieces():
    split = BinarizedSplit(side("a Ter@@ ri@@ er runs", "two dogs"), side("x", "y"))
    assert source_lengths_in_words(split) == [3, 2]


def test_a_sentence_with_an_unknown_word_on_either_side_is_not_in_no_unk():
    source, target = side("a b", "c d", "e f"), side("g h", "i j", "k l")
    source.sentences[1] = torch.cat([torch.tensor([source.dictionary.unk()]), source.sentences[1]])
    target.sentences[2] = torch.cat([torch.tensor([target.dictionary.unk()]), target.sentences[2]])
    assert sentences_without_unknown_words(BinarizedSplit(source, target)) == [0]
