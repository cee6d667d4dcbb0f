"""The fast path: the modules' own code (``bahdanau_plugin/modules``), never written twice, made
fast where the decoder asks: ``compiled(self.step)`` in ``recur``, ``compiled(self.next_words)`` in
a search (torch.compile, ``compiling.py``); ``captured(self.recur)``, on a GPU in training its loop
replayed from CUDA graphs (``capture.py``). An edit is compiled and captured as the original;
``plain`` runs the code eagerly (``setting.py``). Costs and gains: docs/performance.md, gpu.md."""

from .capture import captured
from .compiling import compiled

__all__ = ["captured", "compiled"]
