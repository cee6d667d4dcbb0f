"""Bad input ends bahdanau-prepare-data's presets with one line that names what is wrong."""

from .corpora import INVALID_UTF8, sentence_pairs, write_multi30k, write_wmt14_release
from .scripts import error_lines, run_preset

MULTI30K_STEMS = ("train", "val", "test_2016_flickr")


def small_multi30k(directory, **replaced):
    return write_multi30k(
        directory, {stem: replaced.get(stem, sentence_pairs(12)) for stem in MULTI30K_STEMS}
    )


def test_a_missing_multi30k_file_is_a_one_line_error_naming_it(tmp_path):
    folder = small_multi30k(tmp_path / "multi30k")
    (folder / "val.fr.gz").unlink()
    completed = run_preset("multi30k", "--from-dir", folder, "--out", tmp_path / "out", "--bpe", 10)
    [line] = error_lines(completed)
    assert "missing file" in line and str(folder / "val.fr.gz") in line


def test_a_missing_wmt14_archive_is_a_one_line_error_naming_it(tmp_path):
    release = write_wmt14_release(tmp_path / "release")
    (release / "test-full.tgz").unlink()
    completed = run_preset("wmt14", "--from-dir", release, "--out", tmp_path / "out", "--bpe", 10)
    [line] = error_lines(completed)
    assert "missing file" in line and str(release / "test-full.tgz") in line


def test_sides_with_different_line_counts_are_a_one_line_error_with_both_counts(tmp_path):
    folder = small_multi30k(tmp_path / "multi30k")
    write_multi30k(tmp_path / "short", {"train": sentence_pairs(11)})
    (tmp_path / "short" / "train.fr.gz").replace(folder / "train.fr.gz")
    completed = run_preset("multi30k", "--from-dir", folder, "--out", tmp_path / "out", "--bpe", 10)
    [line] = error_lines(completed)
    assert f"{folder / 'train.en.gz'} has 12 lines but {folder / 'train.fr.gz'} has 11" in line


def test_a_line_that_is_not_utf8_is_a_one_line_error_naming_the_file_the_line_and_the_byte(
    tmp_path,
):
    folder = small_multi30k(tmp_path / "multi30k", train=sentence_pairs(12) + [INVALID_UTF8])
    completed = run_preset(
        "multi30k", "--from-dir", folder, "--out", tmp_path / "out", "--shortlist", 50
    )
    assert error_lines(completed) == [
        f"error: {folder / 'train.en.gz'} is not UTF-8 text: line 13, byte 8 is 0xe9; convert "
        "the file to UTF-8 (iconv -f ITS-ENCODING -t utf-8), or name its encoding with "
        "--encoding (--encoding latin-1, say)"
    ]
