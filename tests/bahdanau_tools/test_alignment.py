"""The soft alignment of a hypothesis of fairseq's generate(): target x source, padding dropped."""

import torch

from bahdanau_tools.alignment import soft_alignment

from ..support.words import attention


def test_soft_alignment_drops_the_left_padding_of_a_batch_and_puts_target_words_on_rows():
    alpha = attention(4, 3)  # target x source
    padded = torch.cat(
        [torch.zeros(2, 4), alpha.t()]
    )  # fairseq's source x target, two padding columns first
    assert torch.equal(soft_alignment({"attention": padded}, source_length=3), alpha)


def test_soft_alignment_is_none_for_a_model_without_attention():
    assert soft_alignment({"attention": torch.empty(0)}, source_length=3) is None
