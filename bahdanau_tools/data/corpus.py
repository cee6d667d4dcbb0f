"""A user's own parallel text: fairseq-style file prefixes (PREFIX.SRC and PREFIX.TGT) for each
split."""

import os
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import DataError
from .digests import DigestCache
from .pipeline import Split
from .reading import ParallelFiles


def corpus_splits(
    train: Path,
    valid: Optional[Path],
    tests: Sequence[Path],
    languages: Tuple[str, str],
    digests: DigestCache,
) -> List[Split]:
    """train, valid if given, then test, test1, test2, ... in the order of the test prefixes.
    digests: the output folder's (stages.digest_cache), whose stages hash the same files."""
    named = [("train", train)] + ([("valid", valid)] if valid else [])
    named += [
        ("test" if number == 0 else f"test{number}", prefix) for number, prefix in enumerate(tests)
    ]
    splits = [
        Split(name, str(prefix), (parallel_files(prefix, languages),)) for name, prefix in named
    ]
    check_each_file_read_once(splits, languages, digests)
    return splits


def check_each_file_read_once(
    splits: Sequence[Split], languages: Tuple[str, str], digests: DigestCache
) -> None:
    """A file read as two splits, or as both languages, is a mistake nothing later would see: a
    test or valid split of training text scores the model on what it learned from, and a test set
    given twice stands for another one left out. Files are told apart by device and inode, so that
    a link, or another spelling of the path, is found too, and by content, so that a copy is: by
    the whole file's, since sentences a test set shares with training are the corpus's, not a
    slip of the command line. Only files of the same size are hashed, with the digests the check
    stage reads next, so that no file of a corpus of gigabytes is read for this alone. An empty
    file is no copy: count_pairs names the split it leaves empty."""
    reads = [
        (path, f"the {split.name} split's {language} side (--{option(split.name)} {split.origin})")
        for split in splits
        for path, language in zip(split.files(), languages)  # one part per split here
    ]
    statuses = {path: path.stat() for path, _ in reads}
    files_of_size = defaultdict(set)
    for status in statuses.values():
        files_of_size[status.st_size].add((status.st_dev, status.st_ino))
    first_reads = {}  # the file's identity (its digest, or else its inode) -> path, role
    for path, role in reads:
        status = statuses[path]
        may_be_a_copy = status.st_size > 0 and len(files_of_size[status.st_size]) > 1
        identity = digests.digest(path) if may_be_a_copy else (status.st_dev, status.st_ino)
        first_path, first_role = first_reads.setdefault(identity, (path, role))
        if first_role != role:
            raise DataError(
                f"{read_as(first_path, path, statuses)} read as {first_role} and as {role}: give "
                "each split and each language a file of its own (a test split of training text "
                "would score the model on what it learned from)"
            )
    digests.save()  # for the check stage, which hashes the same files


def read_as(first: Path, again: Path, statuses: Dict[Path, os.stat_result]) -> str:
    """The file read twice, as the paths first and again name it: one path, a file and one of its
    other names (a link), or two files of the same bytes."""
    if first == again:
        return f"{first} is"
    if os.path.samestat(statuses[first], statuses[again]):
        return f"{first} (also named {again}) is"
    return f"{first} and its copy {again} (the same bytes) are"


def option(split_name: str) -> str:
    """The option that gave the split's prefix: train, valid, or test for test, test1, ..."""
    return "test" if split_name.startswith("test") else split_name


def parallel_files(prefix: Path, languages: Tuple[str, str]) -> ParallelFiles:
    return ParallelFiles(*(side_file(prefix, language) for language in languages))


def side_file(prefix: Path, language: str) -> Path:
    """PREFIX.LANG, or PREFIX.LANG.gz; not both: the plain file was read, without a word, where the
    other may be another version of the text (a newer download beside an older copy unpacked,
    a gunzip cut short)."""
    plain = Path(f"{prefix}.{language}")
    found = [candidate for candidate in (plain, Path(f"{plain}.gz")) if candidate.is_file()]
    if len(found) == 2:
        raise DataError(
            f"{plain} and {plain}.gz are both there, and either would be read as the "
            f"{language} side of {prefix}: move the one that is not the corpus out of its folder"
        )
    if found:
        return found[0]
    raise DataError(
        f"missing file {plain} (or {plain}.gz): each prefix needs one file per language, "
        f"named PREFIX.{language}, one sentence per line"
    )
