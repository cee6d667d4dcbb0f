"""The alignment model of Section 3.1 and Appendix A.1.2 (soft attention)."""

import contextlib
from typing import Tuple

import torch
from torch import Tensor, nn

from . import fast_path
from .initialization import ALIGNMENT_STD, normal_, zero_


class BahdanauAttention(nn.Module):
    """a(s_{i-1}, h_j) = v_a^T tanh(W_a s_{i-1} + U_a h_j), normalised over source positions j.

    It computes, and keeps its parameters and their gradients, in float32 (float64 if the model is)
    whatever precision the rest of the model runs in: its caller gives it the annotations in that
    precision (``own_precision``, once per sentence) and casts the context back. At the paper's
    initialization (W_a, U_a ~ N(0, 0.001^2), v_a = 0) W_a s_{i-1} + U_a h_j is about 1e-4 to 1e-3
    and the gradient of v_a about 1e-10: in bfloat16 the energies round to noise, in float16 that
    gradient underflows, and the alignment would not learn (docs/precision.md).
    """

    def __init__(self, state_dim: int, annotation_dim: int, attention_dim: int):
        super().__init__()
        self.state_projection = fast_path.layer(
            nn.Linear, state_dim, attention_dim, bias=False
        )  # W_a
        self.annotation_projection = fast_path.layer(
            nn.Linear, annotation_dim, attention_dim
        )  # U_a
        self.energy = fast_path.layer(nn.Linear, attention_dim, 1, bias=False)  # v_a
        normal_(self.state_projection.weight, ALIGNMENT_STD)
        normal_(self.annotation_projection.weight, ALIGNMENT_STD)
        zero_(self.annotation_projection.bias)
        zero_(self.energy.weight)

    def own_precision(self, annotations: Tensor) -> Tensor:
        """h_j in the precision the alignment model computes in: under half precision a copy, made
        once per sentence (as U_a h_j is) rather than at every target position, where each copy
        would also be kept for the backward pass."""
        return annotations.to(self.energy.weight.dtype)

    def project_annotations(self, annotations: Tensor) -> Tensor:
        """U_a h_j does not depend on i: computed once per sentence (footnote 3 of Appendix A.1.2),
        from the annotations in the alignment model's precision (``own_precision``)."""
        with _autocast_off(annotations):
            return self.annotation_projection(annotations)

    def forward(
        self,
        state: Tensor,
        annotations: Tensor,
        projected_annotations: Tensor,
        padding_mask: Tensor,
    ) -> Tuple[Tensor, Tensor]:
        """state s_{i-1}: (B k) x n, k rows per sentence (the beams of a beam search, 1 outside
        one: ``beam_rows``); annotations h_j (B x S x 2n) in the alignment model's precision
        (``own_precision``), U_a h_j (B x S x n') and the padding mask (B x S): one row per
        sentence. Returns context c_i ((B k) x 2n) and alpha_i ((B k) x S) in that precision."""
        with _autocast_off(state):
            projected_state = self.state_projection(state.to(annotations.dtype))  # W_a s_{i-1}
            projected_state = projected_state.unflatten(0, (annotations.size(0), -1))
            energies = self.energies(projected_state, projected_annotations)  # e_ij, Eq. (6)
            energies = energies.masked_fill(padding_mask.unsqueeze(1), float("-inf"))
            alpha = torch.softmax(energies, dim=2)  # alpha_ij, Eq. (6)
            context = torch.bmm(alpha, annotations)  # c_i, Eq. (5): the k beams' in one product
        return context.flatten(0, 1), alpha.flatten(0, 1)

    def energies(self, projected_state: Tensor, projected_annotations: Tensor) -> Tensor:
        """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), given W_a s_{i-1} (B x k x n') and U_a h_j
        (B x S x n'): B x k x S."""
        hidden = torch.tanh(projected_state.unsqueeze(2) + projected_annotations.unsqueeze(1))
        return self.energy(hidden).squeeze(3)

    def _apply(self, fn, recurse=True):
        """Conversions to half precision (model.half(), .bfloat16(), .to(dtype); fairseq's --fp16
        and --bf16) leave these parameters as they are, bit for bit; moves between devices and
        conversions to other precisions apply as usual."""
        return super()._apply(_keeping_full_precision(fn), recurse)


HALF_PRECISIONS = (torch.float16, torch.bfloat16)


def _keeping_full_precision(fn):
    """fn, except that a tensor it would turn into half precision keeps its values and precision
    (converting and converting back would round them: a weight of 1e-8 would become 0)."""

    def apply(tensor: Tensor) -> Tensor:
        converted = fn(tensor)
        if converted.dtype in HALF_PRECISIONS and tensor.dtype not in HALF_PRECISIONS:
            return tensor.to(converted.device)
        return converted

    return apply


def _autocast_off(tensor: Tensor):
    """Turns autocast off where it is on (entering torch.autocast costs a few microseconds a
    step)."""
    device = tensor.device.type
    if not torch.is_autocast_enabled(device):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, enabled=False)
