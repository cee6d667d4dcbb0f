"""The CPU float32 speed path: the same model, computed faster where that is exact.

The modules (``bahdanau_plugin/modules``) are written as the paper's equations with ordinary torch
layers, and run as such on every device and in every precision. On a CPU in float32 three of their
parts have faster equivalents, measured in docs/performance.md:

- ``onednn_linear.OneDNNLinear`` for nn.Linear: products through oneDNN rather than MKL, which
  runs at about half oneDNN's rate on AMD CPUs; in a model prepared for generation (fairseq's
  ``make_generation_fast_``), each large weight read from a copy in oneDNN's layout made once
  rather than reordered at every product;
- ``gru.OneDNNGRU`` for the encoder's nn.GRU: nn.GRU's equations with those products, in a loop
  written in Python: on CPUs with AVX-512 only (``cpu_class.has_avx512``), the one choice whose
  winner differs between CPU classes;
- ``attention.FastBahdanauAttention`` for the alignment model: tanh(x) as 2 sigmoid(2x) - 1
  (torch's CPU tanh is about 10 times slower than its sigmoid), and its B x S x n' activations
  recomputed in the backward pass instead of kept for each target position.

``install`` swaps these classes in when a model is built. Each one decides at every call, by one
rule (``onednn_linear.runs_in_cpu_float32``: CPU, float32, autocast off, oneDNN present and
working), whether to take the fast computation or its parent class's own forward; so a model moved
to a GPU, converted to half precision or run under autocast computes exactly what the modules say.
The parameters, their names and the checkpoints are the modules'. tests/cpu_fast_path holds each
fast computation against the plain one.
"""

from torch import nn

from ..modules.attention import BahdanauAttention
from ..modules.maxout_output import MaxoutOutput
from .attention import FastBahdanauAttention
from .gru import OneDNNGRU
from .maxout_output import FastMaxoutOutput
from .onednn_linear import OneDNNLinear, limit_onednn_caches

FAST_CLASSES = {
    nn.Linear: OneDNNLinear,
    nn.GRU: OneDNNGRU,
    BahdanauAttention: FastBahdanauAttention,
    MaxoutOutput: FastMaxoutOutput,
}

__all__ = ["install", "limit_onednn_caches"]


def install(model: nn.Module) -> nn.Module:
    """Give each of the model's modules of a class above its fast subclass (in place: same
    parameters, same state dict; a subclass only adds a faster forward)."""
    # The fast decoders subclass the models' decoders, whose package imports this one.
    from .decoder import FastRNNencdecDecoder, FastRNNsearchDecoder

    fast_classes = {
        **FAST_CLASSES,
        FastRNNsearchDecoder.__bases__[1]: FastRNNsearchDecoder,
        FastRNNencdecDecoder.__bases__[1]: FastRNNencdecDecoder,
    }
    for module in model.modules():
        fast_class = fast_classes.get(type(module))
        if fast_class is not None:
            module.__class__ = fast_class
    return model
