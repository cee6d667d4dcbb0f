"""One Unicode form for all text, in preparation and at translation: NFC; and one rule for a line
that shows nothing.

The same word can be written with different code points: ``café`` as ``e`` + U+0301 (combining
acute accent, NFD, as macOS file names and some editors write it) or as ``é`` (NFC, as most text
is). The models read code points, so a word written in another form than the training text's is
another word: BPE splits the accent off as a piece of its own, ``<unk>`` in the dictionary.
bahdanau-prepare-data writes every line in NFC (bahdanau_tools/data/cleaning.py), and every way
the plugin translates raw text reads it in NFC too: fairseq-interactive with ``--task
translation_with_source_words`` (tasks/), the hub interface (hub_interface.py), and so
bahdanau-serve.

A line of format characters alone (U+200B ZERO WIDTH SPACE, U+FEFF, the marks of writing
direction) shows nothing, yet splitting at whitespace leaves them as tokens, each ``<unk>``: such
a line holds no word (``holds_a_word``), and every way of translating treats it as an empty line:
bahdanau-serve refuses it as it refuses an empty text, fairseq-interactive with the task and the
hub translate it as empty, as they translate an empty line.
"""

import unicodedata
from typing import Iterable

FORM = "NFC"  # composed: what most text already is, so it changes least
FORMAT = "Cf"  # Unicode's category of characters that show nothing by themselves


def normalized(text: str) -> str:
    """text in FORM."""
    return unicodedata.normalize(FORM, text)


def holds_a_word(tokens: Iterable[str]) -> bool:
    """Whether tokens (a line split at whitespace) hold a word: a token with a character that is
    not a format character."""
    return any(unicodedata.category(character) != FORMAT for token in tokens for character in token)
