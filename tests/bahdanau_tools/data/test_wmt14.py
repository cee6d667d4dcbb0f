"""bahdanau-prepare-data wmt14 --from-dir on a small release with the real file names and
formats."""

import shutil
from pathlib import PurePosixPath

import pytest

from bahdanau_tools.data import wmt14
from bahdanau_tools.data.download import file_md5
from bahdanau_tools.data.wmt14 import Archive, extract_members, extract_release, fetch_archives
from bahdanau_tools.errors import DataError

from .copying import overwrite_keeping_size_and_times
from .corpora import TEST_PAIRS, release_members, write_tar
from .scripts import binarized_sentences, read_summary, text_lines


def members_text(archive, *names):
    members = release_members()[archive]
    return [line for name in names for line in members[name].decode().splitlines()]


@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_binaries_load_with_one_sentence_per_kept_pair(wmt14_bpe, split):
    kept = read_summary(wmt14_bpe)["splits"][split]["cleaning"]["kept"]
    assert [binarized_sentences(wmt14_bpe, split, language) for language in ("en", "fr")] == [
        kept,
        kept,
    ]


def test_training_pairs_come_from_all_five_corpora(wmt14_bpe):
    train = read_summary(wmt14_bpe)["splits"]["train"]
    assert (
        train["origin"]
        == "Europarl v7 + Common Crawl + UN + News Commentary v9 + 10^9 French-English"
    )
    assert (
        train["cleaning"]["read"] == 5 * 30 + 4
    )  # 30 pairs per corpus, plus one bad pair in four of them


def test_each_cleaning_step_drops_and_counts_its_bad_training_pair(wmt14_bpe):
    cleaning = read_summary(wmt14_bpe)["splits"]["train"]["cleaning"]
    assert {step: count for step, count in cleaning.items() if step not in ("read", "kept")} == {
        "empty": 1,
        "ratio": 1,
        "too_long": 1,
        "long_word": 1,
    }
    assert cleaning["kept"] == 5 * 30


def test_valid_is_newstest2012_then_newstest2013(wmt14_bpe):
    expected = members_text("dev.tgz", "dev/newstest2012.fr", "dev/newstest2013.fr")
    assert text_lines(wmt14_bpe / "raw" / "valid.fr") == expected


def test_test_is_the_text_of_the_sgml_segments_with_no_line_dropped(wmt14_bpe):
    assert text_lines(wmt14_bpe / "raw" / "test.en") == [
        source.decode() for source, _ in TEST_PAIRS
    ]
    assert text_lines(wmt14_bpe / "raw" / "test.fr") == [
        target.decode() for _, target in TEST_PAIRS
    ]


def test_test_text_is_moses_tokenized_with_escaping_as_fairseq_does(wmt14_bpe):
    assert "AT &amp; T and R &amp; D grew ." in text_lines(wmt14_bpe / "tok" / "test.en")


def test_a_member_missing_from_an_archive_is_an_error_naming_it(tmp_path):
    archive = tmp_path / "dev.tgz"
    write_tar(archive, {"dev/newstest2012.en": b"Hello.\n"})
    with pytest.raises(DataError, match="dev/newstest2012.fr"):
        extract_members(archive, ["dev/newstest2012.en", "dev/newstest2012.fr"], tmp_path / "orig")


def test_a_truncated_archive_is_an_error_saying_to_fetch_it_again(tmp_path):
    archive = tmp_path / "dev.tgz"
    write_tar(archive, {"dev/newstest2012.en": b"Hello.\n" * 1000})
    archive.write_bytes(archive.read_bytes()[:60])
    with pytest.raises(DataError, match="fetch it again"):
        extract_members(archive, ["dev/newstest2012.en"], tmp_path / "orig")


def test_a_rerun_keeps_the_members_extracted_from_the_same_archives(wmt14_release, tmp_path):
    extract_release(wmt14_release, tmp_path)
    extracted = (tmp_path / "orig" / "newstest2012.en").stat().st_mtime_ns
    extract_release(wmt14_release, tmp_path)
    assert (tmp_path / "orig" / "newstest2012.en").stat().st_mtime_ns == extracted


def test_an_archive_replaced_since_the_last_run_is_extracted_again(wmt14_release, tmp_path):
    """A corrected --from-dir, or an archive fetched again: its old members would be read instead,
    and every later stage kept."""
    release = shutil.copytree(wmt14_release, tmp_path / "release")
    extract_release(release, tmp_path)
    members = release_members()["dev.tgz"]
    write_tar(release / "dev.tgz", {**members, "dev/newstest2012.en": b"Replaced.\n"})
    extract_release(release, tmp_path)
    assert (tmp_path / "orig" / "newstest2012.en").read_bytes() == b"Replaced.\n"


def test_an_archive_copied_over_with_the_same_size_and_times_is_extracted_again(
    wmt14_release, tmp_path
):
    """`cp -p` of another release file of the same size: it has the old one's modification time,
    and its members would have been kept from the old one."""
    release = shutil.copytree(wmt14_release, tmp_path / "release")
    extract_release(release, tmp_path)
    archive, member = "training-giga-fren.tar", wmt14.TRAIN[-1].english  # a plain tar
    members = release_members()[archive]
    other = {**members, member: members[member][::-1]}  # as many bytes: as long an archive
    write_tar(tmp_path / archive, other)
    overwrite_keeping_size_and_times(release / archive, (tmp_path / archive).read_bytes())
    extract_release(release, tmp_path)
    assert (tmp_path / "orig" / PurePosixPath(member).name).read_bytes() == other[member]


def test_every_corpus_comes_from_an_archive_of_the_release_table():
    corpora = wmt14.TRAIN + wmt14.VALID + wmt14.TEST
    assert {corpus.archive for corpus in corpora} == {archive.name for archive in wmt14.ARCHIVES}


def test_without_from_dir_every_archive_is_downloaded_and_checked(
    wmt14_release, tmp_path, monkeypatch
):
    published = tuple(
        Archive(
            archive.name,
            (wmt14_release / archive.name).as_uri(),
            file_md5(wmt14_release / archive.name),
        )
        for archive in wmt14.ARCHIVES
    )
    monkeypatch.setattr(wmt14, "ARCHIVES", published)
    folder = fetch_archives(None, tmp_path / "download")
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        archive.name for archive in published
    )


def published_as(release, monkeypatch) -> None:
    """From now on in the test: the release's archives are the published ones (their MD5s)."""
    published = [
        Archive(archive.name, archive.url, file_md5(release / archive.name))
        for archive in wmt14.ARCHIVES
    ]
    monkeypatch.setattr(wmt14, "ARCHIVES", tuple(published))


def test_an_archive_given_that_is_not_the_published_file_is_extracted_after_a_warning(
    wmt14_release, tmp_path, monkeypatch, capsys
):
    """Another version, or a damaged copy, from --from-dir: its data would differ unsaid."""
    published_as(wmt14_release, monkeypatch)
    release = shutil.copytree(wmt14_release, tmp_path / "release")
    write_tar(release / "dev.tgz", {**release_members()["dev.tgz"], "dev/extra": b"x\n"})
    extract_release(release, tmp_path)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    dev = next(archive for archive in wmt14.ARCHIVES if archive.name == "dev.tgz")
    assert warnings == [
        f"warning: {release / 'dev.tgz'} has MD5 {file_md5(release / 'dev.tgz')}, not the "
        f"published {dev.md5} of {dev.url}: another version of the WMT'14 release file, or a "
        "damaged copy; its members are extracted as they are"
    ]
    assert (tmp_path / "orig" / "newstest2012.en").exists()


def test_the_published_files_are_checked_once_per_content(wmt14_release, tmp_path, monkeypatch):
    published_as(wmt14_release, monkeypatch)
    checked = []
    monkeypatch.setattr(wmt14, "file_md5", lambda path: checked.append(path) or file_md5(path))
    extract_release(wmt14_release, tmp_path)
    extract_release(wmt14_release, tmp_path)
    assert sorted(checked) == sorted(wmt14_release / archive.name for archive in wmt14.ARCHIVES)


def test_downloaded_archives_checked_as_fetched_are_not_read_again_to_extract(
    wmt14_release, tmp_path, monkeypatch
):
    checked = []
    monkeypatch.setattr(wmt14, "file_md5", lambda path: checked.append(path) or file_md5(path))
    extract_release(wmt14_release, tmp_path, given=False)
    assert checked == [] and (tmp_path / "orig" / "newstest2012.en").exists()
