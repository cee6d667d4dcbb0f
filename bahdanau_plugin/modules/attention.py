"""The alignment model of Section 3.1 and Appendix A.1.2 (soft attention)."""

from typing import Tuple

import torch
from torch import Tensor, nn

from .full_precision import FullPrecisionModule, in_own_precision
from .initialization import ALIGNMENT_STD, normal_, zero_


class BahdanauAttention(FullPrecisionModule):
    """a(s_{i-1}, h_j) = v_a^T tanh(W_a s_{i-1} + U_a h_j), normalised over source positions j.

    It computes in float32 whatever precision the rest of the model runs in (full_precision.py):
    its caller gives it h_j in that precision (``own_precision``, once per sentence) and casts the
    context back.
    """

    def __init__(self, state_dim: int, annotation_dim: int, attention_dim: int):
        super().__init__()
        self.state_projection = nn.Linear(state_dim, attention_dim, bias=False)  # W_a
        self.annotation_projection = nn.Linear(annotation_dim, attention_dim)  # U_a
        self.energy = nn.Linear(attention_dim, 1, bias=False)  # v_a
        normal_(self.state_projection.weight, ALIGNMENT_STD)
        normal_(self.annotation_projection.weight, ALIGNMENT_STD)
        zero_(self.annotation_projection.bias)
        zero_(self.energy.weight)

    @in_own_precision
    def project_annotations(self, annotations: Tensor) -> Tensor:
        """U_a h_j does not depend on i: computed once per sentence (Appendix A.1.2, footnote 3)."""
        return self.annotation_projection(annotations)

    @in_own_precision
    def forward(
        self,
        state: Tensor,
        annotations: Tensor,
        projected_annotations: Tensor,
        padding_mask: Tensor,
    ) -> Tuple[Tensor, Tensor]:
        """state s_{i-1}: B x k x n, k states per sentence (1, or the beams of a beam search);
        annotations h_j: B x S x 2n, U_a h_j: B x S x n', the padding mask: B x S. Returns the
        context c_i (B x k x 2n) and alpha_i (B x k x S), in the alignment model's precision."""
        projected_state = self.state_projection(state)  # W_a s_{i-1}: B x k x n'
        energies = self.energies(projected_state, projected_annotations)  # e_ij, Eq. (6): B x k x S
        energies = energies.masked_fill(padding_mask.unsqueeze(1), float("-inf"))
        alpha = torch.softmax(energies, dim=2)  # alpha_ij, Eq. (6)
        context = torch.bmm(alpha, annotations)  # c_i, Eq. (5): the k states' in one product
        return context, alpha

    def energies(self, projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), given W_a s_{i-1} (B x k x n') and U_a h_j
        (B x S x n'): B x k x S."""
        hidden = torch.tanh(projected_state.unsqueeze(2) + projected_annotations.unsqueeze(1))
        return self.energy(hidden).squeeze(3)
