"""Beam search reorders the rows of the encoder output and of the decoder's cache at every step.

A row only moves among the beams of its own sentence, and those beams hold identical copies of
everything computed from the source (h_j, U_a h_j, the padding mask): such a reorder need only
select what differs between beams (the decoder state s_i) and can share the rest. Each dict of
rows carries ``SENTENCES``, the sentence of every row, to tell.

The tensors of source length (h_j, U_a h_j, the padding mask: B x S x ...) are not copied for the
beams at all. fairseq lays out a beam search's rows sentence by sentence, k beams each, and
expands the encoder output to that layout with one reorder; those tensors keep one row per
sentence instead, and row r of everything else belongs to their row r // k. Their readers
broadcast over the k beams (``beams``). At beam 12 that is 12 times less memory for the largest
tensors of a search, and the context c_i of k beams is one product with its sentence's h_j.
"""

from typing import Any, Collection, Dict, Optional

import torch
from torch import Tensor

SENTENCES = "sentences"
# Set on a dict of rows once a reorder that kept its row count was seen to move rows only among
# the beams of their sentence. Only a beam search reorders rows again and again, and all of its
# reorders that keep the count do so; those that change the count move whole sentences (finished
# sentences leave with all their beams). So the later ones are not checked: a check reads the new
# order on the host, which on a GPU waits for every kernel queued before it, twice per step
# (encoder output and decoder cache). Present, False, from the start (``rows_of``): a search's
# compiled step then sees the same keys at every step.
CHECKED = "beams_checked"


def rows_of(count: int, device: torch.device) -> Dict[str, Any]:
    """What a new dict of ``count`` rows carries of its layout: each row's sentence, unchecked."""
    return {SENTENCES: torch.arange(count, device=device), CHECKED: False}


def beams(rows: int, sentence_rows: Tensor) -> int:
    """k, the rows per sentence, of ``rows`` rows read with a tensor that has one row per
    sentence (1 outside a beam search)."""
    return rows // sentence_rows.size(0)


def keeps_sentences(rows: Dict[str, Any], new_order: Tensor) -> bool:
    """Whether reordering ``rows`` by ``new_order`` leaves every row with the sentence it had."""
    sentences = rows[SENTENCES]
    if new_order.numel() != sentences.numel():
        return False
    if rows.get(CHECKED, False):
        return True
    return torch.equal(sentences.index_select(0, new_order), sentences)


def reorder_rows(
    rows: Dict[str, Any],
    new_order: Tensor,
    per_row: Collection[str] = (),
    per_sentence: Collection[str] = (),
) -> Dict[str, Any]:
    """``rows`` reordered by ``new_order``: while every row keeps its sentence, only the entries
    named in ``per_row`` are selected and the others are shared; otherwise every tensor is, those
    named in ``per_sentence`` (of one row per sentence) by sentence where the new rows are whole
    sentences of k rows each, and by row where they are not."""
    if keeps_sentences(rows, new_order):
        reordered = {
            key: value.index_select(0, new_order) if key in per_row else value
            for key, value in rows.items()
        }
        reordered[CHECKED] = True
        return reordered
    sentence_rows = next(
        (rows[key] for key in per_sentence if isinstance(rows.get(key), Tensor)), None
    )
    k = beams(rows[SENTENCES].numel(), sentence_rows) if sentence_rows is not None else 1
    source_rows = new_order // k  # each new row's row in the per_sentence tensors
    order = sentence_order(rows, source_rows, k)
    reordered = {}
    for key, value in rows.items():
        if not isinstance(value, Tensor):
            reordered[key] = value
        elif key not in per_sentence:
            reordered[key] = value.index_select(0, new_order)
        else:
            reordered[key] = value.index_select(0, order if order is not None else source_rows)
    return reordered


def sentence_order(rows: Dict[str, Any], source_rows: Tensor, k: int) -> Optional[Tensor]:
    """The sentences of the new rows, one per block of k' consecutive rows, if every block is one
    sentence's, where k' is k or, from one row per sentence (k = 1), the expansion to k' beams;
    None where the new rows are not laid out so."""
    count = source_rows.numel()
    new_k = k if k > 1 else max(count // rows[SENTENCES].numel(), 1)
    if count % new_k:
        return None
    blocks = source_rows.view(-1, new_k)
    whole_sentences = (
        new_k == 1
        or (k > 1 and rows.get(CHECKED, False))  # a beam search's: whole sentences (above)
        or torch.equal(blocks, blocks[:, :1].expand_as(blocks))
    )
    return blocks[:, 0] if whole_sentences else None
