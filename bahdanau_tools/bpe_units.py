"""Whether a data-bin is in BPE units (subword-nmt's), and whether the BPE codes a tool was given
fit it: text reaches a model segmented as its dictionary is only with the codes of its data."""

import re
from pathlib import Path
from typing import List, Optional

from fairseq.data import Dictionary
from subword_nmt import apply_bpe

from bahdanau_plugin.subword_nmt_codes import read_codes

BPE_CONTINUATION = "@@"  # subword-nmt's mark of a piece the next one continues: "ter@@ rier"
END_OF_WORD = "</w>"  # subword-nmt's mark, in the codes, of a merge that ends a word: "e r</w>"
# the symbols fairseq-preprocess's --padding-factor adds to a dictionary, which no text holds
PADDING_SYMBOL = re.compile(r"madeupword\d{4}")


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
    unmade = units_no_merge_makes(dictionary, codes) if codes is not None else []
    if unmade:
        return (
            f"--bpe-codes {codes} are not the codes the data-bin {data} was segmented with: "
            f"no merge of them makes {len(unmade)} of the units of {dictionary_file} "
            f"({', '.join(unmade[:3])}{', ...' if len(unmade) > 3 else ''}), so text would be "
            "split into other pieces than the model learned, "
            f"many of them <unk>: give the codes the data was segmented with, {give} "
            "(bahdanau-prepare-data writes OUT/bpe.codes)"
        )
    return None


def units_no_merge_makes(dictionary: Dictionary, codes: Path) -> List[str]:
    """The dictionary's units of more than one character that no merge of the codes makes. Every
    such unit of text segmented with the codes is one that a merge made (subword-nmt starts from
    characters), so with the data's own codes there is none; with another corpus's codes, about
    a fifth of them (Multi30k halves, 300 merges each: 58 of 291)."""
    merges = read_codes(apply_bpe, str(codes), BPE_CONTINUATION).bpe_codes
    made = {(left + right).replace(END_OF_WORD, "") for left, right in merges}
    units = (
        symbol.removesuffix(BPE_CONTINUATION)
        for symbol in dictionary.symbols[dictionary.nspecial :]
    )
    return [
        unit
        for unit in units
        if len(unit) > 1 and unit not in made and not PADDING_SYMBOL.fullmatch(unit)
    ]
