"""nn.Linear whose float32 products run through oneDNN on CPU.

torch computes a CPU float32 ``F.linear`` with MKL's GEMM, which on AMD CPUs runs about half as fast
as oneDNN's (measured: docs/performance.md, ``bench/kernels.py``); fairseq's lstm already reaches
oneDNN through its fused LSTM encoder. oneDNN's linear kernel is torch's own (the one torch.compile
uses on CPU); this module calls it in the forward pass and for both products of the backward pass.
Anything else (CUDA, other dtypes, autocast, strided weights, oneDNN disabled or absent) goes to
``F.linear``. Same parameters and state-dict keys as nn.Linear; values equal within float32
rounding.

A model prepared for generation only (fairseq's ``make_generation_fast_``, which fairseq-generate,
fairseq-interactive and the hub interface call) keeps its large weights reordered into oneDNN's
blocked layout once, for the products without gradient: ``keep_packed_for_generation``.
"""

import functools
import os
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable
from torch.utils.weak import WeakIdKeyDictionary

_ONEDNN_LINEAR = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
_ONEDNN_REORDER_WEIGHT = getattr(getattr(torch.ops, "mkldnn", None), "_reorder_linear_weight", None)

# oneDNN compiles a kernel for each shape and caches up to 1024 of them, about 0.6 MiB each; ideep,
# torch's layer over it, keeps another 1024 of its own objects around them. Sentence lengths and
# finished beams change the row count from batch to batch and step to step: with those defaults a
# training run grew by about 280 MiB and fairseq-generate by 130 to 240 MiB. oneDNN's cache of 16
# keeps the speed; ideep's adds none (docs/performance.md).
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
# (9,642 x 256) is the one whose reorder costs most of its product at beam-search row counts;
# packing the smaller ones too (at most 768 x 512 here) gained little and raised fairseq-generate's
# peak memory by 70 to 130 MiB at beam 12, as oneDNN's threads then allocate in heaps of their own
# (docs/performance.md).
PACKED_WEIGHT_MIN_ELEMENTS = 1 << 20


def keep_packed_for_generation(weight: Tensor) -> None:
    """From now on, products without gradient read ``weight``, if it has at least
    PACKED_WEIGHT_MIN_ELEMENTS, from a copy reordered into oneDNN's blocked layout once, instead of
    oneDNN reordering the plain weight at every call. In a beam search each decoder product runs
    once per target word on a few rows, and for a large weight that reorder is most of its cost
    (docs/performance.md). The copy is made on first use and made again when the weight is written
    in place (its version changes) or replaced (its storage changes)."""
    if weight.numel() >= PACKED_WEIGHT_MIN_ELEMENTS:
        _generation_weights.setdefault(weight, None)


def _packed(weight: Tensor) -> Tensor:
    """The packed copy of a weight kept for generation, or the weight itself."""
    if _ONEDNN_REORDER_WEIGHT is None or weight not in _generation_weights or not _packing_works():
        return weight
    entry = _generation_weights[weight]
    if entry is None or entry[:2] != (weight._version, weight.data_ptr()):
        entry = (weight._version, weight.data_ptr(), _ONEDNN_REORDER_WEIGHT(weight.detach(), None))
        _generation_weights[weight] = entry
    return entry[2]


def limit_onednn_caches() -> None:
    """Read when oneDNN first runs, so this must come before; a value the user set is kept."""
    for variable, size in ONEDNN_CACHE_SIZES.items():
        os.environ.setdefault(variable, size)


@functools.lru_cache(maxsize=None)
def _onednn_linear_works() -> bool:
    """Whether this torch build has the kernel and it runs on this CPU (asked once, on a tiny
    product)."""
    if _ONEDNN_LINEAR is None or not torch.backends.mkldnn.is_available():
        return False
    x, weight = torch.arange(6.0).view(2, 3), torch.arange(12.0).view(4, 3)
    try:
        return torch.equal(_onednn_linear(x, weight, None), F.linear(x, weight))
    except RuntimeError:
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
    """The fast path's rule: oneDNN is on and works here, and the computation is float32 on the CPU
    with autocast off (autocast chooses the precision itself)."""
    return (
        torch.backends.mkldnn.enabled
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
            # (bench/kernels.py: 80 x 256 -> 768, 166 against 266 us of CPU time)
            grad_input = _onednn_linear(grad_output, weight.t(), None)
        if ctx.needs_input_grad[1]:
            # (x^T g)^T = g^T x, computed as a product oneDNN takes without copying g
            grad_weight = _onednn_linear(input.t().contiguous(), grad_output.t(), None).t()
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(dim=0)
        return grad_input, grad_weight, grad_bias


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """F.linear, through oneDNN where it applies."""
    if not uses_onednn(input, weight):
        return F.linear(input, weight, bias)
    rows = input.reshape(-1, input.size(-1)).contiguous()
    if torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (input, weight, bias)
    ):
        output = _OneDNNLinear.apply(rows, weight, bias)
    else:
        output = _onednn_linear(rows, _packed(weight), bias)
    return output.view(*input.shape[:-1], weight.size(0))


class OneDNNLinear(nn.Linear):
    """nn.Linear, through oneDNN where it applies (the fast path swaps it in for nn.Linear)."""

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias)

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model for generation only (fairseq-generate,
        fairseq-interactive, the hub interface), after which it refuses to train."""
        keep_packed_for_generation(self.weight)
