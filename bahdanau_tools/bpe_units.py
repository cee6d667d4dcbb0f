"""Whether a data-bin is in BPE units (subword-nmt's), and whether the BPE codes a tool was given
fit it: text reaches a model segmented as its dictionary is only with the codes of its data."""

from pathlib import Path
from typing import Optional

from fairseq.data import Dictionary

BPE_CONTINUATION = "@@"  # subword-nmt's mark of a piece the next one continues: "ter@@ rier"


def holds_bpe_units(dictionary: Dictionary) -> bool:
    """Whether a dictionary is of BPE units, subword-nmt's: those that the next one continues end
    in @@, which a word hardly ever does."""
    return any(symbol.endswith(BPE_CONTINUATION) for symbol in dictionary.symbols)


def codes_mismatch(
    dictionary: Dictionary,
    dictionary_file: Path,
    codes: Optional[Path],
    give: str = "--bpe-codes",
    not_found: str = "",
) -> Optional[str]:
    """What is wrong with the codes given (``codes``, None for none) for the data-bin whose
    dictionary this is (read from ``dictionary_file``), if anything; ``give``: the options that
    take codes, ``not_found``: where the tool looked for them. Without codes, words that data in
    BPE units holds only in pieces read as <unk> (and translations stay in pieces); codes beside
    data in words split every word into pieces it does not hold: another data's codes, or the
    wrong data-bin."""
    data, bpe = dictionary_file.parent, holds_bpe_units(dictionary)
    if bpe and codes is None:
        return (
            f"the data-bin {data} holds BPE units (entries of {dictionary_file} end in @@), and no "
            f"BPE codes were {f'found at {not_found}' if not_found else 'given'}: give the codes "
            f"it was segmented with, {give} (bahdanau-prepare-data writes OUT/bpe.codes)"
        )
    if codes is not None and not bpe:
        return (
            f"--bpe-codes {codes} given, but the data-bin {data} holds no BPE units (no entry of "
            f"{dictionary_file} ends in @@): give the --data segmented with those codes, or no "
            f"{give}"
        )
    return None
