"""The binarized test set as the evaluation reads it: source lengths counted in words, with BPE
pieces joined back together; sentences with <unk>; a split without sentences refused."""

import pytest
import torch
from fairseq.data import Dictionary, indexed_dataset

from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.evaluation.binarized_split import (
    BinarizedSplit,
    Side,
    load_split,
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


def test_a_split_without_sentences_is_an_error_saying_to_give_one_with_sentences(tmp_path):
    for language in ("en", "fr"):  # as fairseq-preprocess writes a split of empty files
        Dictionary().save(str(tmp_path / f"dict.{language}.txt"))
        prefix = tmp_path / f"test.en-fr.{language}"
        indexed_dataset.make_builder(f"{prefix}.bin", "mmap").finalize(f"{prefix}.idx")
    with pytest.raises(EvaluationError) as raised:
        load_split(tmp_path, "test", "en", "fr")
    message = str(raised.value)
    assert f"the 'test' split of {tmp_path} has no sentence" in message
    assert "give a split with sentences (--subset, --data)" in message
