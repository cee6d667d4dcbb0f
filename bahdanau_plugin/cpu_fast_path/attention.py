"""The alignment energies of Eq. (6), computed faster on CPU in float32, with the same values."""

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from ..modules.attention import BahdanauAttention
from .measured_choice import CHOOSER, probe
from .onednn_linear import row_class, runs_in_cpu_float32


class AlignmentEnergies(torch.autograd.Function):
    """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), given W_a s_{i-1} (B x k x n', k beams per
    sentence), U_a h_j (B x S x n') and v_a: B x k x S.

    Two departures from the plain formula, both exact in float32 (not in half precision, where
    sigmoid(2x) near 1/2 cannot resolve the x of the paper's initialization: docs/precision.md):
    - tanh(x) = 2 sigmoid(2x) - 1, so e_ij = 2 v_a^T sigmoid(2x) - sum(v_a): torch's CPU tanh was
      measured about 10 times slower than its sigmoid (docs/performance.md), and x is the largest
      tensor of every decoder step (used where measured faster: ``sigmoid_identity_is_faster``);
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
        grad_v = 2 * torch.einsum("bks,bksn->n", grad_energies, gates) - grad_energies.sum()
        # d e_ij / d x = 2 v_a * 2 sigmoid(2x) (1 - sigmoid(2x))
        grad_x = gates.sub_(gates * gates).mul_(4 * v).mul_(grad_energies.unsqueeze(3))
        return grad_x.sum(dim=2), grad_x.sum(dim=1), grad_v

    @staticmethod
    def _gates(projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        x = projected_state.unsqueeze(2) + projected_annotations.unsqueeze(1)
        return torch.sigmoid_(x.mul_(2))


def plain_energies(projected_state: Tensor, projected_annotations: Tensor, v: Tensor) -> Tensor:
    """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), as BahdanauAttention computes it."""
    x = projected_state.unsqueeze(2) + projected_annotations.unsqueeze(1)
    return torch.matmul(torch.tanh(x), v)


def sigmoid_identity_is_faster(projected_annotations: Tensor, training: bool) -> bool:
    """Whether the energies (forward and, when ``training``, backward) are faster through the
    sigmoid identity than through torch.tanh for alignment vectors of this size, here (measured
    once, on at most 32 sentences of 16 source positions)."""
    rows, sources, attention_dim = projected_annotations.shape

    def probes():
        generator = torch.Generator().manual_seed(0)
        shape = (min(rows, 32), min(sources, 16))
        inputs = [
            torch.rand(*size, generator=generator, requires_grad=training)
            for size in (shape[:1] + (1, attention_dim), shape + (attention_dim,), (attention_dim,))
        ]

        def run(energies):
            return probe(lambda: energies(*inputs), inputs, training)

        return run(AlignmentEnergies.apply), run(plain_energies)

    passes = "forward and backward" if training else "forward"
    choice = ("energies", attention_dim, "x", row_class(rows * sources), "positions,", passes)
    return CHOOSER.fast(choice, probes, names=("2 sigmoid(2x) - 1", "torch.tanh"))


class FastBahdanauAttention(BahdanauAttention):
    """BahdanauAttention, with ``AlignmentEnergies`` where it applies and is faster (the fast path
    swaps it in)."""

    def energies(self, projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        v = self.energy.weight.view(-1)
        training = torch.is_grad_enabled() and v.requires_grad
        if runs_in_cpu_float32(
            projected_state, projected_annotations, v
        ) and sigmoid_identity_is_faster(projected_annotations, training):
            return AlignmentEnergies.apply(projected_state, projected_annotations, v)
        return super().energies(projected_state, projected_annotations)
