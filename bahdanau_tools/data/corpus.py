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
    splits = [
        Split(name, str(prefix), (parallel_files(prefix, languages),)) for name, prefix in named
    ]
    check_each_file_read_once(splits, languages)
    return splits


def check_each_file_read_once(splits: Sequence[Split], languages: Tuple[str, str]) -> None:
    """A file read as two splits, or as both languages, is a mistake nothing later would see: a
    test or valid split that is the training text scores the model on what it learned from, and a
    test set given twice stands for another one left out. Files are told apart by device and
    inode, so that a link, or another spelling of the path, is found too."""
    roles = {}  # (device, inode) -> (the path first read, its role)
    for split in splits:
        for path, language in zip(split.files(), languages):  # one part per split here
            status = path.stat()
            role = (
                f"the {split.name} split's {language} side (--{option(split.name)} {split.origin})"
            )
            first_path, first_role = roles.setdefault((status.st_dev, status.st_ino), (path, role))
            if first_role != role:
                named = first_path if first_path == path else f"{first_path} (also named {path})"
                raise DataError(
                    f"{named} is read as {first_role} and as {role}: give each split and each "
                    "language a file of its own (a test split of training text would score the "
                    "model on what it learned from)"
                )


def option(split_name: str) -> str:
    """The option that gave the split's prefix: train, valid, or test for test, test1, ..."""
    return "test" if split_name.startswith("test") else split_name


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
