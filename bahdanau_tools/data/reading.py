"""Parallel text as raw byte lines, streamed: plain or gzip'd text, and WMT's SGML test sets."""

import codecs
import gzip
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence, Tuple

from ..errors import DataError

SGML_SEGMENT = re.compile(rb"<seg[^>]*>(.*)</seg>")


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

    Bytes, because a line that is not valid UTF-8 has to be dropped and counted rather than stop
    the reader; split at b"\\n" only, because the corpora hold stray carriage returns and Unicode
    line separators inside their lines. The byte-order mark that Windows editors write at the start
    of a file is dropped, as Python's utf-8-sig codec and fairseq-interactive's input (the plugin
    reads it so) drop it: it marks the encoding, it is not text, and kept it would become a token.
    U+FEFF anywhere else is a character of the text, and stays.
    """
    with _open_bytes(path) as stream:
        for number, line in enumerate(stream):
            if number == 0 and line.startswith(codecs.BOM_UTF8):
                line = line[len(codecs.BOM_UTF8) :]
            yield line.rstrip(b"\r\n")


def sgml_segments(path: Path) -> Iterator[bytes]:
    """The text of each `<seg id="N">text</seg>` line, as WMT's test sets hold one per line."""
    for line in lines(path):
        match = SGML_SEGMENT.search(line)
        if match:
            yield match.group(1)


def check_aligned(files: ParallelFiles) -> int:
    """Return the number of pairs, after checking that both sides have as many sentences."""
    source_count = sum(1 for _ in records(files.source))
    target_count = sum(1 for _ in records(files.target))
    if source_count != target_count:
        raise DataError(
            f"{files.source} has {source_count} lines but {files.target} has {target_count}; "
            "line N of one side must translate line N of the other"
        )
    return source_count


def read_pairs(parts: Sequence[ParallelFiles]) -> Iterator[Tuple[bytes, bytes]]:
    """The pairs of all parts, one part after the other."""
    for files in parts:
        yield from zip(records(files.source), records(files.target))


def _open_bytes(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
