"""The fast path: the modules' own code (``bahdanau_plugin/modules``), made fast by compiling and
capturing it, never written a second time.

The decoder asks for it in two visible places (``modules/conditional_decoder.py``):

- ``compiled(self.step)``, in ``recur``: one target position's step (the alignment model, Eqs. 5
  and 6, and the conditional GRU, Eq. 4) compiled by torch.compile, on a CPU and on a GPU, in
  training and in a beam search (``compiling.py``);
- ``captured(self.recur)``, in ``features``: on a GPU in training, the loop over the
  target positions replayed from CUDA graphs recorded per bucket of shapes (``capture.py``).

What runs is the modules' code as their classes define it when it runs: an edit to a module is
compiled and captured like the original, and a forward hook makes the step run eagerly while it is
there. ``BAHDANAU_FAST_PATH=plain`` (``setting.py``) runs the same code eagerly. Where nothing can
compile (no C++ compiler, no Triton) or compiling fails, the step runs eagerly after one warning.
What each costs and gains: docs/performance.md (CPU), docs/gpu.md (GPU).
"""

from .capture import captured
from .compiling import compiled

__all__ = ["captured", "compiled"]
