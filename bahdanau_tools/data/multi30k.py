"""Multi30k task 1, English-French: where its files are published, and which file is which split."""

import sys
from pathlib import Path
from typing import List, Set

from .download import download
from .pipeline import Split
from .reading import ParallelFiles, require_file

LANGUAGES = ("en", "fr")
REPOSITORY_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
# fairseq's split name -> the dataset's file stem
REQUIRED_SPLITS = (("train", "train"), ("valid", "val"), ("test", "test_2016_flickr"))
# further test sets the repository publishes in both English and French
PUBLISHED_EXTRA_TESTS = ("test_2017_flickr", "test_2017_mscoco")
MISSING_HINT = (
    "Multi30k task 1 files are named <split>.<language>.gz; pass the folder that holds them "
    "with --from-dir, or leave --from-dir out to download them"
)


def download_multi30k(directory: Path, base_url: str = REPOSITORY_URL) -> Path:
    stems = [stem for _, stem in REQUIRED_SPLITS] + list(PUBLISHED_EXTRA_TESTS)
    for stem in stems:
        for language in LANGUAGES:
            name = f"{stem}.{language}.gz"
            download(f"{base_url}/{name}", directory / name)
    return directory


def multi30k_splits(directory: Path) -> List[Split]:
    """train, valid and test (test_2016_flickr), then test1, test2, ... for the other test sets
    found in the folder, in the order of their names."""
    splits = [Split(name, stem, (_files(directory, stem),)) for name, stem in REQUIRED_SPLITS]
    extra = [
        Split(f"test{number}", stem, (_files(directory, stem),))
        for number, stem in enumerate(extra_test_stems(directory), start=1)
    ]
    return splits + extra


def extra_test_stems(directory: Path) -> List[str]:
    """Test sets named like test_2016_flickr (test_*.en.gz with a test_*.fr.gz beside it). A test
    set with one side alone is left out, said in a warning: the others would be numbered test1,
    test2, ... without it, and its text missing from the data-bin, without a word."""
    sides = {language: _test_stems(directory, language) for language in LANGUAGES}
    both = set.intersection(*sides.values()) - {"test_2016_flickr"}
    for language, stems in sides.items():
        for stem in sorted(stems - both - {"test_2016_flickr"}):
            _warn_one_side_alone(directory, stem, language)
    return sorted(both)


def _test_stems(directory: Path, language: str) -> Set[str]:
    suffix = f".{language}.gz"
    return {path.name[: -len(suffix)] for path in directory.glob(f"test_*{suffix}")}


def _warn_one_side_alone(directory: Path, stem: str, language: str) -> None:
    (other,) = (side for side in LANGUAGES if side != language)
    print(
        f"warning: {directory / f'{stem}.{language}.gz'} has no {stem}.{other}.gz beside it: "
        "that test set is not prepared, and the other extra test sets are numbered test1, "
        "test2, ... without it",
        file=sys.stderr,
        flush=True,
    )


def _files(directory: Path, stem: str) -> ParallelFiles:
    source, target = (
        require_file(directory / f"{stem}.{language}.gz", MISSING_HINT) for language in LANGUAGES
    )
    return ParallelFiles(source, target)
