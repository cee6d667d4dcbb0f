"""One Unicode form for all text, in preparation and at translation: NFC.

The same word can be written with different code points: ``café`` as ``e`` + U+0301 (combining
acute accent, NFD, as macOS file names and some editors write it) or as ``é`` (NFC, as most text
is). The models read code points, so a word written in another form than the training text's is
another word: BPE splits the accent off as a piece of its own, ``<unk>`` in the dictionary.
bahdanau-prepare-data writes every line in NFC (bahdanau_tools/data/cleaning.py), and every way
the plugin translates raw text reads it in NFC too: fairseq-interactive with ``--task
translation_with_source_words`` (tasks/), the hub interface (hub_interface.py), and so
bahdanau-serve.
"""

import unicodedata

FORM = "NFC"  # composed: what most text already is, so it changes least


def normalized(text: str) -> str:
    """text in FORM."""
    return unicodedata.normalize(FORM, text)
