"""nn.Linear whose float32 products run through oneDNN on CPU.

torch computes a CPU float32 ``F.linear`` with MKL's GEMM, which on AMD CPUs runs about half as fast
as oneDNN's (measured: docs/performance.md, ``bench/kernels.py``); fairseq's lstm already reaches
oneDNN through its fused LSTM encoder. oneDNN's linear kernel is torch's own (the one torch.compile
uses on CPU); this module calls it in the forward pass and for both products of the backward pass.
Anything else (CUDA, other dtypes, autocast, strided weights, oneDNN disabled or absent) goes to
``F.linear``. Same parameters and state-dict keys as nn.Linear; values equal within float32
rounding.
"""

import functools
import os
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

_ONEDNN_LINEAR = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)

# oneDNN compiles a kernel for each shape and caches up to 1024 of them, about 0.6 MiB each; ideep,
# torch's layer over it, keeps another 1024 of its own objects around them. Sentence lengths and
# finished beams change the row count from batch to batch and step to step: with those defaults a
# training run grew by about 280 MiB and fairseq-generate by 130 to 240 MiB. oneDNN's cache of 16
# keeps the speed; ideep's adds none (docs/performance.md).
ONEDNN_CACHE_SIZES = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "16", "LRU_CACHE_CAPACITY": "1"}


def _onednn_linear(input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """input (rows x in, contiguous) . weight^T (weight: out x in, contiguous or a transposed view) + bias."""
    return _ONEDNN_LINEAR(input, weight, bias, "none", [], "")


def limit_onednn_caches() -> None:
    """Read when oneDNN first runs, so this must come before; a value the user set is kept."""
    for variable, size in ONEDNN_CACHE_SIZES.items():
        os.environ.setdefault(variable, size)


@functools.lru_cache(maxsize=None)
def _onednn_linear_works() -> bool:
    """Whether this torch build has the kernel and it runs on this CPU (asked once, on a tiny product)."""
    if _ONEDNN_LINEAR is None or not torch.backends.mkldnn.is_available():
        return False
    x, weight = torch.arange(6.0).view(2, 3), torch.arange(12.0).view(4, 3)
    try:
        return torch.equal(_onednn_linear(x, weight, None), F.linear(x, weight))
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
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (input, weight, bias)):
        output = _OneDNNLinear.apply(rows, weight, bias)
    else:
        output = _onednn_linear(rows, weight, bias)
    return output.view(*input.shape[:-1], weight.size(0))


class OneDNNLinear(nn.Linear):
    """nn.Linear, through oneDNN where it applies (the fast path swaps it in for nn.Linear)."""

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias)
