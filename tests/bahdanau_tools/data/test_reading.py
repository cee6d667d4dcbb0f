"""Parallel files are read as raw byte lines or SGML segments, streamed, and checked to decode and
to align."""

import codecs
import gzip

import pytest

from bahdanau_tools.data.reading import (
    ParallelFiles,
    check_aligned,
    read_pairs,
    records,
    require_file,
)
from bahdanau_tools.errors import DataError


def test_lines_split_only_at_newlines_and_keep_their_bytes(tmp_path):
    path = tmp_path / "text.en"
    path.write_bytes("one\r\ntwo\u2028still two\rand \xe9\n".encode() + b"caf\xe9\n")
    assert list(records(path)) == [b"one", "two\u2028still two\rand \xe9".encode(), b"caf\xe9"]


def test_gzipped_files_are_read_as_their_text(tmp_path):
    path = tmp_path / "text.en.gz"
    path.write_bytes(gzip.compress(b"one\ntwo\n"))
    assert list(records(path)) == [b"one", b"two"]


def test_sgml_files_yield_the_text_of_their_segments(tmp_path):
    path = tmp_path / "newstest2014-fren-src.en.sgm"
    path.write_bytes(
        b'<srcset setid="newstest2014" srclang="any">\n<doc docid="1" genre="news">\n<p>\n'
        b'<seg id="1">AT&T grew.</seg>\n<seg id="2"></seg>\n</p>\n</doc>\n</srcset>\n'
    )
    assert list(records(path)) == [b"AT&T grew.", b""]


def test_pairs_of_several_parts_follow_one_another(tmp_path):
    parts = []
    for name, lines in (("a", [b"1", b"2"]), ("b", [b"3"])):
        for language in ("en", "fr"):
            (tmp_path / f"{name}.{language}").write_bytes(
                b"".join(line + language.encode() + b"\n" for line in lines)
            )
        parts.append(ParallelFiles(tmp_path / f"{name}.en", tmp_path / f"{name}.fr"))
    assert list(read_pairs(parts)) == [(b"1en", b"1fr"), (b"2en", b"2fr"), (b"3en", b"3fr")]


def test_sides_with_different_line_counts_are_an_error_with_both_counts(tmp_path):
    (tmp_path / "a.en").write_bytes(b"1\n2\n3\n")
    (tmp_path / "a.fr").write_bytes(b"1\n2\n")
    with pytest.raises(DataError, match=r"a\.en has 3 lines but .*a\.fr has 2"):
        check_aligned(ParallelFiles(tmp_path / "a.en", tmp_path / "a.fr"))


def test_a_missing_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(DataError, match=f"missing file {tmp_path / 'train.en.gz'}"):
        require_file(tmp_path / "train.en.gz", "hint")


def test_a_byte_order_mark_is_dropped_at_the_start_of_a_file_and_kept_as_text_elsewhere(tmp_path):
    mark = codecs.BOM_UTF8
    path = tmp_path / "text.en"
    path.write_bytes(mark + b"one\n" + mark + b"two\nthree " + mark + b"\n")
    assert list(records(path)) == [b"one", mark + b"two", b"three " + mark]


def refusal(tmp_path, english: bytes, french: bytes, encoding: str = "utf-8") -> str:
    """The error that checking a.en and a.fr, of these bytes, read in ``encoding`` ends in."""
    (tmp_path / "a.en").write_bytes(english)
    (tmp_path / "a.fr").write_bytes(french)
    with pytest.raises(DataError) as raised:
        check_aligned(ParallelFiles(tmp_path / "a.en", tmp_path / "a.fr"), encoding)
    return str(raised.value)


def test_a_line_that_does_not_decode_is_an_error_naming_the_file_the_line_and_the_byte(tmp_path):
    french = "un\ndeux\n".encode() + "trois élèves\n".encode("latin-1")
    assert refusal(tmp_path, b"one\ntwo\nthree\n", french) == (
        f"{tmp_path / 'a.fr'} is not UTF-8 text: line 3, byte 7 is 0xe9; convert the file to "
        "UTF-8 (iconv -f ITS-ENCODING -t utf-8), or name its encoding with --encoding "
        "(--encoding latin-1, say)"
    )


def test_files_in_the_encoding_given_decode(tmp_path):
    (tmp_path / "a.en").write_bytes(b"one\n")
    (tmp_path / "a.fr").write_bytes("élève\n".encode("latin-1"))
    assert check_aligned(ParallelFiles(tmp_path / "a.en", tmp_path / "a.fr"), "latin-1") == 1


def test_a_cp1252_file_read_as_latin1_is_an_error_naming_the_control_character(tmp_path):
    """Its apostrophe (0x92) would have become a token of its own, its ellipsis (0x85) a space."""
    french = "élève\nl’homme…\n".encode("cp1252")
    assert refusal(tmp_path, b"one\n", french, "latin-1") == (
        f"{tmp_path / 'a.fr'} is not latin-1 text: line 2, character 2 is U+0092, a control "
        "character in latin-1; name the file's encoding with --encoding (cp1252 for a file from "
        "Windows), or convert the file to UTF-8 (iconv -f ITS-ENCODING -t utf-8)"
    )


def test_gzip_data_in_a_file_not_named_gz_is_refused_saying_to_rename_it(tmp_path):
    """Read as text, its bytes were an encoding to name: latin-1, said the error, then cp1252."""
    french = gzip.compress("le café\n".encode())
    assert refusal(tmp_path, b"the cafe\n", french) == (
        f"{tmp_path / 'a.fr'} is gzip-compressed (it starts with gzip's bytes 1f 8b), but its name "
        f"does not end in .gz: rename it {tmp_path / 'a.fr'}.gz, or decompress it (gunzip -c)"
    )


def test_a_file_compressed_twice_is_refused_saying_to_decompress_it_once(tmp_path):
    path = tmp_path / "a.fr.gz"
    path.write_bytes(gzip.compress(gzip.compress(b"le cafe\n")))
    (tmp_path / "a.en").write_bytes(b"the cafe\n")
    with pytest.raises(DataError, match=r"a\.fr\.gz is gzip-compressed twice"):
        check_aligned(ParallelFiles(tmp_path / "a.en", path))


def test_a_utf16_file_with_its_byte_order_mark_is_refused_in_the_encoding_suggested_for_it(
    tmp_path,
):
    """Read as Latin-1 (as the error of a file that is not UTF-8 suggests), its œ became S."""
    french = "le cœur\n".encode("utf-16")  # with its mark, as Notepad saves "Unicode" text
    assert refusal(tmp_path, b"the heart\n", french, "latin-1") == (
        f"{tmp_path / 'a.fr'} is UTF-16 text (it starts with UTF-16's byte-order mark), not "
        "latin-1: its letters would be read as others; convert the file to UTF-8 (iconv -f "
        "utf-16 -t utf-8)"
    )


def test_a_utf16_file_without_a_byte_order_mark_is_refused_though_it_decodes_as_utf8(tmp_path):
    """Its NULs deleted by Moses, its œ became S, and the NUL after its last line end one more
    sentence."""
    french = "le cœur\n".encode("utf-16-le")
    assert refusal(tmp_path, b"the heart\n\n", french) == (
        f"{tmp_path / 'a.fr'} is UTF-16 or UTF-32 text (line 1, byte 2 is 0x00, as beside ASCII "
        "letters), not UTF-8: its letters would be read as others; convert the file to UTF-8 "
        "(iconv -f utf-16le -t utf-8, or from the encoding it is in)"
    )


def test_a_nul_byte_after_the_first_line_is_left_to_the_tokenizer(tmp_path):
    (tmp_path / "a.en").write_bytes(b"one\ntw\0o\n")
    (tmp_path / "a.fr").write_bytes(b"un\ndeux\n")
    assert check_aligned(ParallelFiles(tmp_path / "a.en", tmp_path / "a.fr")) == 2


def test_a_utf8_file_read_in_an_encoding_that_would_misread_it_is_an_error(tmp_path):
    english, french = "the café\n".encode(), "le café\n".encode("latin-1")
    assert refusal(tmp_path, english, french, "latin-1") == (
        f"{tmp_path / 'a.en'} is UTF-8 (line 1 is not ASCII), which --encoding latin-1 would "
        "misread (é as Ã©): convert the files that are not UTF-8 (iconv -f latin-1 -t utf-8) and "
        "leave --encoding out"
    )


def test_a_utf8_file_whose_bytes_read_as_control_characters_is_told_to_be_utf8(tmp_path):
    """’ is E2 80 99 in UTF-8: U+0080 and U+0099 in Latin-1."""
    (tmp_path / "a.en").write_bytes(b"one\n")
    (tmp_path / "a.fr").write_bytes("l’homme\n".encode())
    with pytest.raises(DataError, match=r"a\.fr is UTF-8 \(line 1 is not ASCII\)"):
        check_aligned(ParallelFiles(tmp_path / "a.en", tmp_path / "a.fr"), "latin-1")


def test_a_utf8_file_read_as_utf8_under_another_name_is_not_taken_for_a_misreading(tmp_path):
    for side in ("en", "fr"):
        (tmp_path / f"a.{side}").write_bytes("le café\n".encode())
    for name in ("UTF8", "utf-8-sig"):
        assert check_aligned(ParallelFiles(tmp_path / "a.en", tmp_path / "a.fr"), name) == 1


def test_a_wmt_sgml_file_not_named_sgm_is_refused_saying_how_to_take_its_segments(tmp_path):
    """Read line by line, its markup made test sentences (`&lt; seg id = ...`), without a word."""
    english = b'<srcset setid="newstest2014" srclang="any">\n<seg id="1">Hello.</seg>\n</srcset>\n'
    french = b'<refset setid="newstest2014" trglang="fr">\n<seg id="1">Salut.</seg>\n</refset>\n'
    path = tmp_path / "a.en"
    assert refusal(tmp_path, english, french) == (
        f"{path} is a WMT SGML file (its first line opens <srcset>), not one sentence per line: "
        "its markup would be read as sentences; give the text of its segments, one per line "
        f"(sed -n 's/.*<seg[^>]*>\\(.*\\)<\\/seg>.*/\\1/p' {path} > TEXT)"
    )
