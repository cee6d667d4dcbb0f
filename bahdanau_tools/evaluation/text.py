"""Text files the user gives the tools (references, training text), read as the data preparation
reads text: UTF-8, the byte-order mark some editors write at the start dropped, and in the
project's one Unicode form (NFC, bahdanau_plugin/unicode_form.py), so that a reference written
in another form, or with that mark, scores as the same words, not as others; and whether an
untokenized line and a tokenized one are the same sentence."""

import functools
import unicodedata
from pathlib import Path
from typing import Iterator, List

from sacremoses import MosesDetokenizer

from bahdanau_plugin.unicode_form import normalized

from ..data.reading import (
    UTF8,
    check_not_gzip_data,
    check_not_wide_encoding,
    lines,
    not_in_encoding,
)
from ..errors import DataError, EvaluationError


def read_lines(path: Path, option: str) -> List[str]:
    """The lines of path, the file given with option, as text_lines yields them."""
    return list(text_lines(path, option))


def text_lines(path: Path, option: str) -> Iterator[str]:
    """Yield the lines of path, the file given with option, without their line ends: split at \\n
    only and without the byte-order mark (data/reading.py's lines), decoded from UTF-8 and in NFC,
    one at a time, so that a training corpus of millions of lines is never held whole.
    A line that is not UTF-8 is an error naming it, not a traceback: the file is in another
    encoding, and read in one that decodes any byte its letters would silently become others.
    So is a file in UTF-16 (whose ASCII letters, each beside a NUL, decode as UTF-8) or in gzip
    not named .gz, as the data preparation refuses them."""
    for number, line in enumerate(lines(path), start=1):
        if number == 1:
            try:
                check_not_gzip_data(path, line)
                check_not_wide_encoding(path, line, UTF8)
            except DataError as error:
                raise EvaluationError(f"{option} {error}") from None
        try:
            text = line.decode(UTF8)
        except UnicodeDecodeError as error:
            wrong = not_in_encoding(path, number, line, error, UTF8, encoding_option=False)
            raise EvaluationError(f"{option} {wrong}") from None
        yield normalized(text)


@functools.lru_cache(maxsize=None)
def _unescape_xml():
    return MosesDetokenizer().unescape_xml  # the same for every language


def letters_and_digits(text: str, moses_escaped: bool = False) -> str:
    """text's letters and digits, in order, as one string: what tokenizing it leaves as it was
    (Moses splits off punctuation, and escapes "&" as "&amp;", which moses_escaped undoes); in
    NFKC and case-folded, so that text only truecased, lowercased or written with ligatures
    is still the same sentence."""
    if moses_escaped:
        text = _unescape_xml()(text)
    return "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())


def same_sentence(untokenized: str, tokenized: str) -> bool:
    """Whether a Moses-tokenized line (BPE undone) is the tokenization of an untokenized one."""
    return letters_and_digits(untokenized) == letters_and_digits(tokenized, moses_escaped=True)
