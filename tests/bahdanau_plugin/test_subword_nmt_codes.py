"""--bpe subword_nmt as the plugin builds it (bahdanau_plugin/subword_nmt_codes.py) segments a
line into the words fairseq reads its pieces as: split at any whitespace, not at spaces alone; and
refuses a file that is not codes in one line."""

from argparse import Namespace

import pytest

from bahdanau_plugin.errors import ConfigurationError, MissingPathError
from bahdanau_plugin.subword_nmt_codes import build_bpe

WHITESPACE = {
    "tab": "\t",
    "no-break space": "\u00a0",
    "ideographic space": "\u3000",
    "line separator": "\u2028",
    "vertical tab": "\x0b",
}


@pytest.mark.parametrize("space", WHITESPACE.values(), ids=WHITESPACE.keys())
def test_words_separated_by_any_whitespace_are_segmented_as_words_separated_by_a_space(
    bpe_prepared, space
):
    """subword-nmt splits at spaces alone: red<TAB>cat was one word to it, segmented into pieces
    that continue across the tab (re@@ d@@ <TAB>@@ ca@@ t), read by fairseq as red@@ @@ cat."""
    bpe = build_bpe(Namespace(bpe="subword_nmt", bpe_codes=str(bpe_prepared / "bpe.codes")))
    assert bpe.encode(f"the red{space}cat") == bpe.encode("the red cat")


def subword_nmt_with_codes(path):
    return build_bpe(Namespace(bpe="subword_nmt", bpe_codes=str(path)))


def test_a_text_given_for_the_codes_is_refused_in_one_line_naming_its_line_not_exiting(tmp_path):
    """subword-nmt wrote two lines to stderr and exited the process: a Python program that loaded
    the hub with it ended there."""
    text = tmp_path / "train.en"
    text.write_text("a red cat sees the dog\n", encoding="utf-8")
    with pytest.raises(
        ConfigurationError,
        match=r"--bpe-codes \S+/train\.en is not a subword-nmt codes file: its line 1, 'a red cat "
        "sees the dog', is not a merge of two units separated by a space; give the codes",
    ):
        subword_nmt_with_codes(text)


def test_codes_that_are_not_utf8_are_refused_in_one_line(bpe_prepared, tmp_path):
    latin1 = tmp_path / "bpe.codes"
    latin1.write_bytes(
        (bpe_prepared / "bpe.codes").read_bytes() + "caf\u00e9 x\n".encode("latin-1")
    )
    with pytest.raises(
        ConfigurationError,
        match=r"--bpe-codes \S+/bpe\.codes is not a subword-nmt codes file: it is not UTF-8 text "
        r"\(byte 0xe9\)",
    ):
        subword_nmt_with_codes(latin1)


def test_a_folder_given_for_the_codes_is_refused_in_one_line_naming_the_codes_in_it(bpe_prepared):
    """open failed on it in an IsADirectoryError traceback: bahdanau-prepare-data's OUT given for
    OUT/bpe.codes."""
    with pytest.raises(
        MissingPathError,
        match=rf"--bpe-codes {bpe_prepared} is a folder, not a codes file: give the codes in it, "
        rf"{bpe_prepared / 'bpe.codes'}$",
    ):
        subword_nmt_with_codes(bpe_prepared)


def test_a_folder_without_codes_in_it_is_refused_saying_which_codes_to_give(tmp_path):
    with pytest.raises(
        MissingPathError,
        match=r"is a folder, not a codes file: give the codes the data was segmented with",
    ):
        subword_nmt_with_codes(tmp_path)


def test_codes_not_found_are_refused_naming_the_file_and_what_to_give(tmp_path, monkeypatch):
    """fairseq's cached_path said 'file nope.codes not found', not what to give; the path is read
    from the current folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        MissingPathError,
        match=rf"--bpe-codes nope\.codes not found \({tmp_path / 'nope.codes'} does not exist\): "
        "give the codes the data was segmented with",
    ):
        subword_nmt_with_codes("nope.codes")


@pytest.mark.parametrize("overwrite", ["", " #fairseq:overwrite"], ids=["", "overwrite-flag"])
def test_a_fairseq_dictionary_given_for_the_codes_is_refused_in_one_line(
    bpe_prepared, tmp_path, overwrite
):
    """subword-nmt read each of its lines, 'e@@ 6096', as a merge of two units, and segmented
    every word into its letters without a word."""
    dictionary = tmp_path / "dict.en.txt"
    lines = (bpe_prepared / "data-bin" / "dict.en.txt").read_text(encoding="utf-8").splitlines()
    dictionary.write_text("".join(f"{line}{overwrite}\n" for line in lines), encoding="utf-8")
    with pytest.raises(
        ConfigurationError,
        match=r"--bpe-codes \S+/dict\.en\.txt is not a subword-nmt codes file: it is a fairseq "
        r"dictionary \(a word and its count a line, as a data-bin's dict\.\*\.txt\), not merges "
        "of two units; give the codes",
    ):
        subword_nmt_with_codes(dictionary)


def test_codes_without_a_version_line_are_read_as_codes(tmp_path):
    """subword-nmt before 0.2 wrote no '#version:' line: its merges are not taken for a
    dictionary's lines."""
    codes = tmp_path / "old.codes"
    codes.write_text("t h\nth e\n", encoding="utf-8")
    assert subword_nmt_with_codes(codes).encode("the then") == "the the@@ n"
