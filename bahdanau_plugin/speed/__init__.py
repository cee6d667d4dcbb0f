"""The CPU float32 fast path: the same model, computed faster where that is exact.

The modules (``bahdanau_plugin/modules``) are written as the paper's equations with ordinary torch
layers, and run as such on every device and in every precision. On a CPU in float32 this package
computes parts of them faster (docs/performance.md), plugged in by registration
(``modules/fast_path.py``) when the plugin is imported:

- leaf layers that compute a torch layer's function, which the modules get when they build one:
  ``onednn_linear.OneDNNLinear`` for nn.Linear (oneDNN's products instead of ATen's, and in a
  model prepared for generation large weights kept in oneDNN's layout) and ``gru.OneDNNGRU`` for
  nn.GRU (its equations as a Python loop over those products, its backward pass written out);
- fused forms of the modules' own computations, which a decoder is given when it is built and
  calls in place of its code: ``decoder.FusedAttentionRecurrence`` and
  ``FusedFixedContextRecurrence`` for ``ConditionalGRUDecoder.recur`` (Eqs. 4 to 6 of A.2.2 as one
  autograd function with its backward pass written out, ``decoder_recurrence``; the energies
  through tanh(x) = 2 sigmoid(2x) - 1 where that is faster), and ``deep_output.FusedDeepOutput``
  for ``MaxoutOutput`` without gradients (its sums folded into its products).

Each fused form runs only where it computes what the modules compute: checked once per model on
random inputs and parameters (``checks.py``), so that a change to ``modules/`` takes effect on the
CPU too, with one warning that names the part that no longer matches and runs as plain PyTorch.
Which library or loop is faster depends on the CPU, the libraries, the thread count and the shapes,
and CPU flags do not predict it; so each such choice is made by comparing and timing both once per
process (``measured_choice``, one rule, ``BAHDANAU_CPU_FAST_PATH=auto|fast|plain``). Everything
here decides at every call, by one rule (``onednn_linear.runs_in_cpu_float32``: CPU, float32,
autocast off, oneDNN present and working, not set to plain), whether it applies; so a model moved to
a GPU, converted to half precision or run under autocast computes exactly what the modules say.
Set to plain, nothing of it is built. The parameters, their names and the checkpoints are the
modules'. tests/cpu_fast_path holds each fast computation against the plain one.
"""

from torch import nn

from ..modules import fast_path
from .decoder import FusedAttentionRecurrence, FusedFixedContextRecurrence
from .cpu.deep_output import FusedDeepOutput
from .cpu.gru import OneDNNGRU
from .cpu.measured_choice import CHOOSER
from .cpu.onednn_linear import OneDNNLinear

FAST_PATH = fast_path.FastPath(
    layers={nn.Linear: OneDNNLinear, nn.GRU: OneDNNGRU},
    forms={
        fast_path.RECURRENCE_WITH_ATTENTION: FusedAttentionRecurrence,
        fast_path.RECURRENCE_WITH_FIXED_CONTEXT: FusedFixedContextRecurrence,
        fast_path.DEEP_OUTPUT: FusedDeepOutput,
    },
    enabled=lambda: CHOOSER.setting != "plain",
)

fast_path.register(FAST_PATH)
