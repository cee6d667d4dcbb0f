"""The binarized test set as the evaluation reads it (or its text, under --dataset-impl raw):
source lengths counted in words, with BPE
pieces joined back together, unknown ones too where the source text is beside the binaries;
sentences with <unk>; references that are not its target side and a
split without sentences refused."""

import pytest
import torch
from fairseq.data import Dictionary, indexed_dataset

from bahdanau_plugin.unknown_words import source_text_path
from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.evaluation.binarized_split import (
    BinarizedSplit,
    Side,
    check_target_text,
    load_split,
    sentences_without_unknown_words,
    source_lengths_in_words,
)

from ...support.demo_data import text_data_bin


def side(*sentences: str, unknown=()) -> Side:
    """The sentences binarized with a dictionary of their tokens but the unknown ones."""
    dictionary = Dictionary()
    for sentence in sentences:
        for token in sentence.split():
            if token not in unknown:
                dictionary.add_symbol(token)
    return Side(
        dictionary,
        [dictionary.encode_line(sentence, add_if_not_exist=False) for sentence in sentences],
    )


# a word of BPE pieces that the source dictionary lacks but the last: binarized <unk> <unk> er
PIECES, UNKNOWN_PIECES = "a Ter@@ ri@@ er runs", ("Ter@@", "ri@@")


def test_source_length_counts_words_not_bpe_pieces():
    split = BinarizedSplit(side("a Ter@@ ri@@ er runs", "two dogs"), side("x", "y"))
    assert source_lengths_in_words(split) == [3, 2]


def test_source_length_counts_unknown_bpe_pieces_with_the_word_they_continue():
    split = BinarizedSplit(side(PIECES, unknown=UNKNOWN_PIECES), side("x"), source_text=[PIECES])
    assert source_lengths_in_words(split) == [3]


def write_data_bin(folder, source: Side, target: Side) -> None:
    """The two sides as fairseq-preprocess writes a test split from English to French."""
    for language, written in (("en", source), ("fr", target)):
        written.dictionary.save(str(folder / f"dict.{language}.txt"))
        prefix = folder / f"test.en-fr.{language}"
        builder = indexed_dataset.make_builder(f"{prefix}.bin", "mmap")
        for sentence in written.sentences:
            builder.add_item(sentence)
        builder.finalize(f"{prefix}.idx")


def test_a_split_binarized_for_the_other_direction_is_read_for_this_one(tmp_path):
    """as fairseq's translation task reads it, and fairseq-generate translates it: fr->en on the
    data-bin of en->fr"""
    english, french = side("a dog", "two big cats"), side("un chien", "deux gros chats")
    write_data_bin(tmp_path, english, french)
    split = load_split(tmp_path, "test", "fr", "en")
    assert [s.tolist() for s in split.source.sentences] == [s.tolist() for s in french.sentences]
    assert [s.tolist() for s in split.target.sentences] == [s.tolist() for s in english.sentences]


def test_the_source_text_beside_the_binaries_gives_the_source_lengths(tmp_path):
    write_data_bin(tmp_path, side(PIECES, "two dogs", unknown=UNKNOWN_PIECES), side("x", "y"))
    source_text_path(tmp_path, "test", "en", "fr").write_text(f"{PIECES}\ntwo dogs\n")
    assert source_lengths_in_words(load_split(tmp_path, "test", "en", "fr")) == [3, 2]


def test_a_source_text_that_is_not_the_binaries_is_an_error_saying_to_write_it_again(tmp_path):
    write_data_bin(tmp_path, side(PIECES, "two dogs"), side("x", "y"))
    text = source_text_path(tmp_path, "test", "en", "fr")
    text.write_text(f"{PIECES}\ntwo black dogs\n")
    with pytest.raises(EvaluationError) as raised:
        load_split(tmp_path, "test", "en", "fr")
    assert str(raised.value) == (
        f"line 2 of {text} has 3 tokens but sentence 1 of the binarized split has 2: it must be "
        "the text the binaries beside it were made from: write it again (bahdanau-prepare-data "
        "does), or remove it"
    )


def test_a_source_text_of_other_words_as_many_is_an_error_saying_to_write_it_again(tmp_path):
    """Figure 3 translates the text's sentence: another of as many tokens would be drawn."""
    write_data_bin(tmp_path, side(PIECES, "two dogs"), side("x", "y"))
    text = source_text_path(tmp_path, "test", "en", "fr")
    text.write_text(f"{PIECES}\ntwo cats\n")
    with pytest.raises(EvaluationError) as raised:
        load_split(tmp_path, "test", "en", "fr")
    assert str(raised.value).startswith(
        f"line 2 of {text} holds other words than sentence 1 of the binarized split: it must be "
        "the text the binaries beside it were made from: write it again"
    )


def test_a_source_text_of_another_number_of_sentences_is_an_error(tmp_path):
    write_data_bin(tmp_path, side(PIECES, "two dogs"), side("x", "y"))
    text = source_text_path(tmp_path, "test", "en", "fr")
    text.write_text(f"{PIECES}\n")
    with pytest.raises(EvaluationError, match="has 1 lines but the split has 2 sentences: it must"):
        load_split(tmp_path, "test", "en", "fr")


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


REFERENCES = "--tokenized-references ref.fr"  # how the messages name the references checked


def test_references_that_binarize_as_the_target_side_unknown_words_included_are_its_own():
    target = side("un chien noir", "deux chats", unknown=("noir",))
    check_target_text(["un chien noir", "deux chats"], target, None, REFERENCES)


def test_references_in_another_order_are_an_error_naming_the_first_line_that_differs():
    """Each translation would be scored against another sentence's reference."""
    target = side("un chien", "deux chats", "un chien")
    with pytest.raises(EvaluationError) as raised:
        check_target_text(["un chien", "un chien", "deux chats"], target, None, REFERENCES)
    assert str(raised.value) == (
        "line 2 of --tokenized-references ref.fr is not the reference of sentence 1 of the "
        "binarized split: give the references the split's target side was binarized from, "
        "Moses-tokenized, before BPE and in its order (bahdanau-prepare-data writes them to "
        "OUT/tok/)"
    )


def test_untokenized_references_are_an_error():
    with pytest.raises(EvaluationError, match="line 1 of --tokenized-references ref.fr is not"):
        check_target_text(["un chien."], side("un chien ."), None, REFERENCES)


def test_references_are_segmented_with_the_data_s_bpe_codes_before_they_are_compared(tmp_path):
    codes = tmp_path / "bpe.codes"
    codes.write_text("#version: 0.2\nt e\n", encoding="utf-8")
    target = side("te@@ a")
    check_target_text(["tea"], target, codes, REFERENCES)
    with pytest.raises(EvaluationError, match="is not the reference of sentence 0"):
        check_target_text(["tee"], target, codes, REFERENCES)


def test_a_data_bin_of_text_is_read_as_its_binaries_are(data_bin, tmp_path):
    """fairseq-preprocess --dataset-impl raw copies each side's text (SPLIT.SRC-TGT.LANG), which
    fairseq-generate reads: the evaluation said its binaries were not found."""
    as_text = load_split(text_data_bin(data_bin, tmp_path), "test", "en", "fr")
    binarized = load_split(data_bin, "test", "en", "fr")
    assert as_text.as_text and not binarized.as_text
    for read, expected in ((as_text.source, binarized.source), (as_text.target, binarized.target)):
        assert [s.tolist() for s in read.sentences] == [s.tolist() for s in expected.sentences]
