"""The alignment model of Section 3.1 and Appendix A.1.2 (soft attention)."""

from typing import Tuple

import torch
from fairseq import utils
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

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
        energies = self._energies(self.state_projection(state), projected_annotations)  # e_ij, Eq. (6)
        energies = energies.masked_fill(padding_mask, float("-inf"))
        alpha = utils.softmax(energies, dim=1).type_as(energies)  # alpha_ij, Eq. (6)
        context = torch.bmm(alpha.unsqueeze(1), annotations).squeeze(1)  # c_i, Eq. (5)
        return context, alpha

    def _energies(self, projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        return AlignmentEnergies.apply(projected_state, projected_annotations, self.energy.weight.view(-1))


class AlignmentEnergies(torch.autograd.Function):
    """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), given W_a s_{i-1} (B x n'), U_a h_j (B x S x n'), v_a.

    Two departures from the plain formula, both exact:
    - tanh(x) = 2 sigmoid(2x) - 1, so e_ij = 2 v_a^T sigmoid(2x) - sum(v_a): torch's CPU tanh is
      about 10 times slower than its sigmoid (docs/performance.md), and x is the largest tensor of
      every decoder step;
    - the B x S x n' activations are recomputed in the backward pass instead of kept for it:
      autograd would keep one per target position, T x B x S x n' floats in all (800 MB for a
      batch of 80 sentences of 50 words at the paper's n' = 1000), where this keeps W_a s_{i-1}.
    """

    @staticmethod
    def forward(ctx, projected_state: Tensor, projected_annotations: Tensor, v: Tensor) -> Tensor:
        ctx.save_for_backward(projected_state, projected_annotations, v)
        gates = AlignmentEnergies._gates(projected_state, projected_annotations)
        return 2 * torch.matmul(gates, v) - v.sum()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_energies: Tensor):
        projected_state, projected_annotations, v = ctx.saved_tensors
        gates = AlignmentEnergies._gates(projected_state, projected_annotations)  # sigmoid(2x)
        grad_energies = grad_energies.to(gates.dtype)  # under autocast the softmax ran in float32
        grad_v = 2 * torch.einsum("bs,bsk->k", grad_energies, gates) - grad_energies.sum()
        # d e_ij / d x = 2 v_a * 2 sigmoid(2x) (1 - sigmoid(2x))
        grad_x = gates.sub_(gates * gates).mul_(4 * v).mul_(grad_energies.unsqueeze(2))
        return grad_x.sum(dim=1).to(projected_state.dtype), grad_x, grad_v.to(v.dtype)

    @staticmethod
    def _gates(projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        return torch.sigmoid_((projected_state.unsqueeze(1) + projected_annotations).mul_(2))
