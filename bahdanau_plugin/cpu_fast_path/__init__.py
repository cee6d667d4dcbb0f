"""The CPU float32 speed path: the same model, computed faster where that is exact.

The modules (``bahdanau_plugin/modules``) are written as the paper's equations with ordinary torch
layers, and run as such on every device and in every precision. On a CPU in float32 these parts
have faster equivalents (docs/performance.md):

- ``decoder.FastRNNsearchDecoder`` / ``FastRNNencdecDecoder``: the decoder's recurrence (Eqs. 4 to
  6 of A.2.2) as one autograd function with its backward pass written out
  (``decoder_recurrence``), so a target position dispatches a third of the operators;
- ``onednn_linear.OneDNNLinear`` for nn.Linear: oneDNN's products instead of ATen's (MKL), and in
  a model prepared for generation (fairseq's ``make_generation_fast_``) large weights kept in
  oneDNN's layout instead of reordered at every product of the beam search;
- ``gru.OneDNNGRU`` for the encoder's nn.GRU: nn.GRU's equations with those products, in a loop
  written in Python;
- ``attention.FastBahdanauAttention`` for the alignment model: tanh(x) as 2 sigmoid(2x) - 1, and
  its B x S x n' activations recomputed in the backward pass;
- ``maxout_output.FastMaxoutOutput`` for the deep output without gradients: its sums folded into
  its products;
- ``freed_memory``: from a process's first training step, glibc's malloc keeps the large blocks a
  step frees for the next step, instead of mapping and zeroing them afresh at every step.

Which library or loop is faster depends on the CPU, the libraries, the thread count and the shapes,
and CPU flags do not predict it; so each such choice is made by timing both once per process
(``measured_choice``, one rule, ``BAHDANAU_CPU_FAST_PATH=auto|fast|plain``).

``install`` swaps these classes in when a model is built. Each one decides at every call, by one
rule (``onednn_linear.runs_in_cpu_float32``: CPU, float32, autocast off, oneDNN present and
working, not set to plain), whether to take the fast computation or its parent class's own
forward; so a model moved to a GPU, converted to half precision or run under autocast computes
exactly what the modules say. The parameters, their names and the checkpoints are the modules'.
tests/cpu_fast_path holds each fast computation against the plain one.
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
