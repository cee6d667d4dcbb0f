"""The alignment model of Section 3.1 and Appendix A.1.2 (soft attention)."""

import contextlib
from typing import Tuple

import torch
from torch import Tensor, nn

from .initialization import ALIGNMENT_STD, normal_, zero_


class BahdanauAttention(nn.Module):
    """a(s_{i-1}, h_j) = v_a^T tanh(W_a s_{i-1} + U_a h_j), normalised over source positions j.

    It computes, and keeps its parameters and their gradients, in float32 (float64 if the model is)
    whatever precision the rest of the model runs in, and returns the context in the annotations'
    precision. At the paper's initialization (W_a, U_a ~ N(0, 0.001^2), v_a = 0)
    W_a s_{i-1} + U_a h_j is about 1e-4 to 1e-3 and the gradient of v_a about 1e-10: in bfloat16
    the energies round to noise, in float16 that gradient underflows, and the alignment would not
    learn (docs/precision.md).
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

    def project_annotations(self, annotations: Tensor) -> Tensor:
        """U_a h_j does not depend on i: computed once per sentence (footnote 3 of Appendix
        A.1.2)."""
        with _autocast_off(annotations):
            return self.annotation_projection(annotations.to(self.energy.weight.dtype))

    def forward(
        self,
        state: Tensor,
        annotations: Tensor,
        projected_annotations: Tensor,
        padding_mask: Tensor,
    ) -> Tuple[Tensor, Tensor]:
        """state s_{i-1}: B x n; annotations h_j: B x S x 2n; returns context c_i and alpha_i."""
        dtype = self.energy.weight.dtype
        with _autocast_off(state):
            projected_state = self.state_projection(state.to(dtype))  # W_a s_{i-1}
            energies = self.energies(projected_state, projected_annotations)  # e_ij, Eq. (6)
            energies = energies.masked_fill(padding_mask, float("-inf"))
            alpha = torch.softmax(energies, dim=1)  # alpha_ij, Eq. (6)
            context = torch.bmm(alpha.unsqueeze(1), annotations.to(dtype)).squeeze(
                1
            )  # c_i, Eq. (5)
        return context.to(annotations.dtype), alpha

    def energies(self, projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), given W_a s_{i-1} (B x n') and U_a h_j
        (B x S x n')."""
        return self.energy(
            torch.tanh(projected_state.unsqueeze(1) + projected_annotations)
        ).squeeze(2)

    def _apply(self, fn, recurse=True):
        """Conversions to half precision (model.half(), fairseq's --fp16 and --bf16) leave these
        parameters in float32; moves between devices and other conversions apply as usual."""
        return super()._apply(lambda tensor: _at_least_float32(fn(tensor)), recurse)


def _at_least_float32(tensor: Tensor) -> Tensor:
    return tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor


def _autocast_off(tensor: Tensor):
    """Turns autocast off where it is on (entering torch.autocast costs a few microseconds a
    step)."""
    device = tensor.device.type
    if not torch.is_autocast_enabled(device):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, enabled=False)
