"""The fast path: the modules' own code (``bahdanau_plugin/modules``) made fast by compiling and
capturing it, never written a second time, asked for in two visible places of the decoder:
``compiled(self.step)`` in ``recur`` and ``compiled(self.next_words)`` in a search (torch.compile,
``compiling.py``); ``captured(self.recur)``, on a GPU in training its loop replayed from CUDA
graphs (``capture.py``). An edit is compiled and captured like the original; ``plain`` runs the
code eagerly (``setting.py``). What each costs and gains: docs/performance.md, docs/gpu.md.
"""

from .capture import captured
from .compiling import compiled

__all__ = ["captured", "compiled"]
