"""One Unicode form for all text, NFC, and one rule for a line that shows nothing
(bahdanau_plugin/unicode_form.py): bahdanau-serve, fairseq-interactive with the plugin's task, the
hub and bahdanau-plot-alignment all ask holds_a_word."""

import pytest

from bahdanau_plugin.unicode_form import holds_a_word, normalized


def test_text_is_brought_to_nfc():
    assert normalized("cafe\u0301") == "caf\u00e9"


@pytest.mark.parametrize(
    "tokens",
    [[], ["\u200b"], ["\ufeff"], ["\u200b\u200e", "\u2060"]],
    ids=["none", "zero-width-space", "byte-order-mark", "direction-marks-and-word-joiner"],
)
def test_tokens_of_format_characters_alone_hold_no_word(tokens):
    assert not holds_a_word(tokens)


@pytest.mark.parametrize("tokens", [["dog"], ["\u200b", "dog"], ["\u200bdog"], ["<unk>"]])
def test_tokens_with_a_character_that_shows_hold_a_word(tokens):
    assert holds_a_word(tokens)
