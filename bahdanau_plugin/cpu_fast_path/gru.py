"""nn.GRU whose products run through the fast path's linear on CPU, in a loop written in Python.

torch's CPU nn.GRU computes its products with ATen (MKL) inside its own C++ loop. This loop runs
nn.GRU's own equations, parameters and initial state (zero) with the fast path's linear (oneDNN
where that is faster): the input products of all steps in one matrix multiply, then one recurrent
product per step.

Which loop wins depends on the machine (docs/performance.md): with AVX-512, oneDNN's products run at
twice MKL's rate on this work and pay for the Python loop (one encoder direction, forward and
backward: 24 ms of CPU time against nn.GRU's 38 ms); where the two libraries run at the same rate,
nn.GRU's loop is as fast with one thread and faster with two. So the loop runs where it is measured
faster (``loop_is_faster``, measured_choice's rule). Anything it does not cover (another device or
precision, an initial state, several layers or directions, time-major input) is nn.GRU's own
forward too, so cuDNN on a GPU.
"""

import copy
from typing import Optional, Tuple

import torch
from torch import Tensor, nn

from .measured_choice import CHOOSER, probe
from .onednn_linear import keep_packed_for_generation, linear, row_class, uses_onednn

# The loops are timed over at most this many steps: each step costs the same.
PROBE_STEPS = 2


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


def loop_is_faster(rnn: nn.GRU, inputs: Tensor) -> bool:
    """Whether ``run_gru`` is faster than nn.GRU's own loop for this GRU and batch (forward and,
    where gradients are wanted, backward), here: measured once, on a copy of the GRU."""
    rows, steps = inputs.shape[:2]
    training = torch.is_grad_enabled() and (inputs.requires_grad or rnn.weight_hh_l0.requires_grad)

    def probes():
        copied = copy.deepcopy(rnn)  # its own parameters: no gradient reaches the model's
        generator = torch.Generator().manual_seed(0)
        shape = (min(rows, 256), min(steps, PROBE_STEPS))
        x = torch.rand(*shape, rnn.input_size, generator=generator)
        upstream = torch.rand(*shape, rnn.hidden_size, generator=generator)

        def run(gru):
            return probe(lambda: gru(copied, x)[0], list(copied.parameters()), training, upstream)

        return run(run_gru), run(nn.GRU.forward)

    passes = "forward and backward" if training else "forward"
    sizes = (rnn.input_size, "->", rnn.hidden_size, "x", row_class(rows), "rows,", passes)
    return CHOOSER.fast(("encoder GRU", *sizes), probes, names=("Python loop", "nn.GRU"))


class OneDNNGRU(nn.GRU):
    """nn.GRU, through ``run_gru`` where it applies and is faster (the fast path swaps it in)."""

    def forward(self, input: Tensor, hx: Optional[Tensor] = None):
        if (
            hx is None
            and self._is_one_plain_layer()
            and uses_onednn(input, self.weight_ih_l0)
            and loop_is_faster(self, input)
        ):
            return run_gru(self, input)
        return super().forward(input, hx)

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model for generation only (see OneDNNLinear's)."""
        keep_packed_for_generation(self.weight_ih_l0)
        keep_packed_for_generation(self.weight_hh_l0)

    def _is_one_plain_layer(self) -> bool:
        return self.num_layers == 1 and not self.bidirectional and self.batch_first and self.bias
