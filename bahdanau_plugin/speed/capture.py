"""On a GPU in training, the decoder's loop over target positions (``recur``: the modules' own
code, its step compiled) replayed from CUDA graphs, recorded forward and backward by autograd: on
a GPU the recurrence's time is its launches (docs/gpu.md), and a graph replays them in one.

- **Shapes.** Rows, target and source positions are rounded up (``bucket``): a few graphs serve
  a run. Padded source positions are masked, padded target positions come after the real ones,
  padded rows are rows of their own: every gradient the padding receives is 0.
- **Memory.** A device's graphs copy their inputs in and results out of one buffer (``Arena``);
  what autograd keeps between the passes lies in one pool per device.
- **When.** With gradients on a GPU, autocast off, no hook or mode (``compiling.interposed``),
  the fast path not plain; per bucket, code (``compiling.code_of``), parameters' and buffers'
  places. Each recording is logged with its time; where one fails, the loop runs without graphs,
  after one warning.
"""

import contextlib
import itertools
import logging
import time
import weakref
from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

from . import compiling, setting

logger = logging.getLogger(__name__)
MOST_BUCKETS = 64  # recorded buckets kept per decoder: the least recently used beyond, dropped
ALIGNMENT = 256  # bytes: where tensors start in the arena, each aligned for any kernel
SOURCE_AXIS = ("annotations", "projected_annotations", "padding_mask")  # inputs' axis 1: sources
# create_graph=True: a graph's backward pass is replayed, not differentiated again.
HIGHER_ORDER = "no higher-order gradients through CUDA graphs: set BAHDANAU_FAST_PATH=plain"


def bucket(size: int, coarse: bool = True) -> int:
    """``size`` rounded up to a multiple of 4, or (``coarse``) by less than 4 or a quarter (to a
    multiple of 4 up to 32, of 8 up to 64, ...): few distinct values."""
    step = max(4, 1 << max(size.bit_length() - 3, 0)) if coarse else 4
    return -(-size // step) * step


class Arena:
    """A device's graphs' inputs, outputs and gradients at fixed offsets; growing makes older
    graphs stale (``generation``). ``holder``: whose forward pass the pool holds (graph, call)."""

    def __init__(self, device: torch.device):
        self.device, self.buffer, self.generation = device, None, 0
        self.holder: Optional[Tuple[object, int]] = None

    def tensors(self, like: Sequence[Tuple[torch.Size, torch.dtype]]) -> List[Tensor]:
        """Tensors of these shapes and types, laid out one after another from the start."""
        offsets, end = [], 0
        for shape, dtype in like:
            offsets.append(end)
            end += -(-shape.numel() * dtype.itemsize // ALIGNMENT) * ALIGNMENT
        if self.buffer is None or self.buffer.numel() < end:
            self.buffer = None  # the old one goes with the graphs that read it
            self.buffer = torch.empty(end, dtype=torch.uint8, device=self.device)
            self.generation, self.holder = self.generation + 1, None
        return [
            # not views: an output written would bump the version counter autograd checks
            torch.empty(0, dtype=dtype, device=self.device).set_(
                self.buffer.untyped_storage(), offset // dtype.itemsize, shape
            )
            for offset, (shape, dtype) in zip(offsets, like)
        ]


class CUDAGraphs:
    """CUDA's graphs (a recorder in their place in tests on a CPU), recorded on a side stream per
    device into one pool, held here with its latest graph: torch refuses a pool whose graphs were
    all freed (its host allocator's part, in torch 2.11: the next model's recordings failed)."""

    def __init__(self):
        self._devices: Dict[torch.device, list] = {}  # a stream, a pool, its latest graph
        self._failed: List[tuple] = []  # those of failed recordings, kept: see ``record``

    @contextlib.contextmanager
    def side_stream(self, device: torch.device):
        """Within: the device's recording stream, after the caller's work and before its next."""
        if device not in self._devices:
            with torch.cuda.device(device):
                self._devices[device] = [torch.cuda.Stream(), torch.cuda.MemPool(), None]
        stream, caller = self._devices[device][0], torch.cuda.current_stream(device)
        stream.wait_stream(caller)
        with torch.cuda.device(device), torch.cuda.stream(stream):
            try:
                yield
            finally:  # a recording that failed too: its work before the caller's next
                caller.wait_stream(stream)

    def record(self, function: Callable[[], None], device: torch.device):
        """One run of ``function``, in ``side_stream``. Where it fails, its first error is raised
        and the device gets a new stream and pool: torch leaves the pool marked as recorded to."""
        graph, pool, ended = torch.cuda.CUDAGraph(), self._devices[device][1].id, False
        graph.capture_begin(pool=pool, capture_error_mode="thread_local")
        try:
            function()
            graph.capture_end()
            ended, self._devices[device][2] = True, graph
        finally:
            if not ended:  # kept: a pool left mid-recording is not freed (untested in torch)
                self._failed.append(self._devices.pop(device))
                with contextlib.suppress(RuntimeError):  # the capture ends, failing again
                    graph.capture_end()
        return graph


GRAPHS = CUDAGraphs()
_ARENAS: Dict[torch.device, Arena] = {}
_TICKETS = itertools.count()
_CAPTURES: "weakref.WeakKeyDictionary[nn.Module, Captures]" = weakref.WeakKeyDictionary()


def _padded(name: str, tensor: Tensor, rows: int, positions: int, sources: int) -> torch.Size:
    """The shape of an input of ``recur`` in a bucket of rows, target and source positions."""
    shape = [rows, *tensor.shape[1:]]
    if name == "drives" or name.split(".")[-1] in SOURCE_AXIS:  # "e.annotations": annotations
        shape[1] = positions if name == "drives" else sources
    return torch.Size(shape)


def _copy_padded(static: Tensor, real: Tensor) -> None:
    """``real`` into the corner of ``static``, zeros elsewhere."""
    if static.shape != real.shape:
        static.zero_()
    static[tuple(slice(0, size) for size in real.shape)].copy_(real)


@contextlib.contextmanager
def _swapped(module: nn.Module, stand_ins: Dict[int, Tensor]):
    """Within: each parameter of ``module`` (by its id) where its stand-in is, in every place."""
    places = [(m._parameters, n, p) for m in module.modules() for n, p in m._parameters.items()]
    try:
        for parameters, name, parameter in places:
            parameters[name] = stand_ins.get(id(parameter), parameter)
        yield
    finally:
        for parameters, name, parameter in places:
            parameters[name] = parameter


class Bucket:
    """``recur``'s forward and backward graphs for a bucket of shapes. Inputs: W E y_{i-1}, the
    encoder's output and the cache by name, the parameters; outputs: s_0 .. s_T, c_i, alpha_i."""

    def __init__(self, recur, names: List[str], inputs: List[Tensor], parameters, shape):
        (rows, positions, sources), device = shape, inputs[0].device
        self.arena = _ARENAS.setdefault(device, Arena(device))
        self.recur, self.names = weakref.WeakMethod(recur), names
        # Leaves of their own in the parameters' places: a parameter's gradient accumulator made
        # on another stream (the caller's, or DDP's) would break a capture (pytorch#180090).
        self.stand_ins = {id(p): nn.Parameter(p.detach()) for p in parameters}  # in their order
        like = [(_padded(n, t, rows, positions, sources), t.dtype) for n, t in zip(names, inputs)]
        with GRAPHS.side_stream(device):  # the libraries' workspaces made for it, not in a graph
            out_like, grads_like, reached = self._first_pass(like, inputs)
        self.reached = [t.requires_grad and next(reached) for t in inputs] + list(reached)
        tensors = self.arena.tensors(like + out_like + out_like + grads_like)
        self.generation = self.arena.generation
        bounds = list(itertools.accumulate([len(like), len(out_like), len(out_like)]))
        statics, self.outputs, self.grad_outputs, self.grads = (
            tensors[start:end] for start, end in zip([0, *bounds], [*bounds, None])
        )
        self.inputs = [s.detach().requires_grad_(r.requires_grad) for s, r in zip(statics, inputs)]
        self.load(inputs)
        with GRAPHS.side_stream(device):
            self.forward_graph = GRAPHS.record(self._record_forward, device)
            self.backward_graph = GRAPHS.record(self._record_backward, device)
        self._live, self.ticket = None, -1  # what autograd kept back to the pool, for the others

    def _first_pass(self, like, inputs):
        """``recur`` forward and backward on zeros of the bucket's shapes, outside any graph: its
        outputs' shapes, its gradients', and whether each input and parameter is reached."""
        zeros = [torch.zeros(shape, dtype=dtype, device=self.arena.device) for shape, dtype in like]
        wrt = [t.requires_grad_() for t, real in zip(zeros, inputs) if real.requires_grad]
        outputs = self._run(zeros)
        leaves = wrt + list(self.stand_ins.values())
        grads = torch.autograd.grad(outputs, leaves, outputs, allow_unused=True)
        shapes = [[(t.shape, t.dtype) for t in ts if t is not None] for ts in (outputs, grads)]
        return (*shapes, iter([grad is not None for grad in grads]))

    def _run(self, inputs: List[Tensor]) -> List[Tensor]:
        """``recur`` on these inputs, with the parameters' stand-ins: s_0 .. s_T, c_i, alpha_i."""
        drives, *rest = inputs
        tensors = dict(zip(self.names[1:], rest))
        encoder_out = {n[2:]: t for n, t in tensors.items() if n.startswith("e.")}
        cache = {n[2:]: t for n, t in tensors.items() if n.startswith("c.")}
        with _swapped(self.recur().__self__, self.stand_ins):
            prev_states, contexts, alphas, state = self.recur()(drives, encoder_out, cache)
        states = torch.cat([prev_states, state.unsqueeze(1)], dim=1)
        return [states, contexts] + ([alphas] if alphas is not None else [])

    def _record_forward(self) -> None:
        self._live = self._run(self.inputs)
        for static, output in zip(self.outputs, self._live):
            static.copy_(output)

    def _record_backward(self) -> None:
        leaves = self.inputs + list(self.stand_ins.values())
        wrt = [t for t, reached in zip(leaves, self.reached) if reached]
        grads = torch.autograd.grad(self._live, wrt, self.grad_outputs)
        for static, grad in zip(self.grads, grads):
            static.copy_(grad)

    def load(self, inputs: Sequence[Tensor]) -> None:
        """A call's inputs into the graph's, padded; the padding mask True on padded source
        positions of real rows, False on padded rows (each has positions to attend to)."""
        with torch.no_grad():
            for name, static, real in zip(self.names, self.inputs, inputs):
                _copy_padded(static, real)
                if name.endswith("padding_mask"):
                    static[: real.size(0), real.size(1) :] = True

    def forward(self, inputs: Sequence[Tensor], positions: int, sources: int) -> Tuple[Tensor, ...]:
        """The outputs of a call: s_0 .. s_T, c_i and alpha_i of its rows and positions."""
        self.load(inputs)
        self.forward_graph.replay()
        self.ticket = next(_TICKETS)
        self.arena.holder = (self, self.ticket)
        rows, (states, contexts, *alphas) = inputs[0].size(0), self.outputs
        corners = [states[:rows, : positions + 1], contexts[:rows, :positions]]
        corners += [alpha[:rows, :positions, :sources] for alpha in alphas]
        return tuple(corner.clone() for corner in corners)

    def backward(self, inputs, ticket: int, grad_outputs) -> List[Optional[Tensor]]:
        """The gradients of a call's inputs and parameters (None where none reaches them)."""
        if self.arena.holder != (self, ticket):  # the pool was overwritten since: again
            self.load(inputs[: len(self.names)])
            self.forward_graph.replay()
        self.arena.holder = None  # the backward reuses what the forward kept: a second one, again
        for static, grad in zip(self.grad_outputs, grad_outputs):
            static.zero_() if grad is None else _copy_padded(static, grad)
        self.backward_graph.replay()
        grads = iter(self.grads)
        return [
            next(grads)[tuple(slice(0, size) for size in real.shape)].clone() if reached else None
            for real, reached in zip(inputs, self.reached)
        ]


class Replayed(torch.autograd.Function):
    """``recur`` through a ``Bucket``'s graphs: (bucket, positions, sources, *inputs, *weights)."""

    @staticmethod
    def forward(ctx, bucket: Bucket, positions: int, sources: int, *tensors):
        ctx.set_materialize_grads(False)
        outputs = bucket.forward(tensors, positions, sources)
        ctx.bucket, ctx.ticket = bucket, bucket.ticket
        ctx.save_for_backward(*tensors)
        return outputs

    @staticmethod
    def backward(ctx, *grad_outputs):
        torch._check(not torch.is_grad_enabled(), lambda: HIGHER_ORDER)  # on for create_graph
        return (None, None, None, *ctx.bucket.backward(ctx.saved_tensors, ctx.ticket, grad_outputs))


class Captures:
    """The recorded buckets of one decoder, least recently used first."""

    def __init__(self):
        self.buckets, self.failed = OrderedDict(), ""  # why recording failed

    def run(self, recur, input_drives: Tensor, encoder_out: dict, cache: dict):
        decoder = recur.__self__
        names, inputs = _named_inputs(input_drives, encoder_out, cache)
        parameters = [p for p in decoder.parameters() if p.requires_grad]
        (rows, positions), sources = input_drives.shape[:2], encoder_out["padding_mask"].size(1)
        # the loop's time grows with its steps (target positions), barely with its width
        shape = (bucket(rows), bucket(positions, coarse=False), bucket(sources))
        try:
            found = self._bucket(recur, names, inputs, parameters, shape)
        except RuntimeError as error:  # recording failed: without graphs from now on
            self.failed = (str(error).strip() or type(error).__name__).splitlines()[0]
        if self.failed:  # outside the handler, then warned: a bug in an edit raises alone
            self.buckets, result = OrderedDict(), recur(input_drives, encoder_out, cache)
            what = f"{type(decoder).__name__}'s recurrence could not be recorded as a CUDA graph"
            logger.warning("%s (%s): it runs without graphs", what, self.failed)
            return result
        states, contexts, *alphas = Replayed.apply(found, positions, sources, *inputs, *parameters)
        return states[:, :positions], contexts, (alphas or [None])[0], states[:, positions]

    def _bucket(self, recur, names, inputs, parameters, shape) -> Bucket:
        decoder = recur.__self__
        key = (
            shape,
            tuple((n, t.dtype, t.shape[2:], t.requires_grad) for n, t in zip(names, inputs)),
            tuple(t.data_ptr() for t in (*decoder.parameters(), *decoder.buffers())),
            compiling.code_of(decoder),
            torch.backends.cuda.matmul.fp32_precision,  # TF32 or not, by either API
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        )
        found = self.buckets.get(key)
        if found is not None and found.generation == found.arena.generation:
            self.buckets.move_to_end(key)
            return found
        for stale in [k for k, b in self.buckets.items() if b.generation != b.arena.generation]:
            del self.buckets[stale]
        start = time.perf_counter()
        found = self.buckets[key] = Bucket(recur, names, inputs, parameters, shape)
        what = f"{type(decoder).__name__}.recur as CUDA graphs for {' x '.join(map(str, shape))}"
        seconds = time.perf_counter() - start
        logger.info("recorded %s (rows, target and source positions) in %.1f s", what, seconds)
        while len(self.buckets) > MOST_BUCKETS:
            self.buckets.popitem(last=False)
        return found


def _named_inputs(input_drives, encoder_out, cache) -> Tuple[List[str], List[Tensor]]:
    """The tensors ``recur`` reads: "drives", "e.NAME" of encoder_out, "c.NAME" of the cache."""
    named = [("drives", input_drives)]
    for prefix, entries in (("e.", encoder_out), ("c.", cache)):
        named += [(prefix + k, v) for k, v in sorted(entries.items()) if isinstance(v, Tensor)]
    return [name for name, _ in named], [tensor for _, tensor in named]


def applies(input_drives: Tensor) -> bool:
    """Whether a call of ``recur`` is replayed from graphs (not within code being compiled)."""
    eager = torch.compiler.is_compiling() or setting.eager() or torch.is_autocast_enabled("cuda")
    return input_drives.is_cuda and torch.is_grad_enabled() and not eager


def captured(recur: Callable) -> Callable:
    """``recur``, a decoder's bound method, replayed from CUDA graphs where ``applies`` and no
    hook or mode would miss a replay's operations (``compiling.interposed``)."""

    def run(input_drives, encoder_out, cache):
        if applies(input_drives) and compiling.interposed(recur.__self__) is None:
            captures = _CAPTURES.setdefault(recur.__self__, Captures())
            if not captures.failed:
                return captures.run(recur, input_drives, encoder_out, cache)
        return recur(input_drives, encoder_out, cache)

    return run
