"""nn.GRU whose products run through the fast path's linear on CPU, in a loop written in Python.

torch's CPU nn.GRU computes its products with ATen (MKL) inside its own C++ loop. This loop runs
nn.GRU's own equations, parameters and initial state (zero) with the fast path's products (oneDNN
where that is faster): the input products of all steps in one matrix multiply, then one recurrent
product per step (``gru_steps``). Where gradients are wanted, the steps are one autograd function
with the backward pass written out (``GRURecurrence``), as the decoder's recurrence is: each step
records no autograd nodes, and the recurrent weight's gradient is one product over all steps.

Which loop wins depends on the machine: where oneDNN's products run faster than MKL's, they pay for
the Python loop; where the two libraries run at the same rate, nn.GRU's loop can be as fast or
faster (the times on the machines measured: docs/performance-log.md, 2026-11-24, 68f8703). So
the loop runs where it is measured faster (``loop_is_faster``, measured_choice's rule). Anything it
does not cover (another device or precision, an initial state, several layers or directions,
time-major input) is nn.GRU's own forward too, so cuDNN on a GPU.
"""

import copy
from typing import Optional, Tuple

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from .measured_choice import CHOOSER, probe
from .onednn_linear import (
    Product,
    keep_packed_for_generation,
    linear,
    row_class,
    uses_onednn,
)

# The loops are timed over at most this many steps: each step costs the same.
PROBE_STEPS = 2


def run_gru(rnn: nn.GRU, inputs: Tensor) -> Tuple[Tensor, Tensor]:
    """``rnn(inputs)`` for a one-layer, one-direction, batch-first nn.GRU from a zero state: the
    states at every step (B x T x n) and the last one (1 x B x n)."""
    # W_i x_t + b_i for every step at once, time-major so that each step reads one dense block
    input_drives = linear(inputs.transpose(0, 1), rnn.weight_ih_l0, rnn.bias_ih_l0)
    weight, bias = rnn.weight_hh_l0, rnn.bias_hh_l0
    if torch.is_grad_enabled() and any(t.requires_grad for t in (input_drives, weight, bias)):
        states = GRURecurrence.apply(input_drives, weight, bias)  # T x B x n
    else:
        recurrent = Product(weight, input_drives.size(1), training=False)
        states = gru_steps(input_drives, recurrent, bias, keep_for_backward=False)[0][1:]
    return states.transpose(0, 1), states[-1].unsqueeze(0)


def gru_steps(input_drives: Tensor, recurrent: Product, bias: Tensor, keep_for_backward: bool):
    """nn.GRU's equations over the steps (T x B x 3n input drives, gates in nn.GRU's order r, z, n):

        r_t, z_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr), sigmoid(... z ...)
        n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
        h_t = (1 - z_t) * n_t + z_t * h_{t-1}

    The states h_0 (zero) to h_T ((T + 1) x B x n), the gates r_t, z_t (T x B x 2n), the candidates
    n_t, and, where ``keep_for_backward``, W_hn h_{t-1} + b_hn (else None): written into buffers
    made once, one step at a time."""
    steps, rows, width = input_drives.shape
    hidden = width // 3
    states = input_drives.new_empty(steps + 1, rows, hidden)
    states[0].zero_()
    gates = input_drives.new_empty(steps, rows, 2 * hidden)
    candidates = input_drives.new_empty(steps, rows, hidden)
    recurrent_candidates = (
        input_drives.new_empty(steps, rows, hidden) if keep_for_backward else None
    )
    bias = bias.expand(rows, width)
    for t in range(steps):
        state, drive = states[t], input_drives[t]
        recurrent_drive = recurrent(state, addend=bias)  # W_h h_{t-1} + b_h: one product
        torch.add(drive[:, : 2 * hidden], recurrent_drive[:, : 2 * hidden], out=gates[t])
        gates[t].sigmoid_()
        reset, update = gates[t].chunk(2, dim=1)
        recurrent_candidate = recurrent_drive[:, 2 * hidden :]
        if keep_for_backward:
            recurrent_candidates[t].copy_(recurrent_candidate)
        torch.addcmul(drive[:, 2 * hidden :], reset, recurrent_candidate, out=candidates[t])
        candidates[t].tanh_()
        torch.lerp(candidates[t], state, update, out=states[t + 1])
    return states, gates, candidates, recurrent_candidates


class GRURecurrence(torch.autograd.Function):
    """``gru_steps`` as one autograd function with its backward pass written out: a step costs a
    few operators in each direction instead of the dozen autograd records for the loop above, and
    the weight's gradient is one product over all steps (docs/performance-log.md, 2026-11-24,
    68f8703)."""

    @staticmethod
    def forward(ctx, input_drives: Tensor, weight_hh: Tensor, bias_hh: Tensor) -> Tensor:
        recurrent = Product(weight_hh, input_drives.size(1), training=True)
        saved = gru_steps(input_drives.contiguous(), recurrent, bias_hh, keep_for_backward=True)
        ctx.save_for_backward(*saved)
        ctx.recurrent = recurrent
        return saved[0][1:]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_states: Tensor):
        states, gates, candidates, recurrent_candidates = ctx.saved_tensors
        steps, rows, hidden = candidates.shape
        # the gradients of W_h h_{t-1} + b_h (those of the r and z parts are also the input drives')
        recurrent_grads = states.new_empty(steps, rows, 3 * hidden)
        candidate_grads = states.new_empty(steps, rows, hidden)  # of n_t's pre-activation
        grad_state = None
        for t in reversed(range(steps)):
            grad = grad_states[t] if grad_state is None else grad_state.add_(grad_states[t])
            reset, update = gates[t].chunk(2, dim=1)
            grad_rz = recurrent_grads[t, :, : 2 * hidden]
            torch.mul(
                grad, states[t] - candidates[t], out=recurrent_grads[t, :, hidden : 2 * hidden]
            )
            torch.ops.aten.tanh_backward.grad_input(
                grad * (1 - update), candidates[t], grad_input=candidate_grads[t]
            )
            torch.mul(candidate_grads[t], reset, out=recurrent_grads[t, :, 2 * hidden :])
            torch.mul(
                candidate_grads[t], recurrent_candidates[t], out=recurrent_grads[t, :, :hidden]
            )
            torch.ops.aten.sigmoid_backward.grad_input(grad_rz, gates[t], grad_input=grad_rz)
            # dL/dh_{t-1}: through z_t directly, and through the product W_h h_{t-1}
            grad_state = ctx.recurrent.transposed(recurrent_grads[t], addend=grad * update)
        input_drive_grads = torch.cat([recurrent_grads[:, :, : 2 * hidden], candidate_grads], dim=2)
        weight_grad = ctx.recurrent.weight_gradient(recurrent_grads, states[:-1])
        return input_drive_grads, weight_grad, recurrent_grads.sum(dim=(0, 1))


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
    """nn.GRU, through ``run_gru`` where it applies, is faster and computes what nn.GRU computes
    (measured_choice compares both): the layer that takes the place of each nn.GRU of a model
    (modules/fast_path.py) where the fast path is on."""

    @classmethod
    def holding(cls, rnn: nn.GRU) -> "OneDNNGRU":
        """A OneDNNGRU holding ``rnn``'s parameters (modules/fast_path.py)."""
        faster = cls(
            rnn.input_size,
            rnn.hidden_size,
            rnn.num_layers,
            rnn.bias,
            rnn.batch_first,
            rnn.dropout,
            rnn.bidirectional,
            device="meta",
        )
        for name, parameter in rnn.named_parameters(recurse=False):
            setattr(faster, name, parameter)
        return faster

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
