"""nn.Linear whose float32 products run through oneDNN on CPU, where that is faster.

torch computes a CPU float32 ``F.linear`` with ATen's GEMM (MKL's), which is slower than oneDNN's
on some CPUs and faster on others (on the machines measured: slower on an AMD EPYC with AVX-512,
faster on an AVX2-only one; docs/performance.md, "What holds where, and why", and
docs/performance-log.md, 2026-11-24, issue 19): so each product's library is chosen by timing both
at its shapes (``onednn_is_faster``, by measured_choice's rule). oneDNN's linear kernel is torch's
own (the one torch.compile uses on CPU); this module calls it in the forward pass and for both
products of the backward pass. Anything else (CUDA, other dtypes, autocast, strided weights,
oneDNN disabled or absent, the fast path set to plain) goes to ``F.linear``. Same parameters and
state-dict keys as nn.Linear; values equal within float32 rounding.

A model prepared for generation only (fairseq's ``make_generation_fast_``, which fairseq-generate,
fairseq-interactive and the hub interface call) keeps its large weights reordered into oneDNN's
blocked layout once, for the products without gradient (``keep_packed_for_generation``): for
those, oneDNN with the packed weight is what is timed against ATen.
"""

import functools
import os
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable
from torch.utils.weak import WeakIdKeyDictionary

from .measured_choice import CHOOSER, probe

_ONEDNN_LINEAR = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
_ONEDNN_REORDER_WEIGHT = getattr(getattr(torch.ops, "mkldnn", None), "_reorder_linear_weight", None)

# oneDNN compiles a kernel for each shape and caches up to 1024 of them; ideep, torch's layer over
# it, keeps another 1024 of its own objects around them. Sentence lengths and finished beams change
# the row count from batch to batch and step to step, so with those defaults memory grows with every
# new row count. oneDNN's cache of 16 keeps the speed; ideep's adds none (the measurements:
# docs/performance-log.md, 2026-11-21 to 2026-11-23).
ONEDNN_CACHE_SIZES = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "16", "LRU_CACHE_CAPACITY": "1"}


def _onednn_linear(input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """input (rows x in, contiguous) . weight^T (weight: out x in, contiguous or a transposed view)
    + bias."""
    return _ONEDNN_LINEAR(input, weight, bias, "none", [], "")


# The weights of modules prepared for generation (fairseq's make_generation_fast_, which also makes
# their model refuse training), each with (its version, its storage, its copy in oneDNN's layout)
# once a product has used it.
_generation_weights = WeakIdKeyDictionary()


# Weights smaller than this are left to oneDNN's reorder at each product. The output layer's
# (9,642 x 256 in the benchmark's model) is the one whose reorder costs most of its product at
# beam-search row counts; packing the smaller ones too (at most 768 x 512 there) gained little and
# raised fairseq-generate's peak memory, as oneDNN's threads then allocate in heaps of their own
# (docs/performance-log.md, 2026-11-23, d52d788).
PACKED_WEIGHT_MIN_ELEMENTS = 1 << 20


def keep_packed_for_generation(weight: Tensor) -> None:
    """From now on, products without gradient that run through oneDNN read ``weight``, if it has at
    least PACKED_WEIGHT_MIN_ELEMENTS, from a copy reordered into oneDNN's blocked layout once,
    instead of oneDNN reordering the plain weight at every call; whether they run through oneDNN so
    is measured against ATen (``onednn_is_faster`` with ``packed``). In a beam search each decoder
    product runs once per target word on a few rows, and for a large weight that reorder is most of
    its cost (docs/performance-log.md, 2026-11-23, d52d788). The copy is made on first use and made
    again when the weight is written in place (its version changes) or replaced (its storage
    changes)."""
    if weight.numel() >= PACKED_WEIGHT_MIN_ELEMENTS:
        _generation_weights.setdefault(weight, None)


def kept_packed(weight: Tensor) -> bool:
    """Whether products without gradient may read a packed copy of ``weight``."""
    return _ONEDNN_REORDER_WEIGHT is not None and weight in _generation_weights and _packing_works()


def _packed(weight: Tensor) -> Tensor:
    """The packed copy of a weight kept for generation (``kept_packed``)."""
    entry = _generation_weights[weight]
    if entry is None or entry[:2] != (weight._version, weight.data_ptr()):
        entry = (weight._version, weight.data_ptr(), _ONEDNN_REORDER_WEIGHT(weight.detach(), None))
        _generation_weights[weight] = entry
    return entry[2]


# A product is timed on the model's own shapes, cut to at most PROBE_ROWS rows (past a few hundred
# rows its rate no longer depends on the count). With gradients, its outputs are cut too (down to
# PROBE_MIN_OUTPUTS) to at most PROBE_MULTIPLY_ADDS: a training product multiplies hundreds of rows
# and runs at its arithmetic's rate, which a slice of the weight's outputs shares. Without
# gradients (a beam search, a few rows at every step) a product also reads its whole weight,
# which a slice would not: the whole weight is kept and the rows cut to PROBE_MULTIPLY_ADDS_FORWARD.
# Each probe takes at most a few milliseconds, so that all the choices of a model fit the budget.
PROBE_ROWS = 256
PROBE_MIN_OUTPUTS = 128
PROBE_MULTIPLY_ADDS = 1 << 24
PROBE_MULTIPLY_ADDS_FORWARD = 1 << 28


def row_class(rows: int) -> int:
    """Row counts timed as one: the power of two at or above ``rows``, up to PROBE_ROWS."""
    return min(1 << max(rows - 1, 0).bit_length(), PROBE_ROWS)


def _probe_tensors(features_out: int, features_in: int, rows: int, training: bool):
    rows = min(rows, PROBE_ROWS)
    budget = PROBE_MULTIPLY_ADDS if training else PROBE_MULTIPLY_ADDS_FORWARD
    if training:
        features_out = min(features_out, max(PROBE_MIN_OUTPUTS, budget // (features_in * rows)))
    rows = max(1, min(rows, budget // (features_in * features_out)))
    generator = torch.Generator().manual_seed(0)  # not torch's, whose draws training repeats
    x = torch.rand(rows, features_in, generator=generator, requires_grad=training)
    weight = torch.rand(features_out, features_in, generator=generator, requires_grad=training)
    return x, weight, torch.rand(rows, features_out, generator=generator)


def onednn_is_faster(
    features_out: int, features_in: int, rows: int, training: bool, packed: bool = False
) -> bool:
    """Whether a product of ``rows`` rows by a features_out x features_in weight (forward and, when
    ``training``, backward) is faster through oneDNN than through ATen, here (measured once).
    ``packed``: without gradients, oneDNN reads the weight from a copy packed in its layout (a
    weight kept for generation): the choice then weighs packing too."""

    def probes():
        x, weight, upstream = _probe_tensors(features_out, features_in, rows, training)

        def run(product):
            return probe(lambda: product(x, weight), (x, weight), training, upstream)

        if packed:
            packed_weight = _ONEDNN_REORDER_WEIGHT(weight, None)
            return (lambda: [_onednn_linear(x, packed_weight, None)]), run(F.linear)
        return run(lambda x, w: _OneDNNLinear.apply(x, w, None)), run(F.linear)

    passes = "forward and backward" if training else "forward"
    choice = ("products", features_in, "->", features_out, "x", row_class(rows), "rows,", passes)
    if packed:
        choice += ("(weight packed for generation)",)
    names = ("oneDNN, packed weight" if packed else "oneDNN", "ATen")
    return CHOOSER.fast(choice, probes, names=names)


def limit_onednn_caches() -> None:
    """Read when oneDNN first runs, so this must come before; a value the user set is kept."""
    for variable, size in ONEDNN_CACHE_SIZES.items():
        os.environ.setdefault(variable, size)


@functools.lru_cache(maxsize=None)
def _onednn_linear_works() -> bool:
    """Whether this torch build has the kernels (a product; a product with an addition) and they run
    on this CPU (asked once, on a tiny product)."""
    if _ONEDNN_LINEAR is None or not torch.backends.mkldnn.is_available():
        return False
    x, weight = torch.arange(6.0).view(2, 3), torch.arange(12.0).view(4, 3)
    addend = torch.ones(2, 4)
    try:
        return torch.equal(_onednn_linear(x, weight, None), F.linear(x, weight)) and torch.equal(
            _ONEDNN_LINEAR.binary(x, addend, weight, None, "add"), F.linear(x, weight) + addend
        )
    except (RuntimeError, AttributeError):  # AttributeError: a build without the addition's kernel
        return False


@functools.lru_cache(maxsize=None)
def _packing_works() -> bool:
    """Whether this torch build reorders a weight for oneDNN and multiplies with the copy (asked
    once, on a tiny product)."""
    x, weight = torch.arange(6.0).view(2, 3), torch.arange(12.0).view(4, 3)
    try:
        return torch.equal(
            _onednn_linear(x, _ONEDNN_REORDER_WEIGHT(weight, None), None), F.linear(x, weight)
        )
    except RuntimeError:
        return False


def _cpu_autocast_enabled() -> bool:
    try:
        return torch.is_autocast_enabled("cpu")
    except TypeError:  # torch < 2.4 asks for the CPU by name
        return torch.is_autocast_cpu_enabled()


def runs_in_cpu_float32(*tensors: Tensor) -> bool:
    """The fast path's rule: it is not set to plain, oneDNN is on and works here, and the
    computation is float32 on the CPU with autocast off (autocast chooses the precision itself)."""
    return (
        CHOOSER.setting != "plain"
        and torch.backends.mkldnn.enabled
        and not _cpu_autocast_enabled()
        and all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)
        and _onednn_linear_works()
    )


def uses_onednn(input: Tensor, weight: Tensor) -> bool:
    return (
        runs_in_cpu_float32(input, weight)
        and weight.is_contiguous()  # oneDNN refuses some strided weights (slices of a matrix)
        and input.numel() > 0
        and input.size(-1) == weight.size(1)  # otherwise F.linear's error says what is wrong
    )


def onednn_weight_gradient(grad_output: Tensor, input: Tensor) -> Tensor:
    """g^T x (rows x out, rows x in: out x in), computed as (x^T g)^T, a product oneDNN takes
    without copying g."""
    return _onednn_linear(input.t().contiguous(), grad_output.t(), None).t()


class _OneDNNLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        return _onednn_linear(input, weight, bias)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output: Tensor):
        input, weight = ctx.saved_tensors
        grad_output = grad_output.contiguous()
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            # g W, with W^T as a transposed view: oneDNN takes that layout, and a copy of W^T at
            # every call costs more than the product itself for the decoder's recurrent layers
            # (docs/performance-log.md, 2026-11-21 to 2026-11-23)
            grad_input = _onednn_linear(grad_output, weight.t(), None)
        if ctx.needs_input_grad[1]:
            grad_weight = onednn_weight_gradient(grad_output, input)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(dim=0)
        return grad_input, grad_weight, grad_bias


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """F.linear, through oneDNN where it applies and is faster."""
    if not uses_onednn(input, weight):
        return F.linear(input, weight, bias)
    rows = input.numel() // input.size(-1)
    training = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (input, weight, bias)
    )
    packed = not training and kept_packed(weight)
    if not onednn_is_faster(*weight.shape, rows, training, packed):
        return F.linear(input, weight, bias)
    if not training:  # oneDNN's kernel takes any number of dimensions: one operator
        return _onednn_linear(_contiguous(input), _packed(weight) if packed else weight, bias)
    output = _OneDNNLinear.apply(rows_of(input), weight, bias)
    return output if input.dim() == 2 else output.view(*input.shape[:-1], weight.size(0))


def _contiguous(input: Tensor) -> Tensor:
    """With as few operators as it takes: each costs a few microseconds, which a beam-search step
    pays for every product."""
    return input if input.is_contiguous() else input.contiguous()


def rows_of(input: Tensor) -> Tensor:
    """``input`` as a contiguous matrix of rows."""
    return _contiguous(input if input.dim() == 2 else input.reshape(-1, input.size(-1)))


class OneDNNLinear(nn.Linear):
    """nn.Linear, through oneDNN where it applies and is faster: the layer that takes the place of
    each nn.Linear of a model (modules/fast_path.py) where the fast path is on."""

    @classmethod
    def holding(cls, layer: nn.Linear) -> "OneDNNLinear":
        """A OneDNNLinear holding ``layer``'s parameters (modules/fast_path.py)."""
        faster = cls(layer.in_features, layer.out_features, layer.bias is not None, device="meta")
        faster.weight, faster.bias = layer.weight, layer.bias
        return faster

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias)

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model for generation only (fairseq-generate,
        fairseq-interactive, the hub interface), after which it refuses to train."""
        keep_packed_for_generation(self.weight)


class Product:
    """x W^T (+ an addend) for one weight W (out x in), with the addition folded into the product
    (ATen's addmm, oneDNN's binary post-op): one operator. For the written-out recurrences, whose
    steps call it directly: on a CPU in float32 by the library measured faster for its shapes
    (``onednn_is_faster``), on any other device or precision by ATen's."""

    def __init__(self, weight: Tensor, rows: int, training: bool):
        # without gradients, oneDNN may read a packed copy (a model prepared for generation)
        packed = not training and kept_packed(weight)
        self.onednn = runs_in_cpu_float32(weight) and onednn_is_faster(
            *weight.shape, rows, training, packed
        )
        self.weight = weight
        self.forward_weight = _packed(weight) if packed and self.onednn else weight

    @functools.cached_property
    def weight_t(self) -> Tensor:
        return self.weight.t()  # made when first needed: an operator of its own

    def __call__(self, x: Tensor, addend: Optional[Tensor] = None) -> Tensor:
        """x W^T (+ addend)."""
        if self.onednn:
            return _onednn_product(x, self.forward_weight, addend)
        return (
            torch.mm(x, self.weight_t) if addend is None else torch.addmm(addend, x, self.weight_t)
        )

    def transposed(self, g: Tensor, addend: Optional[Tensor] = None) -> Tensor:
        """g W (+ addend): what the backward pass multiplies an output gradient by."""
        if self.onednn:
            return _onednn_product(g, self.weight_t, addend)
        return torch.mm(g, self.weight) if addend is None else torch.addmm(addend, g, self.weight)

    def weight_gradient(self, grad_output: Tensor, input: Tensor) -> Tensor:
        """g^T x summed over every row of both (... x out and ... x in): W's gradient."""
        grad_output = grad_output.reshape(-1, grad_output.size(-1))
        input = input.reshape(-1, input.size(-1))
        if self.onednn:
            # oneDNN's fast kernels want g^T, its weight here, as a transposed dense matrix: a view
            # with longer rows (a slice of the recurrence's gradients) falls to a far slower kernel
            # (docs/performance-log.md, 2026-11-24, issue 19)
            return onednn_weight_gradient(grad_output.contiguous(), input)
        return torch.mm(grad_output.t(), input)


def _onednn_product(x: Tensor, weight: Tensor, addend: Optional[Tensor]) -> Tensor:
    if addend is None:
        return _onednn_linear(x, weight, None)
    return _ONEDNN_LINEAR.binary(x, addend, weight, None, "add")
