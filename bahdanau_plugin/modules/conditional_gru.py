"""The decoder's gated recurrent unit of Appendix A.2.2, driven by y_{i-1} and a context c_i."""

import torch
from torch import Tensor, nn

from .initialization import normal_, orthogonal_blocks_, zero_


class ConditionalGRUCell(nn.Module):
    """s_i = (1 - z_i) * s_{i-1} + z_i * tanh(W E y_{i-1} + U [r_i * s_{i-1}] + C c_i).

    The reset gate multiplies s_{i-1} before U, as in the paper (not after, as torch.nn.GRU does).
    The input and context terms ("drives") are split from the recurrent step so that callers can
    compute W E y_{i-1} for all target positions at once, and C c once when the context is fixed.
    """

    def __init__(self, input_dim: int, context_dim: int, hidden_dim: int):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.input_weights = nn.Linear(input_dim, 3 * hidden_dim)  # [W_z; W_r; W] and biases
        self.context_weights = nn.Linear(context_dim, 3 * hidden_dim, bias=False)  # [C_z; C_r; C]
        self.gate_weights = nn.Linear(hidden_dim, 2 * hidden_dim, bias=False)  # [U_z; U_r]
        self.candidate_weights = nn.Linear(hidden_dim, hidden_dim, bias=False)  # U
        normal_(self.input_weights.weight)
        zero_(self.input_weights.bias)
        normal_(self.context_weights.weight)
        orthogonal_blocks_(self.gate_weights.weight, hidden_dim)
        orthogonal_blocks_(self.candidate_weights.weight, hidden_dim)

    def project_inputs(self, embedded: Tensor) -> Tensor:
        """[W_z; W_r; W] E y_{i-1} (+ biases), for any number of positions at once: ... x 3n."""
        return self.input_weights(embedded)

    def project_context(self, context: Tensor) -> Tensor:
        """[C_z; C_r; C] c: ... x 3n."""
        return self.context_weights(context)

    def forward(self, drive: Tensor, state: Tensor) -> Tensor:
        """s_i (B x n), given drive = W E y_{i-1} + C c_i (B x 3n), the part of every
        pre-activation that s_{i-1} does not touch, and s_{i-1} (B x n)."""
        gate_drive, candidate_drive = drive.split([2 * self.hidden_dim, self.hidden_dim], dim=-1)
        update, reset = torch.sigmoid(gate_drive + self.gate_weights(state)).chunk(2, dim=-1)
        # z_i, r_i: B x n each
        candidate = torch.tanh(candidate_drive + self.candidate_weights(reset * state))  # B x n
        return torch.lerp(state, candidate, update)  # (1 - z_i) * s_{i-1} + z_i * candidate
