"""The documents' Markdown tables have as many cells in each row as in their header: a row with
one more is cut short where GitHub renders it, and a delimiter row of another count leaves the
table unrendered, its rows one paragraph of pipes."""

import re
from pathlib import Path
from typing import Iterator, Tuple

from ..support.paths import REPO

# A cell's end: a pipe that is not escaped (a pipe inside a table's code span is written \|).
CELL_END = re.compile(r"(?<!\\)\|")


def documents() -> Iterator[Path]:
    yield REPO / "README.md"
    for folder in ("docs", "bench"):
        yield from sorted((REPO / folder).glob("**/*.md"))


def rows_of_another_width(document: Path) -> Iterator[Tuple[int, int, int]]:
    """(line, cells, the header's cells) of each table row whose count differs from its header's."""
    header = None
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.startswith("|"):
            header = None
            continue
        cells = len(CELL_END.split(line))
        if header is None:
            header = cells
        elif cells != header:
            yield number, cells - 2, header - 2


def test_every_table_row_has_as_many_cells_as_its_header():
    wrong = {
        f"{document.relative_to(REPO)}:{line}": f"{cells} cells, the header {header}"
        for document in documents()
        for line, cells, header in rows_of_another_width(document)
    }
    assert wrong == {}
