"""modules/beam_rows.py: tensors of source length keep one row per sentence for all of its beams,
and every row still reads its own sentence's values after any reorder."""

import torch

from bahdanau_plugin.modules.beam_rows import CHECKED, SENTENCES, reorder_rows

SOURCE = [[1.0, 2.0], [3.0, 4.0]]  # one row per sentence (h_j, say)


def _source(sentences=(0, 1)):
    """SOURCE's rows of these sentences, made in the test, on torch's default device (--device)."""
    return torch.tensor([SOURCE[sentence] for sentence in sentences])


def _rows(k, checked=False):
    """Two sentences of k rows each: their source values (one row each) and a value per row."""
    rows = {SENTENCES: torch.arange(2).repeat_interleave(k), "source": _source()}
    rows["per_row"] = torch.arange(2 * k, dtype=torch.float)
    if checked:
        rows[CHECKED] = True
    return rows


def _reorder(rows, new_order):
    return reorder_rows(rows, torch.tensor(new_order), per_sentence=["source"])


def test_expanding_to_beams_keeps_one_row_per_sentence():
    reordered = _reorder(_rows(1), [0, 0, 0, 1, 1, 1])
    assert torch.equal(reordered["source"], _source())
    assert torch.equal(reordered["per_row"], torch.tensor([0.0, 0, 0, 1, 1, 1]))


def test_finished_sentences_leave_with_all_their_beams():
    reordered = _reorder(_rows(3, checked=True), [3, 5, 4])
    assert torch.equal(reordered["source"], _source([1]))
    assert torch.equal(reordered[SENTENCES], torch.tensor([1, 1, 1]))


def test_an_expansion_that_is_not_whole_sentences_copies_the_source_for_every_row():
    reordered = _reorder(_rows(1), [0, 1, 0, 1])
    assert torch.equal(reordered["source"], _source([0, 1, 0, 1]))


def test_a_row_count_that_is_not_whole_sentences_copies_the_source_for_every_row():
    reordered = _reorder(_rows(3, checked=True), [0, 1, 3, 4, 5])
    assert torch.equal(reordered["source"], _source([0, 0, 1, 1, 1]))


def test_rows_crossing_sentences_before_any_check_are_checked_and_copied():
    reordered = _reorder(_rows(3), [0, 3, 1, 4, 2, 5])
    assert torch.equal(reordered["source"], _source([0, 1, 0, 1, 0, 1]))
