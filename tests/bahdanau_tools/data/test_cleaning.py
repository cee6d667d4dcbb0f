"""Pairs are decoded into NFC, tokenized with fairseq's Moses tokenizer and dropped by the cleaning
rules of their split."""

import unicodedata
from collections import Counter

import pytest

from bahdanau_tools.data.binarize import Vocabulary
from bahdanau_tools.data.cleaning import (
    STEPS,
    CleaningRules,
    check_dropped_share,
    clean_chunk,
    clean_pair,
)
from bahdanau_tools.data.pipeline import Settings, cleaning_rules
from bahdanau_tools.errors import DataError

LANGUAGES = ("en", "fr")
TRAIN = CleaningRules(drop_empty=True, max_ratio=3, max_len=5, max_word_len=12)
SETTINGS = Settings(
    LANGUAGES,
    Vocabulary("bpe", 10),
    max_len=5,
    max_ratio=3,
    workers=1,
    encoding="utf-8",
    max_word_len=12,
    max_dropped=0.5,
)


def test_kept_pairs_are_moses_tokenized_with_case_and_fairseqs_escaping():
    step, pair = clean_pair((b"Don't stop!", "L'homme & moi.".encode()), LANGUAGES, TRAIN)
    assert step == "kept"
    assert pair.source_tokens == "Don &apos;t stop !"
    assert pair.target_tokens == "L&apos; homme &amp; moi ."


def test_control_symbols_typed_in_a_corpus_are_escaped_words_never_fairseqs_symbols():
    """fairseq-preprocess would binarize the word </s> as the end of sentence (<pad>, <s> as
    padding, the start): the Moses tokenizer writes < and > as &lt; and &gt; first."""
    _, pair = clean_pair((b"a </s> b <pad>", b"<s> c <unk>"), LANGUAGES, CleaningRules())
    assert pair.source_tokens == "a &lt; / s &gt; b &lt; pad &gt;"
    assert pair.target_tokens == "&lt; s &gt; c &lt; unk &gt;"


def test_kept_pairs_carry_their_untokenized_text_with_spaces_collapsed():
    _, pair = clean_pair((b"  Two   dogs. ", b"Deux chiens."), LANGUAGES, TRAIN)
    assert (pair.source_text, pair.target_text) == ("Two dogs.", "Deux chiens.")


def test_text_is_written_in_nfc_whatever_form_it_came_in():
    decomposed = unicodedata.normalize("NFD", "Le café.")
    assert decomposed != "Le café."
    _, pair = clean_pair((b"The cafe.", decomposed.encode()), LANGUAGES, TRAIN)
    assert (pair.target_tokens, pair.target_text) == ("Le café .", "Le café.")


def test_lines_are_decoded_in_the_encoding_given():
    _, pair = clean_pair((b"The cafe.", "Le café.".encode("latin-1")), LANGUAGES, TRAIN, "latin-1")
    assert pair.target_text == "Le café."


def test_a_pair_with_an_empty_side_is_dropped_as_empty():
    assert clean_pair((b"Hello.", b"  "), LANGUAGES, TRAIN) == ("empty", None)


@pytest.mark.parametrize("nothing_shown", ["\u200b", "\ufeff \u200e", "\u00ad"])
def test_a_pair_whose_side_holds_format_characters_alone_is_dropped_as_empty(nothing_shown):
    raw_pair = ("Hello.".encode(), nothing_shown.encode())
    assert clean_pair(raw_pair, LANGUAGES, TRAIN) == ("empty", None)


def test_a_pair_whose_longer_side_exceeds_max_ratio_times_the_shorter_is_dropped():
    assert clean_pair((b"Yes", b"oui oui oui oui"), LANGUAGES, TRAIN) == ("ratio", None)


def test_a_pair_with_more_than_max_len_words_on_one_side_is_dropped_as_too_long():
    assert clean_pair(
        (b"one two three four five six", b"un deux trois quatre cinq six"), LANGUAGES, TRAIN
    ) == ("too_long", None)


def test_a_pair_with_a_word_over_max_word_len_characters_is_dropped_as_a_long_word():
    word = "a" * 13
    assert clean_pair((word.encode(), b"un"), LANGUAGES, TRAIN) == ("long_word", None)
    assert clean_pair((b"one", b"a" * 12), LANGUAGES, TRAIN)[0] == "kept"


def test_a_pair_of_exactly_max_len_words_is_kept():
    assert (
        clean_pair((b"one two three four five", b"un deux trois quatre cinq"), LANGUAGES, TRAIN)[0]
        == "kept"
    )


def test_without_rules_even_an_empty_pair_is_kept():
    step, pair = clean_pair((b"", b""), LANGUAGES, CleaningRules())
    assert (step, pair.source_tokens, pair.target_tokens) == ("kept", "", "")


def test_a_chunk_counts_each_pair_under_read_and_one_step_and_the_kept_words():
    chunk = [(b"Hello there.", b"Bonjour."), (b"", b"vide"), (b"x" * 13, b"x")]
    kept, counts = clean_chunk(chunk, LANGUAGES, TRAIN)
    assert [pair.source_tokens for pair in kept] == ["Hello there ."]
    assert {step: counts[step] for step in STEPS} == {
        "read": 3,
        "empty": 1,
        "ratio": 0,
        "too_long": 0,
        "long_word": 1,
        "kept": 1,
    }
    assert (counts["words.en"], counts["words.fr"]) == (3, 2)


def test_training_pairs_are_cleaned_and_length_limited():
    assert cleaning_rules("train", SETTINGS) == CleaningRules(
        drop_empty=True, max_ratio=3, max_len=5, max_word_len=12
    )


def test_dev_pairs_are_cleaned_but_never_length_limited():
    assert cleaning_rules("valid", SETTINGS) == CleaningRules(drop_empty=True, max_ratio=3)


def test_no_test_line_is_ever_dropped():
    assert cleaning_rules("test", SETTINGS) == cleaning_rules("test2", SETTINGS) == CleaningRules()


def test_dropping_more_than_the_share_allowed_is_an_error_with_the_counts_and_the_option():
    counts = Counter(read=10, too_long=5, empty=1, kept=4)
    with pytest.raises(DataError) as raised:
        check_dropped_share("train", counts, TRAIN, max_dropped=0.5)
    assert str(raised.value) == (
        "cleaning drops 6 of the train split's 10 pairs (60%), more than --max-dropped 0.5 "
        "allows: 1 with an empty side, 5 with a side over --max-len 5 words; check its files "
        "and options, or allow it with --max-dropped 0.6"
    )


def test_dropping_exactly_the_share_allowed_is_not_an_error():
    check_dropped_share("train", Counter(read=10, empty=5, kept=5), TRAIN, max_dropped=0.5)
