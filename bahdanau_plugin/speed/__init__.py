"""The fast path: the same model, computed faster where that is exact, on a CPU and on a GPU.

The modules (``bahdanau_plugin/modules``) are written as the paper's equations with ordinary torch
layers, and run as such on every device and in every precision. This package computes parts of
them faster (docs/performance.md, docs/gpu.md), plugged in by registration
(``modules/fast_path.py``) when the plugin is imported. What each part serves:

- both devices: the decoders' recurrence (Eqs. 4 to 6 of A.2.2) written out once,
  ``recurrence.py`` (few operators per target position, its backward pass written out, each
  weight's gradient one product after the loop), given to the decoders as fused forms of their
  ``recur`` (``decoder.py``: ``FusedAttentionRecurrence`` for RNNsearch,
  ``FusedFixedContextRecurrence`` for RNNencdec), each checked against the modules' own code on the
  model's device before it runs (``checks.py``);
- the CPU, in float32 (``cpu/``): oneDNN's products where timed faster (``OneDNNLinear`` for
  nn.Linear, ``Product`` in the recurrence), nn.GRU's loop in Python over them (``OneDNNGRU``), the
  energies through tanh(x) = 2 sigmoid(2x) - 1 where that is faster, the deep output without
  gradients with its sums folded into its products (``FusedDeepOutput``), each choice made by
  timing both computations once per process (``cpu/measured_choice.py``), and freed memory kept
  for reuse by fairseq-train (``cpu/freed_memory.py``);
- the GPU, in any precision with autocast off (``cuda/``): the recurrence's passes with gradients
  replayed from CUDA graphs recorded per bucket of shapes (``cuda/graphs.py``).

Where a fused form no longer computes what the modules compute (an edited module), it steps aside
with one warning naming the part, and the model runs as plain PyTorch there; so it does while a
module it bypasses has a forward hook. ``BAHDANAU_FAST_PATH=plain`` (``setting.py``) builds none
of it. The parameters, their names and the checkpoints are the modules'. tests/bahdanau_plugin/speed
holds each fast computation against the plain one.
"""

from torch import nn

from ..modules import fast_path
from .cpu.deep_output import FusedDeepOutput
from .cpu.gru import OneDNNGRU
from .cpu.measured_choice import CHOOSER
from .cpu.onednn_linear import OneDNNLinear
from .decoder import FusedAttentionRecurrence, FusedFixedContextRecurrence

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
