"""Parallel text as raw byte lines, streamed: plain or gzip'd text, and WMT's SGML test sets; the
check that every line of it decodes."""

import codecs
import gzip
import re
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence, Tuple

from ..errors import DataError

SGML_SEGMENT = re.compile(rb"<seg[^>]*>(.*)</seg>")
# The first line of a WMT test set's SGML file (newstest2014-fren-src.en.sgm): its set's tag.
SGML_SET = re.compile(rb"\s*<(srcset|refset|tstset)[\s>]", re.IGNORECASE)
# The C1 control characters, which Latin-1 and its kin decode bytes 0x80-0x9f into: no text holds
# them, a file from Windows (cp1252) has its quotes, dashes, ... and the euro sign there.
C1_CONTROL = re.compile("[\x80-\x9f]")
UTF8 = "utf-8"
GZIP_MAGIC = b"\x1f\x8b"  # the first bytes of every gzip file
# The byte-order marks of the encodings that write an ASCII letter in more than one byte, UTF-32's
# first: its little-endian mark begins with UTF-16's.
WIDE_ENCODING_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


@dataclass(frozen=True)
class ParallelFiles:
    """Two files whose line N (or segment N, for .sgm) translate each other."""

    source: Path
    target: Path


def require_file(path: Path, hint: str) -> Path:
    if not path.is_file():
        raise DataError(f"missing file {path}: {hint}")
    return path


def records(path: Path) -> Iterator[bytes]:
    """The sentences of a file: the segments of an .sgm file, the lines of any other."""
    return sgml_segments(path) if path.suffix == ".sgm" else lines(path)


def lines(path: Path) -> Iterator[bytes]:
    """Yield each line of a text file, gzip'd if its name ends in .gz, as bytes without its newline.

    Bytes, because the workers that tokenize the lines decode them, in the encoding the user
    names (--encoding, UTF-8 by default); split at b"\\n" only, because the corpora hold stray
    carriage returns and Unicode line separators inside their lines. The byte-order mark that
    Windows editors write at the start of a file is dropped, as Python's utf-8-sig codec and
    fairseq-interactive's input (the plugin reads it so) drop it: it marks the encoding, it is not
    text, and kept it would become a token.
    U+FEFF anywhere else is a character of the text, and stays.
    """
    with _open_bytes(path) as stream:
        try:
            for number, line in enumerate(stream):
                if number == 0 and line.startswith(codecs.BOM_UTF8):
                    line = line[len(codecs.BOM_UTF8) :]
                yield line.rstrip(b"\r\n")
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:  # named .gz, not whole gzip
            raise DataError(
                f"{path} cannot be read as gzip ({error}): give the whole file, or its text "
                "without .gz at the end of its name"
            ) from None


def sgml_segments(path: Path) -> Iterator[bytes]:
    """The text of each `<seg id="N">text</seg>` line, as WMT's test sets hold one per line."""
    for line in lines(path):
        match = SGML_SEGMENT.search(line)
        if match:
            yield match.group(1)


def check_aligned(files: ParallelFiles, encoding: str = UTF8) -> int:
    """Return the number of pairs, after checking that both sides decode and have as many
    sentences."""
    source_count = count_records(files.source, encoding)
    target_count = count_records(files.target, encoding)
    if source_count != target_count:
        raise DataError(
            f"{files.source} has {source_count} lines but {files.target} has {target_count}; "
            "line N of one side must translate line N of the other"
        )
    return source_count


def count_records(path: Path, encoding: str) -> int:
    """The number of sentences of a file (records), after checking that each of its lines decodes
    in encoding. A line that does not is not a sentence to drop: a file in another encoding than
    the one it is read in fails on most of its lines that are not ASCII, and dropping those would
    drop pairs for the letters they hold (half of a French corpus in Latin-1)."""
    sgml = path.suffix == ".sgm"
    misread = Misreading(path, encoding)
    controls = not is_utf8(encoding)  # where control characters are misread text: not in UTF-8
    count = 0
    for number, line in enumerate(lines(path), start=1):
        if number == 1:
            check_not_gzip_data(path, line)
            if not sgml:
                check_not_sgml(path, line)
            check_not_wide_encoding(path, line, encoding)
        try:
            text = line.decode(encoding)
        except UnicodeDecodeError as error:
            raise DataError(not_in_encoding(path, number, line, error, encoding)) from None
        misread.check(number, line)
        if controls and not misread.maybe_utf8:  # one UTF-8 so far is Misreading's to tell
            check_no_control_character(path, number, text, encoding)
        count += not sgml or SGML_SEGMENT.search(line) is not None
        only_line = text if number == 1 else None  # so far: the file's one line
    misread.finish()
    if count == 1 and only_line is not None:
        check_line_ends(path, only_line, encoding)
    return count


def check_line_ends(path: Path, only_line: str, encoding: str) -> None:
    """A file of one line that str.splitlines cuts into several ends its lines with another
    separator than \\n: \\r alone (classic Mac OS), U+0085 NEXT LINE (text converted from
    EBCDIC), U+2028 LINE SEPARATOR, \\v (a word processor's line break), ... Read at \\n only (the
    corpora hold such characters inside their lines, where they are spaces), its sentences were
    one: a test set of one sentence, without a word."""
    lines = only_line.splitlines(keepends=True)
    if len(lines) < 2:
        return
    separator = lines[0][len(lines[0].splitlines()[0]) :]
    if separator == "\r":
        raise DataError(
            f"{path} ends its lines with carriage returns alone (\\r, as classic Mac OS wrote "
            "them): read at \\n only, it is one sentence; convert its line ends (tr '\\r' '\\n')"
        )
    named = " ".join(filter(None, (f"U+{ord(separator):04X}", unicodedata.name(separator, ""))))
    written = "".join(f"\\x{byte:02x}" for byte in separator.encode(encoding))
    raise DataError(
        f"{path} ends its lines with {named} alone: read at \\n only, it is one sentence; "
        f"convert its line ends (sed 's/{written}/\\n/g' {path} > FIXED)"
    )


def check_not_gzip_data(path: Path, first_line: bytes) -> None:
    """A file of gzip data that is not named .gz (a download saved under the text's name,
    `curl URL.gz > train.en`) is read as text: its bytes failed to decode, in an error that said
    to name an encoding (--encoding latin-1, then cp1252, each failing on other bytes), and in
    one that decodes every byte (cp437) they would have become letters. Named .gz, it is read as
    gzip, and text that starts so was compressed twice."""
    if not first_line.startswith(GZIP_MAGIC):
        return
    if path.suffix == ".gz":
        raise DataError(
            f"{path} is gzip-compressed twice (its text starts with gzip's bytes 1f 8b): "
            f"decompress it once (gunzip -c {path} > ONCE && mv ONCE {path})"
        )
    raise DataError(
        f"{path} is gzip-compressed (it starts with gzip's bytes 1f 8b), but its name does not end "
        f"in .gz: rename it {path}.gz, or decompress it (gunzip -c)"
    )


def check_not_sgml(path: Path, first_line: bytes) -> None:
    """A WMT test set in its SGML file, renamed PREFIX.LANG for --test, was read line by line: its
    markup made sentences (newstest2014: a test line for each <doc> and </doc> besides its 3,003
    segments, each wrapped in `&lt; seg id = ...`), scored as such, without a word. Only files
    named .sgm are read as SGML (the wmt14 preset's)."""
    found = SGML_SET.match(first_line)
    if found:
        raise DataError(
            f"{path} is a WMT SGML file (its first line opens <{found.group(1).decode()}>), not "
            "one sentence per line: its markup would be read as sentences; give the text of "
            "its segments, one per line (sed -n 's/.*<seg[^>]*>\\(.*\\)<\\/seg>.*/\\1/p' "
            f"{path} > TEXT)"
        )


def check_not_wide_encoding(path: Path, first_line: bytes, encoding: str) -> None:
    """A file in UTF-16 or UTF-32 (Windows' "Unicode", as Notepad, Excel and PowerShell save text)
    has a NUL byte beside each of its ASCII letters. Without a byte-order mark it decodes as UTF-8,
    in Latin-1 always, and Moses deletes the NULs: its ASCII letters were read right, the others
    as other letters (œ, 53 01 in UTF-16LE, as S), and the NUL after its last \\n made one more
    sentence, empty, without an error. No text in UTF-8, or in an encoding --encoding takes (one
    byte for \\n), holds a NUL byte. Only the first line is looked at, where such a file has its
    mark or its first letters: a crawled corpus may hold a stray NUL deeper down, which Moses
    deletes there as it does at translation."""
    wide = next((name for mark, name in WIDE_ENCODING_MARKS if first_line.startswith(mark)), None)
    if wide is not None:
        found, iconv = (
            f"{wide} text (it starts with {wide}'s byte-order mark)",
            f"iconv -f {wide.lower()} -t utf-8",
        )
    elif b"\0" in first_line:
        byte = first_line.index(b"\0") + 1
        found = f"UTF-16 or UTF-32 text (line 1, byte {byte:,} is 0x00, as beside ASCII letters)"
        iconv = "iconv -f utf-16le -t utf-8, or from the encoding it is in"
    else:
        return
    named = "UTF-8" if is_utf8(encoding) else encoding
    raise DataError(
        f"{path} is {found}, not {named}: its letters would be read as others; convert the file "
        f"to UTF-8 ({iconv})"
    )


def not_in_encoding(
    path: Path,
    number: int,
    line: bytes,
    error: UnicodeDecodeError,
    encoding: str,
    encoding_option: bool = True,
) -> str:
    """What is wrong with line number of path, and what to do; with encoding_option, naming the
    file's encoding (--encoding) is one of the ways."""
    named = "UTF-8" if is_utf8(encoding) else encoding
    message = (
        f"{path} is not {named} text: line {number:,}, byte {error.start + 1:,} is "
        f"0x{line[error.start]:02x}; convert the file to UTF-8 (iconv -f ITS-ENCODING -t utf-8)"
    )
    or_name_it = ", or name its encoding with --encoding (--encoding latin-1, say)"
    return message + (or_name_it if encoding_option else "")


def check_no_control_character(path: Path, number: int, text: str, encoding: str) -> None:
    """A line read in an encoding the user named that holds a C1 control character is in another
    encoding: cp1252 read as latin-1 (as the error above suggests for a file that is not UTF-8)
    turns l'homme's apostrophe (0x92) into a token of its own, and its ellipsis (0x85) into a
    space, without an error. Not for UTF-8: there U+0080-U+009F take two bytes, written on
    purpose."""
    control = C1_CONTROL.search(text)
    if control:
        raise DataError(
            f"{path} is not {encoding} text: line {number:,}, character {control.start() + 1:,} "
            f"is U+{ord(control.group()):04X}, a control character in {encoding}; name the "
            "file's encoding with --encoding (cp1252 for a file from Windows), or convert the "
            "file to UTF-8 (iconv -f ITS-ENCODING -t utf-8)"
        )


def is_utf8(encoding: str) -> bool:
    return codecs.lookup(encoding).name in (UTF8, "utf-8-sig")


class Misreading:
    """A file that is UTF-8, read in another encoding that decodes any byte (--encoding latin-1
    given for another file of the corpus): every letter that is not ASCII would become others,
    é the two letters Ã©, without an error. Such a file is refused: each of its lines decodes as
    UTF-8, and at least one is not ASCII."""

    def __init__(self, path: Path, encoding: str):
        self.path, self.encoding = path, encoding
        self.maybe_utf8 = not is_utf8(encoding)  # read in another encoding, and UTF-8 so far
        self.first_non_ascii = 0  # the number of its first line that is not ASCII

    def check(self, number: int, line: bytes) -> None:
        if not self.maybe_utf8 or line.isascii():
            return
        self.first_non_ascii = self.first_non_ascii or number
        try:
            line.decode(UTF8)
        except UnicodeDecodeError:
            self.maybe_utf8 = False

    def finish(self) -> None:
        if self.maybe_utf8 and self.first_non_ascii:
            raise DataError(
                f"{self.path} is UTF-8 (line {self.first_non_ascii:,} is not ASCII), which "
                f"--encoding {self.encoding} would misread (é as Ã©): convert the files that are "
                f"not UTF-8 (iconv -f {self.encoding} -t utf-8) and leave --encoding out"
            )


def read_pairs(parts: Sequence[ParallelFiles]) -> Iterator[Tuple[bytes, bytes]]:
    """The pairs of all parts, one part after the other."""
    for files in parts:
        yield from zip(records(files.source), records(files.target))


def _open_bytes(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
