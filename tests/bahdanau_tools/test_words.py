"""Tokens for people: BPE pieces merged into words, Moses' tokens detokenized, on both axes of
alpha."""

import pytest
import torch

from bahdanau_tools.words import merge_subwords, readable_words, word_pieces

from ..support.words import SOURCE, SOURCE_WORDS, TARGET, TARGET_WORDS, attention


def test_bpe_pieces_become_words_on_both_axes():
    source, target, _ = merge_subwords(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)))
    assert (source[1], target[1], target[3]) == ("terrier", "os", "terrier")
    assert (len(source), len(target)) == (len(SOURCE_WORDS), len(TARGET_WORDS))


def test_moses_escapes_are_undone_in_the_labels():
    source, target, _ = merge_subwords(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)))
    assert (source, target) == (SOURCE_WORDS, TARGET_WORDS)
    assert (source[2], target[0]) == ("'s", "l'")


def test_source_pieces_add_up_and_target_pieces_average_so_rows_still_sum_to_one():
    alpha = attention(len(TARGET), len(SOURCE))
    _, _, merged = merge_subwords(SOURCE, TARGET, alpha)
    assert merged.shape == (len(TARGET_WORDS), len(SOURCE_WORDS))
    assert torch.allclose(merged.sum(dim=1), torch.ones(len(TARGET_WORDS)))
    # "os" (target pieces 1-2) attending to "terrier" (source pieces 1-3)
    assert torch.isclose(merged[1, 1], alpha[1:3, 1:4].sum(dim=1).mean())


def test_an_unfinished_last_word_stands_apart_from_the_end_of_sentence():
    """A translation cut by its length limit inside a word: the word keeps its row."""
    assert word_pieces(["un", "Ter@@", "<end>"]) == [[0], [1], [2]]
    assert word_pieces(["un", "Ter@@", "rier", "<end>"]) == [[0], [1, 2], [3]]


@pytest.mark.parametrize(
    "tokens",
    [["a", "t", "@-@", "shirt", "<end>"], ["a", "t", "@@@", "-@@", "@", "shirt", "<end>"]],
    ids=["word tokens", "the dash split into BPE pieces"],
)
def test_a_word_split_at_its_dash_is_one_word_as_the_detokenizer_joins_it(tokens):
    """Moses' aggressive dash splitting tokenizes "t-shirt" "t @-@ shirt", which the detokenized
    translations and references join again."""
    assert readable_words(tokens) == ["a", "t-shirt", "<end>"]


def test_the_pieces_joined_by_a_dash_are_merged_as_bpe_pieces_are_and_rows_still_sum_to_one():
    source, target = ["a", "t", "@-@", "shirt", "<end>"], ["un", "tee", "@-@", "shirt", "<end>"]
    alpha = attention(len(target), len(source))
    _, _, merged = merge_subwords(source, target, alpha)
    assert merged.shape == (3, 3)
    assert torch.allclose(merged.sum(dim=1), torch.ones(3))
    # "tee-shirt" (target tokens 1-3) attending to "t-shirt" (source tokens 1-3)
    assert torch.isclose(merged[1, 1], alpha[1:4, 1:4].sum(dim=1).mean())


def test_the_end_of_sentence_after_a_dash_stays_a_word_of_its_own():
    """A translation cut by its length limit after @-@."""
    assert word_pieces(["a", "t", "@-@", "<end>"]) == [[0], [1, 2], [3]]
