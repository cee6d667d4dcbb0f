"""WMT'14 English-French as Bahdanau et al. (2015) used it: release archives, members, splits.

Training: Europarl v7, Common Crawl, UN, News Commentary v9 and the 10^9 French-English corpus;
development: newstest2012 + newstest2013; test: newstest2014, full version (3,003 sentences).
"""

import functools
import sys
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, List, Optional

from ..errors import DataError
from .download import copy_with_progress, download, file_md5
from .pipeline import Split
from .reading import ParallelFiles, require_file
from .stages import Stages

LANGUAGES = ("en", "fr")


@dataclass(frozen=True)
class Archive:
    name: str
    url: str
    md5: str


# MD5 sums as published by Sockeye's autopilot (sockeye_contrib/autopilot/tasks.py) and, for
# test-full.tgz, sacrebleu's data set table.
ARCHIVES = (
    Archive(
        "training-parallel-europarl-v7.tgz",
        "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        "c52404583294a1b609e56d45b2ed06f5",
    ),
    Archive(
        "training-parallel-commoncrawl.tgz",
        "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "7e0acbe86b0d7816300e14650f5b2bd4",
    ),
    Archive(
        "training-parallel-un.tgz",
        "https://www.statmt.org/wmt13/training-parallel-un.tgz",
        "bb25a213ba9140023e4cc82c778bef53",
    ),
    Archive(
        "training-parallel-nc-v9.tgz",
        "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz",
        "92e42b68f9d3c2ae9722e6d1c2623e21",
    ),
    Archive(
        "training-giga-fren.tar",
        "https://www.statmt.org/wmt10/training-giga-fren.tar",
        "0b12e20027d5b5f0dfcca290c72c8953",
    ),
    Archive("dev.tgz", "https://www.statmt.org/wmt14/dev.tgz", "88ba3fc60b2278d59277122e1c7dd6e7"),
    Archive(
        "test-full.tgz",
        "https://www.statmt.org/wmt14/test-full.tgz",
        "a8cd784e006feb32ac6f3d9ec7eb389a",
    ),
)


@dataclass(frozen=True)
class Corpus:
    """A parallel corpus inside a release archive: its English and its French member."""

    origin: str
    archive: str
    english: str
    french: str


TRAIN = (
    Corpus(
        "Europarl v7",
        "training-parallel-europarl-v7.tgz",
        "training/europarl-v7.fr-en.en",
        "training/europarl-v7.fr-en.fr",
    ),
    Corpus(
        "Common Crawl",
        "training-parallel-commoncrawl.tgz",
        "commoncrawl.fr-en.en",
        "commoncrawl.fr-en.fr",
    ),
    Corpus("UN", "training-parallel-un.tgz", "un/undoc.2000.fr-en.en", "un/undoc.2000.fr-en.fr"),
    Corpus(
        "News Commentary v9",
        "training-parallel-nc-v9.tgz",
        "training/news-commentary-v9.fr-en.en",
        "training/news-commentary-v9.fr-en.fr",
    ),
    Corpus(
        "10^9 French-English",
        "training-giga-fren.tar",
        "giga-fren.release2.fixed.en.gz",
        "giga-fren.release2.fixed.fr.gz",
    ),
)
VALID = (
    Corpus("newstest2012", "dev.tgz", "dev/newstest2012.en", "dev/newstest2012.fr"),
    Corpus("newstest2013", "dev.tgz", "dev/newstest2013.en", "dev/newstest2013.fr"),
)
TEST = (
    Corpus(
        "newstest2014 (full)",
        "test-full.tgz",
        "test-full/newstest2014-fren-src.en.sgm",
        "test-full/newstest2014-fren-ref.fr.sgm",
    ),
)
SPLITS = (("train", TRAIN), ("valid", VALID), ("test", TEST))


def fetch_archives(from_dir: Optional[Path], download_dir: Path) -> Path:
    """The folder holding every release archive: from_dir, checked, or download_dir, filled."""
    if from_dir is not None:
        for archive in ARCHIVES:
            require_file(
                from_dir / archive.name,
                f"--from-dir needs the WMT'14 release file, from {archive.url}",
            )
        return from_dir
    for archive in ARCHIVES:
        download(archive.url, download_dir / archive.name, archive.md5)
    return download_dir


def extract_release(archive_dir: Path, out: Path, given: bool = True) -> Path:
    """Copy the members the splits need out of the archives into out/orig, flat; return it. Each
    archive is a stage (stages.py) whose input is the archive: a rerun keeps what it extracted while
    the archive's content is the same, and extracts it again from an archive replaced since (fetched
    again, copied over it, or another --from-dir), whose members might differ. Archives ``given``
    (--from-dir) are checked against the published MD5 as they are extracted; downloaded ones
    were, as they were fetched."""
    destination = out / "orig"
    stages = Stages(out)
    for archive in ARCHIVES:
        path, members = archive_dir / archive.name, _members_of(archive.name)
        extract = functools.partial(extract_members, path, members, destination)
        stages.run(
            f"extract-{archive.name}",
            members,
            [path],
            [destination / PurePosixPath(member).name for member in members],
            functools.partial(extract_checked, path, archive, extract) if given else extract,
        )
    return destination


def extract_checked(path: Path, archive: Archive, extract: Callable[[], None]) -> None:
    """extract(), after a word where the archive is not the published release file (a copy given
    with --from-dir: another version, or a damaged one, whose data would differ unsaid). Checked
    when it is extracted, so once per archive's content: a rerun that keeps it reads it not
    again."""
    actual = file_md5(path)
    if actual != archive.md5:
        print(
            f"warning: {path} has MD5 {actual}, not the published {archive.md5} of {archive.url}: "
            "another version of the WMT'14 release file, or a damaged copy; its members are "
            "extracted as they are",
            file=sys.stderr,
            flush=True,
        )
    extract()


def _members_of(archive_name: str) -> List[str]:
    corpora = [
        corpus
        for _, split_corpora in SPLITS
        for corpus in split_corpora
        if corpus.archive == archive_name
    ]
    return [member for corpus in corpora for member in (corpus.english, corpus.french)]


def extract_members(archive: Path, members: Iterable[str], destination: Path) -> None:
    """Extract in one pass over the archive, as a stream: looking members up would decompress a
    multi-gigabyte .tgz again from its start for each one."""
    wanted = set(members)
    print(f"extracting {', '.join(sorted(wanted))} from {archive}", flush=True)
    destination.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, "r|*") as stream:
            for member in stream:
                name = member.name[2:] if member.name.startswith("./") else member.name
                if name in wanted:
                    _extract(stream, member, destination / PurePosixPath(name).name)
                    wanted.discard(name)
                    if not wanted:
                        return
    except (tarfile.TarError, EOFError, zlib.error) as error:
        raise DataError(
            f"{archive} is not a complete tar archive ({error}); delete it and fetch it again"
        ) from error
    raise DataError(f"{archive} has no member {sorted(wanted)[0]}; is it the WMT'14 release file?")


def _extract(stream: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    partial = target.with_name(target.name + ".part")
    with stream.extractfile(member) as content, partial.open("wb") as out:
        copy_with_progress(content, out, target.name, member.size)
    partial.replace(target)


def wmt14_splits(extracted: Path) -> List[Split]:
    return [
        Split(
            name,
            " + ".join(corpus.origin for corpus in corpora),
            tuple(
                ParallelFiles(
                    extracted / PurePosixPath(corpus.english).name,
                    extracted / PurePosixPath(corpus.french).name,
                )
                for corpus in corpora
            ),
        )
        for name, corpora in SPLITS
    ]
