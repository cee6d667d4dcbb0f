"""The alignment model's precision: float32 (float64 if the model is), whatever precision the rest
of the model runs in. The one place where the modules handle precision.

At the paper's initialization (W_a, U_a ~ N(0, 0.001^2), v_a = 0) W_a s_{i-1} + U_a h_j is tiny
and so is the gradient of v_a: in bfloat16 the energies round to noise, in float16 that gradient
underflows, and the alignment would not learn (docs/precision.md). So a ``FullPrecisionModule``
keeps its parameters and their gradients in full precision through conversions to half precision,
and its methods marked ``@in_own_precision`` compute with autocast off, on inputs cast to that
precision; its caller casts the results back.
"""

import contextlib
import functools

import torch
from torch import Tensor, nn

HALF_PRECISIONS = (torch.float16, torch.bfloat16)


class FullPrecisionModule(nn.Module):
    @property
    def precision(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def own_precision(self, tensor: Tensor) -> Tensor:
        """``tensor`` in this module's precision: under half precision a copy, which a caller may
        make once per sentence (as U_a h_j is made) rather than at every target position, where
        each copy would also be kept for the backward pass."""
        return tensor.to(self.precision)

    def _apply(self, fn, recurse=True):
        """Conversions to half precision (model.half(), .bfloat16(), .to(dtype); fairseq's --fp16
        and --bf16) leave these parameters as they are, bit for bit; moves between devices and
        conversions to other precisions apply as usual."""
        return super()._apply(_keeping_full_precision(fn), recurse)


def in_own_precision(method):
    """The method of a ``FullPrecisionModule``, with autocast off and each floating-point tensor
    argument in the module's precision (no copy where it already is)."""

    @functools.wraps(method)
    def computed(module: FullPrecisionModule, *inputs):
        precision = module.precision
        inputs = [
            value.to(precision)
            if isinstance(value, Tensor) and value.is_floating_point()
            else value
            for value in inputs
        ]
        with _autocast_off(inputs[0]):
            return method(module, *inputs)

    return computed


def _keeping_full_precision(fn):
    """fn, except that a tensor it would turn into half precision keeps its values and precision
    (converting and converting back would round them: a weight of 1e-8 would become 0)."""

    def apply(tensor: Tensor) -> Tensor:
        converted = fn(tensor)
        if converted.dtype in HALF_PRECISIONS and tensor.dtype not in HALF_PRECISIONS:
            return tensor.to(converted.device)
        return converted

    return apply


def _autocast_off(tensor: Tensor):
    """Turns autocast off where it is on (entering torch.autocast costs time at every step)."""
    device = tensor.device.type
    if not torch.is_autocast_enabled(device):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, enabled=False)
