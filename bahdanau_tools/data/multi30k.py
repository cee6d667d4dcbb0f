"""Multi30k task 1, English-French: where its files are published, and which file is which split."""

from pathlib import Path
from typing import List

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
    """Test sets named like test_2016_flickr (test_*.en.gz with a test_*.fr.gz beside it)."""
    source, target = LANGUAGES
    suffix = f".{source}.gz"
    stems = sorted(path.name[: -len(suffix)] for path in directory.glob(f"test_*{suffix}"))
    return [
        stem
        for stem in stems
        if stem != "test_2016_flickr" and (directory / f"{stem}.{target}.gz").is_file()
    ]


def _files(directory: Path, stem: str) -> ParallelFiles:
    source, target = (
        require_file(directory / f"{stem}.{language}.gz", MISSING_HINT) for language in LANGUAGES
    )
    return ParallelFiles(source, target)
