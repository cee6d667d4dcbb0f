"""bpe_units.py: a dictionary whose pieces end in @@ is of BPE units, and BPE codes fit a data-bin
in BPE units only; what is wrong is said naming the data-bin, its dictionary and the options."""

from pathlib import Path

from fairseq.data import Dictionary

from bahdanau_tools.bpe_units import codes_mismatch, holds_bpe_units

DICTIONARY_FILE = Path("prepared/data-bin/dict.en.txt")


def dictionary_of(*symbols: str) -> Dictionary:
    dictionary = Dictionary()
    for symbol in symbols:
        dictionary.add_symbol(symbol)
    return dictionary


PIECES, WORDS = dictionary_of("a", "Ter@@", "ri@@", "er"), dictionary_of("a", "terrier", "runs")


def test_a_dictionary_with_pieces_ending_in_at_at_is_of_bpe_units():
    assert holds_bpe_units(PIECES)


def test_a_dictionary_of_words_is_not_of_bpe_units():
    assert not holds_bpe_units(WORDS)


def codes_file(folder: Path, *merges: str) -> Path:
    codes = folder / "bpe.codes"
    codes.write_text("#version: 0.2\n" + "".join(f"{merge}\n" for merge in merges), "utf-8")
    return codes


def test_codes_that_make_every_unit_or_none_for_data_in_words_fit(tmp_path):
    codes = codes_file(tmp_path, "T e", "Te r", "r i", "e r</w>")  # Ter@@ ri@@ er
    assert codes_mismatch(PIECES, DICTIONARY_FILE, codes) is None
    assert codes_mismatch(WORDS, DICTIONARY_FILE, None) is None


def test_the_codes_a_data_bin_was_prepared_with_make_every_one_of_its_units(bpe_prepared):
    data_bin = bpe_prepared / "data-bin"
    for language in ("en", "fr"):
        dictionary = data_bin / f"dict.{language}.txt"
        codes = bpe_prepared / "bpe.codes"
        assert codes_mismatch(Dictionary.load(str(dictionary)), dictionary, codes) is None


def test_codes_of_another_data_that_make_none_of_some_units_are_refused(tmp_path):
    """They split text into other pieces than the dictionary's, many of them <unk>: the tools
    translated so without a word."""
    codes = codes_file(tmp_path, "T e", "Te r", "i e", "e r</w>")  # no "r i"
    assert codes_mismatch(PIECES, DICTIONARY_FILE, codes) == (
        f"--bpe-codes {codes} are not the codes the data-bin prepared/data-bin was segmented "
        "with: no merge of them makes 1 of the units of prepared/data-bin/dict.en.txt (ri), so "
        "text would be split into other pieces than the model learned, many of them <unk>: give "
        "the codes the data was segmented with, --bpe-codes (bahdanau-prepare-data writes "
        "OUT/bpe.codes)"
    )


def test_data_in_bpe_units_without_codes_names_the_options_that_take_them_and_where_looked():
    assert codes_mismatch(PIECES, DICTIONARY_FILE, None, give="--bpe subword_nmt --bpe-codes") == (
        "the data-bin prepared/data-bin holds BPE units (entries of prepared/data-bin/dict.en.txt "
        "end in @@), and no BPE codes were given: give the codes it was segmented with, --bpe "
        "subword_nmt --bpe-codes (bahdanau-prepare-data writes OUT/bpe.codes)"
    )
    assert "no BPE codes were found at prepared/bpe.codes:" in codes_mismatch(
        PIECES, DICTIONARY_FILE, None, not_found="prepared/bpe.codes"
    )


def test_codes_for_data_in_words_are_another_data_s():
    assert codes_mismatch(WORDS, DICTIONARY_FILE, Path("bpe.codes")) == (
        "--bpe-codes bpe.codes given, but the data-bin prepared/data-bin holds no BPE units (no "
        "entry of prepared/data-bin/dict.en.txt ends in @@): give the --data segmented with those "
        "codes, or no --bpe-codes"
    )
