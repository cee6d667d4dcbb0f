"""Pipeline runs shared by the data tests: each is run once per session, its outputs only read."""

import gzip
from itertools import islice
from pathlib import Path
from typing import Optional

import pytest

from ...support.paths import MULTI30K
from ...support.shared import made_once
from .corpora import write_wmt14_release
from .scripts import run_pipeline

MULTI30K_TRAIN_PAIRS = 3000
MULTI30K_MAX_LEN = 20
# a test set beside the others, named like them, that the pipeline has to pick up as test1
EXTRA_TEST_STEM = "test_slice_of_val"
WMT14_MAX_LEN = 20


@pytest.fixture(scope="session")
def multi30k_slice(tmp_path_factory) -> Path:
    """The first training pairs of Multi30k, its whole val and test_2016_flickr, and an extra test
    set."""
    if not (MULTI30K / "train.en.gz").is_file():
        pytest.skip(
            f"Multi30k not found in {MULTI30K} (the shared data folder beside the repository)"
        )
    return made_once(tmp_path_factory, "multi30k", _copy_multi30k_slice)


def _copy_multi30k_slice(directory: Path) -> None:
    for language in ("en", "fr"):
        _copy_head(
            MULTI30K / f"train.{language}.gz",
            directory / f"train.{language}.gz",
            MULTI30K_TRAIN_PAIRS,
        )
        for stem in ("val", "test_2016_flickr"):
            _copy_head(
                MULTI30K / f"{stem}.{language}.gz", directory / f"{stem}.{language}.gz", None
            )
        _copy_head(
            MULTI30K / f"val.{language}.gz", directory / f"{EXTRA_TEST_STEM}.{language}.gz", 100
        )


def _prepare_multi30k(multi30k_slice, tmp_path_factory, vocabulary: str) -> Path:
    """The pipeline on the slice, with --bpe 1000 or --shortlist 1000."""

    def prepare(out):
        run_pipeline(
            "multi30k",
            out,
            "--from-dir",
            multi30k_slice,
            f"--{vocabulary}",
            1000,
            "--max-len",
            MULTI30K_MAX_LEN,
        )

    return made_once(tmp_path_factory, f"multi30k-{vocabulary}", prepare)


@pytest.fixture(scope="session")
def multi30k_bpe(multi30k_slice, tmp_path_factory) -> Path:
    return _prepare_multi30k(multi30k_slice, tmp_path_factory, "bpe")


@pytest.fixture(scope="session")
def multi30k_shortlist(multi30k_slice, tmp_path_factory) -> Path:
    return _prepare_multi30k(multi30k_slice, tmp_path_factory, "shortlist")


@pytest.fixture(scope="session")
def wmt14_release(tmp_path_factory) -> Path:
    return made_once(tmp_path_factory, "wmt14-release", write_wmt14_release)


@pytest.fixture(scope="session")
def wmt14_bpe(wmt14_release, tmp_path_factory) -> Path:
    def prepare(out):
        run_pipeline(
            "wmt14",
            out,
            "--from-dir",
            wmt14_release,
            "--bpe",
            100,
            "--max-len",
            WMT14_MAX_LEN,
        )

    return made_once(tmp_path_factory, "wmt14-bpe", prepare)


def _copy_head(source: Path, destination: Path, count: Optional[int]) -> None:
    """Copy the first count lines of a gzip'd file (all of them for None)."""
    with gzip.open(source, "rb") as lines, gzip.open(destination, "wb") as out:
        out.writelines(islice(lines, count))
