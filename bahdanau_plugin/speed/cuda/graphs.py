"""The written-out recurrence (``recurrence.py``) replayed from CUDA graphs: what the fused
recurrence runs with gradients on a GPU.

On a GPU the recurrence's time is its launches, not its arithmetic: each target position launches
a few dozen small kernels from Python, a few microseconds of host time each, and the GPU waits for
them (docs/gpu.md). A CUDA graph records the kernels of ``recurrence.forward_pass`` over all
positions once, and those of ``recurrence.backward_pass``, and replays each with one launch.

- **Shapes.** A graph replays fixed shapes. Rows (sentences), target positions and source
  positions are each rounded up (``bucket``: by less than a quarter, or than 4), so that a few
  graphs serve a training run; a bucket's graphs are recorded at its first call, once per
  process. The padding changes nothing real: padded source positions are masked (alpha_ij
  = 0), padded target positions come after the real ones in a recurrence that runs forward, padded
  rows are rows of their own; every output gradient of the padding is 0, so the real values and
  gradients are what ``Recurrence`` gives.
- **Memory.** Graphs read their inputs from, and write their outputs, trace and gradients to,
  tensors at fixed places in one buffer per device that every graph shares (``Arena``): each call
  copies its inputs in and its results out, so a graph never holds a caller's tensor, and the
  buffer is as large as the largest graph needs, not the sum of all. What a graph allocates for
  itself comes from one memory pool per device, which the graphs share too.
- **Order.** The backward pass reads the forward pass's trace from the shared buffer. Where another
  graph ran in between (two forward passes before their backward passes), the call's forward pass
  is replayed first, from the inputs the autograd function kept.
- **No host synchronization** inside a graph: the padding is always masked (no look at the mask on
  the host), and the graph runs every GRU step of its positions (the last state a call asks for
  is then always among its results).

A graph is recorded from the code that runs eagerly elsewhere, on the model's own weights' values
(copied in at each call), and ``checks.py`` compares what a fused recurrence computes this way with
the modules' own code, on the GPU, before the model uses it. Where recording fails, the fused
recurrence runs ``Recurrence`` eagerly, with one warning. What each way of computing the
recurrence takes on a GPU, graphs or not: docs/gpu.md.
"""

import itertools
import logging
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from ..recurrence import Attention, Recurrence, Step, Weights, backward_pass, forward_pass, layout

logger = logging.getLogger(__name__)

# Recorded graphs kept per fused recurrence: the least recently used beyond this are dropped.
MOST_GRAPHS = 128
# Where tensors start in the shared buffer (bytes): every tensor aligned for any kernel.
ALIGNMENT = 256
# Recurrence's tensor inputs, in its order.
INPUTS = ("drives", "state", "gate_weight", "candidate_weight", "attention_weight",
          "energy_weight", "context_weight", "annotations", "projected_annotations",
          "padding")  # fmt: skip
WEIGHTS = slice(2, 7)


def tf32_in_products() -> bool:
    """Whether float32 products on a GPU may run in TF32, set by either of torch's two ways (whose
    older one refuses to answer where the newer one set it)."""
    try:
        return torch.backends.cuda.matmul.allow_tf32
    except RuntimeError:
        return torch.backends.cuda.matmul.fp32_precision == "tf32"


def bucket(size: int) -> int:
    """``size`` rounded up to a multiple of 4 up to 32, of 8 up to 64, of 16 up to 128, and so on:
    less than 4 or a quarter of it more, and few distinct values."""
    step = max(4, 1 << max(size.bit_length() - 3, 0))
    return -(-size // step) * step


class Arena:
    """The buffer in which every graph of a device keeps its inputs, outputs, trace and gradients,
    each tensor at an offset fixed per graph. A graph that needs more than it holds makes it grow,
    which makes every graph recorded before it stale (``generation``). ``holder`` is the graph and
    the call whose forward results it holds."""

    def __init__(self, device: torch.device):
        self.device = device
        self.buffer: Optional[Tensor] = None
        self.generation = 0
        self.holder: Optional[Tuple[object, int]] = None

    def tensors(self, specs: Sequence[Optional[Tuple[torch.Size, torch.dtype]]]):
        """Tensors of these shapes and types (None for None), laid out one after another."""
        offsets, end = [], 0
        for spec in specs:
            offsets.append(end)
            if spec is not None:
                shape, dtype = spec
                size = shape.numel() * dtype.itemsize
                end += -(-size // ALIGNMENT) * ALIGNMENT
        if self.buffer is None or self.buffer.numel() < end:
            self.buffer = None  # the old one goes with the graphs that read it
            self.buffer = torch.empty(end, dtype=torch.uint8, device=self.device)
            self.generation += 1
            self.holder = None
        return [
            None if spec is None else _view(self.buffer, offset, *spec)
            for offset, spec in zip(offsets, specs)
        ]


def _view(buffer: Tensor, offset: int, shape: torch.Size, dtype: torch.dtype) -> Tensor:
    size = shape.numel() * dtype.itemsize
    return buffer[offset : offset + size].view(dtype).view(shape)


_ARENAS: Dict[torch.device, Arena] = {}
_POOLS: Dict[torch.device, tuple] = {}
_TICKETS = itertools.count()


def _spec(tensor: Optional[Tensor]):
    return None if tensor is None else (tensor.shape, tensor.dtype)


def _padded_spec(name: str, tensor, rows: int, positions: int, sources: int, attention: bool):
    """The shape and type of a Recurrence input in a bucket of rows, target and source positions
    (None where it has none). With attention the padding mask is always there (no host look)."""
    if name == "padding":
        return (torch.Size((rows, sources)), torch.bool) if attention else None
    if tensor is None:
        return None
    if name == "drives":
        shape = (rows, positions, tensor.size(2))
    elif name == "state":
        shape = (rows, tensor.size(1))
    elif name in ("annotations", "projected_annotations"):
        shape = (rows, sources, tensor.size(2))
    else:  # a weight
        shape = tensor.shape
    return torch.Size(shape), tensor.dtype


def _signature(name: str, tensor: Optional[Tensor]):
    """What a graph depends on of a Recurrence input besides its bucket: type and sizes."""
    if tensor is None or name == "padding":  # with attention, a graph always masks
        return None
    if name in INPUTS[WEIGHTS]:
        return tensor.shape, tensor.dtype
    return tensor.size(-1), tensor.dtype


def _copy_padded(static: Tensor, real: Tensor) -> None:
    """``real`` into the corner of ``static``, zeros elsewhere."""
    if static.shape == real.shape:
        static.copy_(real)
        return
    static.zero_()
    static[tuple(slice(0, size) for size in real.shape)].copy_(real)


def _corner(static: Tensor, shape: Sequence[int]) -> Tensor:
    """A copy of the corner of ``static`` of this shape."""
    return static[tuple(slice(0, size) for size in shape)].clone()


class Pair:
    """The forward and backward graphs of the recurrence for one bucket of shapes: recorded from
    a call's inputs (padded into the bucket), then replayed for every call of that bucket."""

    def __init__(self, arena: Arena, pool, inputs: List[Optional[Tensor]], activation, shape):
        rows, positions, sources = shape
        self.arena, self.activation, self.positions = arena, activation, positions
        attention = inputs[INPUTS.index("annotations")] is not None
        input_specs = [
            _padded_spec(name, t, rows, positions, sources, attention)
            for name, t in zip(INPUTS, inputs)
        ]
        specs = [*input_specs, *self._result_specs(input_specs)]
        tensors = arena.tensors(specs)
        self.generation = arena.generation
        counts = itertools.accumulate([len(INPUTS), 3, 4, 3])
        bounds = [0, *counts, len(tensors)]
        self.inputs, self.outputs, self.trace, self.grad_outputs, self.grads = (
            tensors[start:end] for start, end in zip(bounds, bounds[1:])
        )
        self.load(inputs)
        for static in self.grad_outputs:
            if static is not None:
                static.zero_()
        GRAPHS.synchronize(arena.device)
        self.forward_graph = GRAPHS.record(pool, self._record_forward, arena.device)
        self.backward_graph = GRAPHS.record(pool, self._record_backward, arena.device)
        self.ticket = -1

    def _result_specs(self, input_specs):
        """The shapes and types of the outputs, the trace, the outputs' gradients and the
        gradients, for the buffer's layout: from the passes run on tensors without data (the meta
        device), or where an operator has no such form, on zeros on the device."""
        try:
            return self._run_on(input_specs, torch.device("meta"))
        except (NotImplementedError, RuntimeError):
            return self._run_on(input_specs, self.arena.device)

    def _run_on(self, input_specs, device):
        inputs = [
            None if spec is None else torch.zeros(spec[0], dtype=spec[1], device=device)
            for spec in input_specs
        ]
        outputs, trace = self._forward(inputs)
        grad_outputs = [None if t is None else torch.zeros_like(t) for t in outputs]
        grads = self._backward(inputs, outputs, trace, grad_outputs)
        return [_spec(t) for t in (*outputs, *trace, *grad_outputs, *grads)]

    def _forward(self, inputs):
        step, attention = self._step(inputs)
        return forward_pass(step, inputs[0], inputs[1], attention, self.positions)

    def _backward(self, inputs, outputs, trace, grad_outputs):
        step, attention = self._step(inputs)
        return backward_pass(step, attention, self.positions, outputs, trace, grad_outputs)

    def _step(self, inputs):
        weights = Weights(*inputs[WEIGHTS])
        attention = None
        if inputs[INPUTS.index("annotations")] is not None:
            attention = Attention(*inputs[7:10], self.activation)
        step = Step(layout(weights, self.activation), inputs[0].size(0), training=True)
        return step, attention

    def _record_forward(self):
        outputs, trace = self._forward(self.inputs)
        _copy_into(self.outputs, outputs)
        _copy_into(self.trace, trace)

    def _record_backward(self):
        grads = self._backward(self.inputs, self.outputs, self.trace, self.grad_outputs)
        _copy_into(self.grads, grads)

    def load(self, inputs: Sequence[Optional[Tensor]]) -> None:
        """A call's inputs into the graph's, padded; the padding mask is True on padded source
        positions of real rows and False on padded rows (each has positions to attend to)."""
        for name, static, real in zip(INPUTS, self.inputs, inputs):
            if static is None:
                continue
            if name != "padding":
                _copy_padded(static, real)
                continue
            rows, sources = inputs[0].size(0), inputs[INPUTS.index("annotations")].size(1)
            static.fill_(True)
            static[rows:].fill_(False)
            if real is None:
                static[:rows, :sources].fill_(False)
            else:
                static[:rows, :sources].copy_(real)

    def forward(self, inputs, gru_steps: int):
        """Recurrence's outputs for a call's inputs."""
        self.load(inputs)
        self.forward_graph.replay()
        self.ticket = next(_TICKETS)
        self.arena.holder = (self, self.ticket)
        rows, positions = inputs[0].shape[:2]
        states, contexts, alphas = self.outputs
        real_states = _corner(states, (rows, gru_steps + 1))
        if contexts is None:
            return real_states
        sources = inputs[INPUTS.index("annotations")].size(1)
        return (
            real_states,
            _corner(contexts, (rows, positions)),
            _corner(alphas, (rows, positions, sources)),
        )

    def backward(self, inputs, ticket: int, grad_outputs) -> Tuple[Optional[Tensor], ...]:
        """The gradients of a call's inputs (``forward``'s, whose ticket it was) from its outputs'
        gradients."""
        if self.arena.holder != (self, ticket):  # its trace was overwritten since: again
            self.load(inputs)
            self.forward_graph.replay()
            self.arena.holder = (self, ticket)
        for static, grad in zip(self.grad_outputs, grad_outputs):
            if static is None:
                continue
            if grad is None:
                static.zero_()
            else:
                _copy_padded(static, grad)
        self.backward_graph.replay()
        return tuple(
            None if real is None else _corner(grad, real.shape)
            for real, grad in zip(inputs[:-1], self.grads)
        )


def _copy_into(statics, results) -> None:
    for static, result in zip(statics, results):
        if static is not None:
            static.copy_(result)


class CUDAGraphs:
    """How graphs are recorded and replayed: CUDA's own (the tests of this module on a CPU put a
    recorder in its place that runs the recorded function again at each replay). Each device
    records on a side stream of its own, on which the first recording runs once outside any graph
    first (as torch asks: the libraries' handles and workspaces are made there)."""

    def __init__(self):
        self._streams: Dict[torch.device, "torch.cuda.Stream"] = {}

    def pool(self, device: torch.device):
        return torch.cuda.graph_pool_handle()

    def on(self, device: torch.device):
        return torch.cuda.device(device)

    def synchronize(self, device: torch.device) -> None:
        torch.cuda.synchronize(device)

    def record(self, pool, record, device: torch.device) -> "torch.cuda.CUDAGraph":
        """``record()``'s kernels as a graph. Not through ``torch.cuda.graph``, which empties
        torch's memory cache at every recording: a training run records a graph at the first batch
        of each bucket, and after each the next steps would wait for their memory to be allocated
        from the device anew."""
        stream = self._streams.get(device)
        if stream is None:
            stream = self._streams[device] = torch.cuda.Stream(device)
            stream.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(stream):
                record()
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            graph.capture_begin(pool=pool, capture_error_mode="thread_local")
            try:
                record()
            finally:
                graph.capture_end()
        torch.cuda.current_stream(device).wait_stream(stream)
        return graph


GRAPHS = CUDAGraphs()


class CapturedRecurrence:
    """``Recurrence.apply``, replayed from graphs recorded per bucket of shapes (``Pair``) on a
    GPU. One per fused recurrence; the buffer and the memory pool are the device's."""

    def __init__(self):
        self._pairs: "OrderedDict[tuple, Pair]" = OrderedDict()
        self.failed = False

    def __deepcopy__(self, memo) -> "CapturedRecurrence":
        """A copy of a model records graphs of its own (a graph cannot be copied)."""
        return CapturedRecurrence()

    def __call__(self, *inputs):
        *tensors, activation, gru_steps = inputs
        if self.failed:
            return Recurrence.apply(*inputs)
        try:
            with torch.no_grad():  # the copies into a graph's tensors are not the caller's graph
                pair = self._pair(list(tensors), activation)
        except RuntimeError as error:  # recording failed: eagerly from now on
            logger.warning(
                "the fast path's fused recurrence could not be recorded as a CUDA graph (%s): it "
                "runs without graphs",
                str(error).strip().splitlines()[0],
            )
            self.failed = True
            self._pairs.clear()
            return Recurrence.apply(*inputs)
        return GraphedRecurrence.apply(pair, gru_steps, *tensors)

    def _pair(self, tensors: List[Optional[Tensor]], activation) -> Pair:
        drives, annotations = tensors[0], tensors[INPUTS.index("annotations")]
        rows, positions = drives.shape[:2]
        sources = annotations.size(1) if annotations is not None else 0
        shape = (bucket(rows), bucket(positions), bucket(sources) if sources else 0)
        device = drives.device
        key = (
            shape,
            device,
            activation,
            tuple(_signature(name, t) for name, t in zip(INPUTS, tensors)),
            tf32_in_products(),
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        )
        arena = _ARENAS.setdefault(device, Arena(device))
        pair = self._pairs.get(key)
        if pair is not None and pair.generation == arena.generation:
            self._pairs.move_to_end(key)
            return pair
        self._pairs.pop(key, None)
        for stale in [k for k, p in self._pairs.items() if p.generation != arena.generation]:
            del self._pairs[stale]
        if device not in _POOLS:
            _POOLS[device] = GRAPHS.pool(device)
        with GRAPHS.on(device):
            pair = Pair(arena, _POOLS[device], tensors, activation, shape)
        self._pairs[key] = pair
        while len(self._pairs) > MOST_GRAPHS:
            self._pairs.popitem(last=False)
        return pair


class GraphedRecurrence(torch.autograd.Function):
    """``Recurrence`` through a ``Pair``: its forward graph, and its backward graph for the
    gradients. Inputs: the pair, the number of GRU steps, then Recurrence's tensors in its order."""

    @staticmethod
    def forward(ctx, pair: Pair, gru_steps: int, *tensors):
        ctx.set_materialize_grads(False)
        outputs = pair.forward(tensors, gru_steps)
        ctx.pair, ctx.ticket = pair, pair.ticket
        ctx.save_for_backward(*tensors)
        return outputs

    @staticmethod
    @once_differentiable
    def backward(ctx, *grad_outputs):
        grad_outputs = (*grad_outputs, None, None)[:3]
        grads = ctx.pair.backward(ctx.saved_tensors, ctx.ticket, grad_outputs)
        return (None, None, *grads, None)
