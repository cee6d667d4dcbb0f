"""The decoder's recurrence over the target positions (Eqs. 4 to 6, Appendix A.2.2) in few
operators: the fused form of ``ConditionalGRUDecoder.recur`` (``decoder.py``), with the same
values, on any device and in any precision the modules run in.

The plain loop dispatches every operator of the formulas one by one, and autograd adds its own;
each costs a few microseconds outside its arithmetic (on a GPU, a kernel launched from Python).
This recurrence computes the same functions with fewer operators (bench/operator_counts.py,
docs/performance.md):

- the two products that read s_{i-1}, W_a s_{i-1} and [U_z; U_r] s_{i-1}, are one product where
  W_a and U are of one precision (in a half-precision model the alignment model's W_a stays
  float32, docs/precision.md: then two products, W_a's in float32);
- the additions that follow a product are folded into it (W E y_{i-1} + C c_i, and the
  candidate's sum): ATen's addmm, or oneDNN's product with an addition on a CPU (``Product``);
- no masking where no sentence is padded;
- the energies e_ij = v_a^T tanh(x_ij) through an ``Activation``, its scale folded into W_a and
  into the addition of U_a h_j (``hidden_units``);
- the backward pass is written out (one autograd node for the whole recurrence, not one per
  operator), recomputes the energies' activations instead of keeping T of them (B x S x n' each),
  and computes each weight's gradient as one product over all positions at the end, instead of one
  small product and one accumulation of a whole weight-sized gradient per position.

The alignment model computes in its own precision (its parameters', float32 in a half-precision
model) and the conditional GRU in the drives' (the model's): s_{i-1} is cast for W_a, and c_i back
for C, at each position, as the modules do.

What is specific to a device is elsewhere: the products' library on a CPU (``Product``), and on a
GPU the whole forward and backward passes replayed from CUDA graphs (``cuda/graphs.py``), which
record ``forward_pass`` and ``backward_pass`` below.
``tests/bahdanau_plugin/speed/test_recurrence.py`` holds the values and gradients against the plain
loop's, and a model checks this recurrence against its own decoder's ``recur`` before running it
(``checks.py``).
"""

from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from ..modules.beam_rows import beams
from .cpu.onednn_linear import Product


@dataclass(frozen=True)
class Activation:
    """The energies e_ij = v_a^T tanh(x_ij) as (scale v_a)^T f(y_ij) with y = scale x, up to a
    constant that softmax does not see: f = tanh (scale 1), or through the sigmoid identity
    tanh(x) = 2 sigmoid(2x) - 1, f = sigmoid (scale 2; e_ij + sum(v_a), the same alpha_ij). The
    scale is folded into W_a and into the addition of U_a h_j (``hidden_units``). y is the largest
    tensor of every step, and on some CPUs torch's tanh is much slower than its sigmoid: which one
    runs there is measured (``decoder.activation_for``)."""

    scale: float
    function_: Callable[[Tensor], Tensor]  # f, in place
    backward: Callable[[Tensor, Tensor], Tensor]  # (gradient of f(y), f(y)) -> gradient of y


TANH = Activation(1.0, torch.tanh_, torch.ops.aten.tanh_backward)
SIGMOID_IDENTITY = Activation(2.0, torch.sigmoid_, torch.ops.aten.sigmoid_backward)


def hidden_units(activation: Activation, queries: Tensor, projected_annotations: Tensor) -> Tensor:
    """f(y_ij), y_ij = scale (W_a s_{i-1} + U_a h_j + b_a), the alignment model's hidden layer
    (Eq. 6), from the queries scale W_a s_{i-1} and U_a h_j + b_a (broadcast against each other):
    one addition that scales the second, then f in place."""
    y = torch.add(queries, projected_annotations, alpha=activation.scale)
    return activation.function_(y)


@dataclass
class Attention:
    """What the alignment model reads at every step, computed once per sentence: h_j (B x S x 2n),
    U_a h_j + b_a (B x S x n'), and the padding mask (B x S; None where no sentence is padded).
    One row per sentence for its k rows of states (the beams of a beam search: ``beam_rows``)."""

    annotations: Tensor
    projected_annotations: Tensor
    padding: Optional[Tensor]
    activation: Activation

    def repeated_for(self, rows: int) -> "Attention":
        """The same for ``rows`` rows of states, one row each: what ``Recurrence`` reads (it
        runs with gradients, which fairseq's beam searches never ask for)."""
        k = beams(rows, self.annotations)
        if k == 1:
            return self
        tensors = (self.annotations, self.projected_annotations, self.padding)
        return Attention(
            *(t.repeat_interleave(k, dim=0) if t is not None else None for t in tensors),
            self.activation,
        )


@dataclass
class Weights:
    """The decoder's parameters that its steps multiply by. Without attention (RNNencdec) the
    context's term C c is part of the drives, and the last three are None."""

    gate_weight: Tensor  # [U_z; U_r]
    candidate_weight: Tensor  # U
    attention_weight: Optional[Tensor] = None  # W_a
    energy_weight: Optional[Tensor] = None  # v_a (1 x n')
    context_weight: Optional[Tensor] = None  # [C_z; C_r; C]

    def tensors(self) -> List[Tensor]:
        return [tensor for tensor in vars(self).values() if tensor is not None]


@dataclass
class Layout:
    """The weights laid out for the step's products: the product of s_{i-1} ([scale W_a; U_z; U_r],
    or [U_z; U_r] where W_a is of another precision, then ``attention_weight`` is scale W_a), U,
    [C_z; C_r; C] and scale v_a."""

    state_weight: Tensor
    candidate_weight: Tensor
    attention_weight: Optional[Tensor]
    context_weight: Optional[Tensor]
    scaled_v: Optional[Tensor]
    attention_dim: int


def layout(weights: Weights, activation: Optional[Activation]) -> Layout:
    if weights.attention_weight is None:
        return Layout(weights.gate_weight, weights.candidate_weight, None, None, None, 0)
    scaled_w = activation.scale * weights.attention_weight
    scaled_v = activation.scale * weights.energy_weight.view(-1)
    attention_dim = scaled_w.size(0)
    if scaled_w.dtype == weights.gate_weight.dtype:  # W_a s_{i-1} and U s_{i-1} in one product
        state_weight, scaled_w = torch.cat([scaled_w, weights.gate_weight]), None
    else:
        state_weight = weights.gate_weight
    return Layout(
        state_weight,
        weights.candidate_weight,
        scaled_w,
        weights.context_weight,
        scaled_v,
        attention_dim,
    )


class Step:
    """One target position's products for ``rows`` rows (``Product``: on a CPU, each by the
    library measured faster for its shapes)."""

    def __init__(self, weights: Layout, rows: int, training: bool):
        self.hidden = weights.candidate_weight.size(0)
        self.attention_dim = weights.attention_dim
        self.gru_dtype = weights.candidate_weight.dtype
        self.state = Product(weights.state_weight, rows, training)
        self.candidate = Product(weights.candidate_weight, rows, training)
        self.attention = None  # W_a's product, where it is not part of the state's
        if weights.attention_weight is not None:
            self.attention = Product(weights.attention_weight, rows, training)
        if self.attention_dim:
            self.context = Product(weights.context_weight, rows, training)
            self.scaled_v = weights.scaled_v
            self.alignment_dtype = weights.scaled_v.dtype

    def state_products(self, state: Tensor) -> Tuple[Optional[Tensor], Tensor]:
        """scale W_a s_{i-1} (None without attention) and [U_z; U_r] s_{i-1}."""
        if not self.attention_dim:
            return None, self.state(state)
        if self.attention is None:
            return self.state(state).split([self.attention_dim, 2 * self.hidden], dim=1)
        return self.attention(state.to(self.alignment_dtype)), self.state(state)


@dataclass
class Trace:
    """What the backward pass reads, kept by the forward pass: per GRU step [z_i; r_i], the
    candidate state and r_i * s_{i-1}; per position scale W_a s_{i-1} (with attention)."""

    gates: List[Tensor]
    candidates: List[Tensor]
    reset_states: List[Tensor]
    attention_inputs: List[Tensor]


def run(
    step: Step,
    drives: Tensor,
    state: Tensor,
    attention: Optional[Attention],
    gru_steps: int,
    trace: Optional[Trace] = None,
):
    """From s_0 = ``state``, over the positions of ``drives`` (W E y_{i-1} + biases, (B k) x T x 3n;
    with C c included where there is no attention): the states s_0 ... s_{gru_steps} ((B k) x n
    each), and with attention c_i (B x k x 2n, in the drives' precision) and alpha_i (B x k x S, in
    the alignment model's) at every position (lists), for B sentences of k rows each. ``trace``
    collects what the backward pass needs."""
    hidden, attention_dim = step.hidden, step.attention_dim
    states, contexts, alphas = [state], [], []
    if attention is not None:  # the sentences' tensors, to broadcast over their k rows
        sentences = attention.annotations.size(0)
        projected = attention.projected_annotations.unsqueeze(1)  # B x 1 x S x n'
        padding = attention.padding.unsqueeze(1) if attention.padding is not None else None
    for i, drive in enumerate(drives.unbind(dim=1)):
        if attention is None and i >= gru_steps:
            break
        attention_input, gate_drive = step.state_products(state)  # scale W_a s, [U_z; U_r] s
        if attention is not None:
            queries = attention_input.view(sentences, -1, 1, attention_dim)  # B x k x 1 x n'
            units = hidden_units(attention.activation, queries, projected)  # B x k x S x n'
            energies = torch.matmul(units, step.scaled_v)  # e_ij (+ a constant), Eq. (6)
            if padding is not None:
                energies.masked_fill_(padding, float("-inf"))
            alpha = torch.softmax(energies, dim=2)  # Eq. (6)
            context = torch.bmm(alpha, attention.annotations)  # c_i, Eq. (5), B x k x 2n
            context = in_precision(context, step.gru_dtype)
            alphas.append(alpha)
            contexts.append(context)
            if trace is not None:
                trace.attention_inputs.append(attention_input)
            if i >= gru_steps:
                break
            drive = step.context(context.view(state.size(0), -1), addend=drive)  # W E y + C c_i
        gate_input, candidate_input = drive.split([2 * hidden, hidden], dim=1)
        gates = torch.add(gate_input, gate_drive).sigmoid_()  # z_i, r_i
        update, reset = gates.chunk(2, dim=1)
        reset_state = reset * state
        candidate = step.candidate(reset_state, addend=candidate_input).tanh_()
        state = torch.lerp(state, candidate, update)  # s_i, Eq. (4)
        states.append(state)
        if trace is not None:
            trace.gates.append(gates)
            trace.candidates.append(candidate)
            trace.reset_states.append(reset_state)
    return states, contexts, alphas


def in_precision(tensor: Tensor, dtype: torch.dtype) -> Tensor:
    """``tensor`` cast to ``dtype``, with no operator where it is of that type already (a beam
    search pays for each operator at every step)."""
    return tensor if tensor.dtype == dtype else tensor.to(dtype)


def stacked(tensors: List[Tensor], dim: int = 1) -> Tensor:
    """torch.stack, as one view where there is one tensor (a beam-search step)."""
    return tensors[0].unsqueeze(dim) if len(tensors) == 1 else torch.stack(tensors, dim)


def by_row(positions: List[Tensor]) -> Tensor:
    """Per-position tensors of ``run`` (B x k x ...) as (B k) x T x ...: one view where there is
    one position (a beam-search step, any k); concatenated where there are more (k = 1)."""
    if len(positions) == 1:
        return positions[0].view(-1, 1, positions[0].size(-1))
    return torch.cat(positions, dim=1)


def forward_pass(step: Step, drives: Tensor, state: Tensor, attention, gru_steps: int):
    """``run`` over all positions, keeping what ``backward_pass`` reads: the outputs (the states
    s_0 ... s_{gru_steps}, and with attention c_i (B x T x 2n) and alpha_i (B x T x S); else
    None) and the trace (``Trace``'s lists stacked over positions; None where empty)."""
    trace = Trace([], [], [], [])
    states, contexts, alphas = run(step, drives, state, attention, gru_steps, trace)
    outputs = (
        torch.stack(states, dim=1),
        torch.cat(contexts, dim=1) if attention is not None else None,
        torch.cat(alphas, dim=1) if attention is not None else None,
    )
    kept = [trace.gates, trace.candidates, trace.reset_states, trace.attention_inputs]
    return outputs, tuple(torch.stack(t, dim=1) if t else None for t in kept)


def backward_pass(step, attention, positions, outputs, trace, grad_outputs):
    """The gradients of ``forward_pass``'s inputs, in ``Recurrence``'s order (the drives, s_0,
    [U_z; U_r], U, W_a, v_a, [C_z; C_r; C], h_j, U_a h_j + b_a; None where absent), from its
    ``outputs``, ``trace`` and the gradients of its outputs (each None where none reaches)."""
    states, contexts, alphas = outputs
    gates, candidates, reset_states, attention_inputs = trace
    grad_states, grad_contexts, grad_alphas = grad_outputs
    rows, gru_steps = states.size(0), states.size(1) - 1
    hidden, attention_dim = step.hidden, step.attention_dim
    # Per position, the gradients of [scale W_a s_{i-1} | the gates' pre-activations | the
    # candidate's]: the drives' are the last 3n (the context product's too), the state product's
    # output gradient the first ones (where W_a is of the GRU's precision, scale W_a s_{i-1}'s
    # gradient is part of it; else it is apart, in the alignment model's precision). Views of each
    # position's tensors are taken once (unbind), not at every position.
    shared = step.attention is None
    grads = states.new_zeros(rows, positions, (attention_dim if shared else 0) + 3 * hidden)
    drive_grads = grads[:, :, grads.size(2) - 3 * hidden :]
    state_product_grads = grads[:, :, : grads.size(2) - hidden]
    gru = _GRUBackward(step, states, gates, candidates)
    if attention is not None:
        if shared:
            attention_grads = grads[:, :, :attention_dim]
        else:
            attention_grads = attention_inputs.new_zeros(rows, positions, attention_dim)
        alignment = _AlignmentBackward(step, attention, alphas, grad_alphas, attention_inputs)
        attention_input_grads = attention_grads.unbind(1)
        if grad_contexts is None:
            grad_contexts = torch.zeros_like(contexts)
        context_output_grads = grad_contexts.unbind(1)
    position_drive_grads = drive_grads.unbind(1)
    position_state_product_grads = state_product_grads.unbind(1)
    state_output_grads = [None] * (gru_steps + 1)
    if grad_states is not None:
        state_output_grads = grad_states.unbind(1)
    grad_state = state_output_grads[-1] if gru_steps == positions else None  # d s_T
    for i in reversed(range(positions)):
        # d s_{i-1}: from the states output, through the GRU to s_i, through the products
        grad_prev = state_output_grads[i]
        if i < gru_steps:
            through_gru = gru.step_backward(i, grad_state, position_drive_grads[i])
            grad_prev = through_gru if grad_prev is None else through_gru.add_(grad_prev)
        if attention is not None:
            grad_context = context_output_grads[i]
            if i < gru_steps:  # c_i also drove the GRU: C^T times the drive's gradient
                grad_context = step.context.transposed(position_drive_grads[i], addend=grad_context)
            alignment.step_backward(i, grad_context, attention_input_grads[i])
            if not shared:  # W_a^T times scale W_a s_{i-1}'s gradient, in the GRU's precision
                through_w_a = step.attention.transposed(attention_input_grads[i])
                through_w_a = through_w_a.to(step.gru_dtype)
                grad_prev = through_w_a if grad_prev is None else through_w_a.add_(grad_prev)
        if attention is not None or i < gru_steps:
            grad_prev = step.state.transposed(position_state_product_grads[i], addend=grad_prev)
        grad_state = grad_prev
    prev_states = states[:, :positions]
    state_weight_grad = step.state.weight_gradient(state_product_grads, prev_states)
    if gru_steps:
        candidate_weight_grad = step.candidate.weight_gradient(
            grads[:, :gru_steps, grads.size(2) - hidden :], reset_states
        )
    else:  # no GRU step: U's true gradient, 0
        candidate_weight_grad = torch.zeros_like(step.candidate.weight)
    attention_grads_out = (None,) * 5
    if attention is not None:
        if shared:
            scaled_w_a_grad = state_weight_grad[:attention_dim]
            state_weight_grad = state_weight_grad[attention_dim:]
        else:
            scaled_w_a_grad = step.attention.weight_gradient(
                attention_grads, prev_states.to(step.alignment_dtype)
            )
        attention_grads_out = (
            attention.activation.scale * scaled_w_a_grad,  # W_a
            alignment.energy_weight_gradient(),  # v_a
            step.context.weight_gradient(drive_grads, contexts),  # C
            alignment.annotations_gradient(),  # h_j, through the contexts
            alignment.grad_projected,
        )
    if grad_state is None:
        grad_state = states.new_zeros(rows, hidden)
    return (drive_grads, grad_state, state_weight_grad, candidate_weight_grad, *attention_grads_out)


class Recurrence(torch.autograd.Function):
    """``run`` over all target positions with gradients, its backward pass written out.

    Inputs: the drives (B x T x 3n), s_0, the ``Weights``' tensors in their order, h_j,
    U_a h_j + b_a, the padding mask (B x S or None), the ``Activation`` and the number of GRU
    steps; without attention, None in each of the attention's places. Outputs: the states
    s_0 ... s_{gru_steps}, and with attention c_i (B x T x 2n) and alpha_i (B x T x S).
    """

    @staticmethod
    def forward(
        ctx,
        drives,
        state,
        gate_weight,
        candidate_weight,
        attention_weight,
        energy_weight,
        context_weight,
        annotations,
        projected_annotations,
        padding,
        activation,
        gru_steps,
    ):
        ctx.set_materialize_grads(False)
        weights = Weights(
            gate_weight, candidate_weight, attention_weight, energy_weight, context_weight
        )
        attention = None
        if annotations is not None:
            attention = Attention(annotations, projected_annotations, padding, activation)
        step = Step(layout(weights, activation), state.size(0), training=True)
        outputs, trace = forward_pass(step, drives, state, attention, gru_steps)
        ctx.step, ctx.attention, ctx.positions = step, attention, drives.size(1)
        ctx.save_for_backward(*outputs, *trace)
        return outputs[0] if attention is None else outputs

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_states, grad_contexts=None, grad_alphas=None):
        saved = ctx.saved_tensors
        grads = backward_pass(
            ctx.step,
            ctx.attention,
            ctx.positions,
            saved[:3],
            saved[3:],
            (grad_states, grad_contexts, grad_alphas),
        )
        return (*grads, None, None, None)


class _GRUBackward:
    """Through s_i = (1 - z_i) s_{i-1} + z_i tanh(u_i), position by position (the last first)."""

    def __init__(self, step: Step, states: Tensor, gates, candidates):
        self.step = step
        self.prev_states = states.unbind(1)
        if gates is not None:
            self.gates, self.candidates = gates.unbind(1), candidates.unbind(1)
        self.gate_grads = states.new_empty(states.size(0), 2 * step.hidden)  # d z_i, d r_i
        self.update_grad, self.reset_grad = self.gate_grads.chunk(2, dim=1)

    def step_backward(self, i: int, grad_state: Optional[Tensor], grad_drive: Tensor) -> Tensor:
        """d s_{i-1} from d s_i (None: 0); writes the gradients of the gates' and the candidate's
        pre-activations into ``grad_drive`` (B x 3n)."""
        prev_state, gates, candidate = self.prev_states[i], self.gates[i], self.candidates[i]
        if grad_state is None:
            grad_state = torch.zeros_like(prev_state)
        update, reset = gates.chunk(2, dim=1)
        grad_gates_input, grad_candidate_input = grad_drive.split(
            [2 * self.step.hidden, self.step.hidden], dim=1
        )
        grad_candidate = grad_state * update
        torch.mul(grad_state, candidate - prev_state, out=self.update_grad)
        grad_prev = grad_state - grad_candidate  # (1 - z_i) d s_i
        torch.ops.aten.tanh_backward.grad_input(
            grad_candidate, candidate, grad_input=grad_candidate_input
        )
        grad_reset_state = self.step.candidate.transposed(grad_candidate_input)  # U^T d u_i
        torch.mul(grad_reset_state, prev_state, out=self.reset_grad)
        grad_prev.addcmul_(grad_reset_state, reset)
        torch.ops.aten.sigmoid_backward.grad_input(
            self.gate_grads, gates, grad_input=grad_gates_input
        )
        return grad_prev


class _AlignmentBackward:
    """The alignment model's gradients, gathered position by position (the last first), in its
    own precision."""

    def __init__(self, step: Step, attention: Attention, alphas, grad_alphas, attention_inputs):
        self.step, self.attention, self.alphas = step, attention, alphas  # B x T x S
        self.position_alphas = alphas.unbind(1)
        self.alpha_grads = grad_alphas.unbind(1) if grad_alphas is not None else None
        self.attention_inputs = attention_inputs.unbind(1)  # scale W_a s_{i-1}
        # d alpha_ij = h_j^T d c_i as a batch of 1-row products: the layout bmm runs fast
        self.annotations_t = attention.annotations.transpose(1, 2)
        self.grad_projected = torch.zeros_like(attention.projected_annotations)
        # sum over positions and sources of d e_ij f(y_ij), per sentence: v_a's gradient
        self.energy = alphas.new_zeros(alphas.size(0), 1, step.attention_dim)
        self.context_grads = []

    def step_backward(self, i: int, grad_context: Tensor, grad_attention_input: Tensor) -> None:
        """Position i, from d c_i (B x 2n): accumulates the gradients of U_a h_j and v_a, and
        writes that of scale W_a s_{i-1} into ``grad_attention_input``."""
        attention = self.attention
        grad_context = in_precision(grad_context, self.alphas.dtype)
        self.context_grads.append(grad_context)
        grad_alpha = torch.bmm(grad_context.unsqueeze(1), self.annotations_t).squeeze(1)  # Eq. (5)
        if self.alpha_grads is not None:
            grad_alpha.add_(self.alpha_grads[i])
        grad_energies = torch._softmax_backward_data(
            grad_alpha, self.position_alphas[i], 1, grad_alpha.dtype
        )
        # f(y_ij), recomputed rather than kept for every position
        activation = attention.activation
        units = hidden_units(
            activation, self.attention_inputs[i].unsqueeze(1), attention.projected_annotations
        )
        self.energy.baddbmm_(grad_energies.unsqueeze(1), units)
        grad_y = activation.backward(grad_energies.unsqueeze(2) * self.step.scaled_v, units)
        self.grad_projected.add_(grad_y, alpha=activation.scale)  # y = ... + scale U_a h_j
        torch.sum(grad_y, dim=1, out=grad_attention_input)

    def energy_weight_gradient(self) -> Tensor:
        return self.attention.activation.scale * self.energy.sum(dim=(0, 1)).view(1, -1)

    def annotations_gradient(self) -> Tensor:
        """Through c_i = sum_j alpha_ij h_j at every position: one batched product."""
        grad_contexts = torch.stack(self.context_grads[::-1], dim=1)
        return torch.bmm(self.alphas.transpose(1, 2), grad_contexts)
