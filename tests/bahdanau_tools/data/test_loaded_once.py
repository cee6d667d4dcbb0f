"""BPE codes and dictionaries are loaded once per process and per version of the file: another file
copied over one with `cp -p` (same size, same times) is loaded anew, not taken for the old one."""

import pytest

from bahdanau_tools.data.bpe import segment_lines
from bahdanau_tools.data.summary import count_unknown

from .copying import overwrite_keeping_size_and_times


@pytest.fixture
def codes(tmp_path):
    path = tmp_path / "bpe.codes"
    path.write_text("#version: 0.2\nT h</w>\n", encoding="utf-8")
    return path


def test_codes_overwritten_with_the_same_size_and_times_segment_with_their_own_merges(codes):
    segment_lines(["Th"], str(codes))
    overwrite_keeping_size_and_times(codes, b"#version: 0.2\nx y</w>\n")
    assert segment_lines(["Th"], str(codes)) == ["T@@ h"]


def test_a_dictionary_overwritten_with_the_same_size_and_times_counts_with_its_own_words(
    tmp_path,
):
    dictionary = tmp_path / "dict.en.txt"
    dictionary.write_text("cat 1\n", encoding="utf-8")
    count_unknown(["cat"], str(dictionary))
    overwrite_keeping_size_and_times(dictionary, b"dog 1\n")
    assert count_unknown(["cat"], str(dictionary))["unknown"] == 1
