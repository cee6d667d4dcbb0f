"""Appendix B.1 of Bahdanau et al. (2015): how every weight starts."""

import torch
from torch import nn

WEIGHT_STD = 0.01
ALIGNMENT_STD = 0.001


def normal_(weight: torch.Tensor, std: float = WEIGHT_STD) -> None:
    """Gaussian N(0, std^2): 0.01 for ordinary weights, 0.001 for W_a and U_a."""
    nn.init.normal_(weight, mean=0.0, std=std)


def orthogonal_blocks_(weight: torch.Tensor, block_size: int) -> None:
    """Random orthogonal recurrent matrices; stacked gate matrices [U_z; U_r; U] get one each."""
    for block in weight.split(block_size, dim=0):
        nn.init.orthogonal_(block)


def zero_(parameter: torch.Tensor) -> None:
    nn.init.zeros_(parameter)


def build_embedding(num_embeddings: int, embed_dim: int, padding_idx: int) -> nn.Embedding:
    """Word embedding matrix E, N(0, 0.01^2), with an all-zero padding row."""
    embedding = nn.Embedding(num_embeddings, embed_dim, padding_idx=padding_idx)
    normal_(embedding.weight)
    with torch.no_grad():
        embedding.weight[padding_idx].zero_()
    return embedding
