"""A user's own parallel text: fairseq-style file prefixes (PREFIX.SRC and PREFIX.TGT) for each
split."""

from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ..errors import DataError
from .pipeline import Split
from .reading import ParallelFiles


def corpus_splits(
    train: Path, valid: Optional[Path], tests: Sequence[Path], languages: Tuple[str, str]
) -> List[Split]:
    """train, valid if given, then test, test1, test2, ... in the order of the test prefixes."""
    named = [("train", train)] + ([("valid", valid)] if valid else [])
    named += [
        ("test" if number == 0 else f"test{number}", prefix) for number, prefix in enumerate(tests)
    ]
    return [
        Split(name, str(prefix), (parallel_files(prefix, languages),)) for name, prefix in named
    ]


def parallel_files(prefix: Path, languages: Tuple[str, str]) -> ParallelFiles:
    return ParallelFiles(*(side_file(prefix, language) for language in languages))


def side_file(prefix: Path, language: str) -> Path:
    """PREFIX.LANG, or PREFIX.LANG.gz."""
    plain = Path(f"{prefix}.{language}")
    for candidate in (plain, Path(f"{plain}.gz")):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"missing file {plain} (or {plain}.gz): each prefix needs one file per language, "
        f"named PREFIX.{language}, one sentence per line"
    )
