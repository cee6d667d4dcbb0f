"""nn.GRU whose products run through oneDNN on CPU, in a loop written in Python.

torch's CPU nn.GRU computes its products with MKL inside its own C++ loop. This loop runs nn.GRU's
own equations, parameters and initial state (zero) with the fast path's oneDNN linear: the input
products of all steps in one matrix multiply, then one recurrent product per step.

Which loop wins depends on the CPU class (docs/performance.md, ``bench/kernels.py``): with AVX-512,
oneDNN's products run at twice MKL's rate on this work and pay for the Python loop (one encoder
direction, forward and backward: 24 ms of CPU time against nn.GRU's 38 ms); on AVX2-only CPUs the
two libraries run at the same rate and nn.GRU's loop is as fast with one thread (36 ms each) and
faster with two. So the loop runs only where ``has_avx512``. Anything else it does not cover
(another device or precision, an initial state, several layers or directions, time-major input) is
nn.GRU's own forward too, so cuDNN on a GPU.
"""

from typing import Optional, Tuple

import torch
from torch import Tensor, nn

from .cpu_class import has_avx512
from .onednn_linear import keep_packed_for_generation, linear, uses_onednn


def run_gru(rnn: nn.GRU, inputs: Tensor) -> Tuple[Tensor, Tensor]:
    """``rnn(inputs)`` for a one-layer, one-direction, batch-first nn.GRU from a zero state: the
    states at every step (B x T x n) and the last one (1 x B x n)."""
    hidden = rnn.hidden_size
    input_drives = linear(inputs, rnn.weight_ih_l0, rnn.bias_ih_l0).unbind(dim=1)  # W_i x_t + b_i
    state = inputs.new_zeros(inputs.size(0), hidden)
    states = []
    for drive in input_drives:
        recurrent = linear(state, rnn.weight_hh_l0, rnn.bias_hh_l0)  # W_h h_{t-1} + b_h
        reset, update = torch.sigmoid(drive[:, : 2 * hidden] + recurrent[:, : 2 * hidden]).chunk(
            2, dim=1
        )
        candidate = torch.tanh(drive[:, 2 * hidden :] + reset * recurrent[:, 2 * hidden :])
        state = torch.lerp(candidate, state, update)  # (1 - z) * candidate + z * h_{t-1}
        states.append(state)
    return torch.stack(states, dim=1), state.unsqueeze(0)


class OneDNNGRU(nn.GRU):
    """nn.GRU, through ``run_gru`` where it applies (the fast path swaps it in for nn.GRU)."""

    def forward(self, input: Tensor, hx: Optional[Tensor] = None):
        if (
            hx is None
            and self._is_one_plain_layer()
            and has_avx512()
            and uses_onednn(input, self.weight_ih_l0)
        ):
            return run_gru(self, input)
        return super().forward(input, hx)

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model for generation only (see OneDNNLinear's)."""
        keep_packed_for_generation(self.weight_ih_l0)
        keep_packed_for_generation(self.weight_hh_l0)

    def _is_one_plain_layer(self) -> bool:
        return self.num_layers == 1 and not self.bidirectional and self.batch_first and self.bias
