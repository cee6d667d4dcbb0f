"""--bpe subword_nmt as the plugin builds it (bahdanau_plugin/subword_nmt_codes.py) segments a
line into the words fairseq reads its pieces as: split at any whitespace, not at spaces alone."""

from argparse import Namespace

import pytest

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
