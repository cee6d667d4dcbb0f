"""Beam search reorders the rows of the encoder output and of the decoder's cache at every step.

A row only moves among the beams of its own sentence, and those beams hold identical copies of
everything computed from the source (h_j, U_a h_j, the padding mask): such a reorder need only
select what differs between beams (the decoder state s_i) and can share the rest. Each dict of
rows carries ``SENTENCES``, the sentence of every row, to tell.
"""

from typing import Any, Collection, Dict

import torch
from torch import Tensor

SENTENCES = "sentences"
# Set on a dict of rows once a reorder that kept its row count was seen to move rows only among
# the beams of their sentence. Only a beam search reorders rows again and again, and all of its
# reorders that keep the count do so (finished sentences leave with all their beams, changing the
# count), so the later ones are not checked: a check reads the new order on the host, which on a
# GPU waits for every kernel queued before it, twice per step (encoder output and decoder cache).
CHECKED = "beams_checked"


def keeps_sentences(rows: Dict[str, Any], new_order: Tensor) -> bool:
    """Whether reordering ``rows`` by ``new_order`` leaves every row with the sentence it had."""
    sentences = rows[SENTENCES]
    if new_order.numel() != sentences.numel():
        return False
    if rows.get(CHECKED, False):
        return True
    return torch.equal(sentences.index_select(0, new_order), sentences)


def reorder_rows(
    rows: Dict[str, Any], new_order: Tensor, per_row: Collection[str] = ()
) -> Dict[str, Any]:
    """``rows`` reordered by ``new_order``: while every row keeps its sentence, only the entries
    named in ``per_row`` are selected and the others are shared; otherwise every tensor is."""
    shared = keeps_sentences(rows, new_order)
    reordered = {
        key: value.index_select(0, new_order)
        if isinstance(value, Tensor) and not (shared and key not in per_row)
        else value
        for key, value in rows.items()
    }
    if shared:
        reordered[CHECKED] = True
    return reordered
