"""The alignment model of Section 3.1 and Appendix A.1.2 (soft attention)."""

from typing import Tuple

import torch
from fairseq import utils
from torch import Tensor, nn

from .initialization import ALIGNMENT_STD, normal_, zero_
from .linear import Linear


class BahdanauAttention(nn.Module):
    """a(s_{i-1}, h_j) = v_a^T tanh(W_a s_{i-1} + U_a h_j), normalised over source positions j."""

    def __init__(self, state_dim: int, annotation_dim: int, attention_dim: int):
        super().__init__()
        self.state_projection = Linear(state_dim, attention_dim, bias=False)  # W_a
        self.annotation_projection = Linear(annotation_dim, attention_dim)  # U_a
        self.energy = Linear(attention_dim, 1, bias=False)  # v_a
        normal_(self.state_projection.weight, ALIGNMENT_STD)
        normal_(self.annotation_projection.weight, ALIGNMENT_STD)
        zero_(self.annotation_projection.bias)
        zero_(self.energy.weight)

    def project_annotations(self, annotations: Tensor) -> Tensor:
        """U_a h_j does not depend on i: computed once per sentence (footnote 3 of Appendix A.1.2)."""
        return self.annotation_projection(annotations)

    def forward(
        self,
        state: Tensor,
        annotations: Tensor,
        projected_annotations: Tensor,
        padding_mask: Tensor,
    ) -> Tuple[Tensor, Tensor]:
        """state s_{i-1}: B x n; annotations h_j: B x S x 2n; returns context c_i and alpha_i."""
        pre_activation = self.state_projection(state).unsqueeze(1) + projected_annotations
        energies = self._energies(pre_activation)  # e_ij, Eq. (6)
        energies = energies.masked_fill(padding_mask, float("-inf"))
        alpha = utils.softmax(energies, dim=1).type_as(energies)  # alpha_ij, Eq. (6)
        context = torch.bmm(alpha.unsqueeze(1), annotations).squeeze(1)  # c_i, Eq. (5)
        return context, alpha

    def _energies(self, pre_activation: Tensor) -> Tensor:
        """v_a^T tanh(x), computed as 2 v_a^T sigmoid(2x) - sum(v_a) since tanh(x) = 2 sigmoid(2x) - 1.

        The same value, but torch's CPU tanh is about 5 to 10 times slower than its sigmoid
        (measured: docs/performance.md), and this B x S x n' tensor is the largest of every step.
        """
        gates = torch.sigmoid(pre_activation.mul_(2))
        return 2 * self.energy(gates).squeeze(2) - self.energy.weight.sum()
