"""Weights a batch does not use, and fairseq's default DDP backend: its one workaround, here.

A batch whose targets are one token each (end of sentence: fairseq-preprocess keeps empty target
lines) never needs s_1, so the decoder's GRU computes nothing and its weights would get no gradient
at all. fairseq's default DDP backend (pytorch_ddp, which does not search for unused parameters)
then fails or hangs waiting for them. Their true gradient is 0: adding 0 times their sum to the
output gives it to them, and changes no value.
"""

from typing import Iterable

import torch
from torch import Tensor, nn


def in_the_output(output: Tensor, weights: Iterable[nn.Parameter], target_positions: int) -> Tensor:
    """``output``, depending on ``weights`` through 0 where a training batch of one target position
    leaves them unused (decoding one position at a time, its own path, never takes gradients)."""
    if target_positions != 1 or not torch.is_grad_enabled():
        return output
    return output + 0.0 * sum(weight.sum() for weight in weights)
