from .rnnencdec import RNNencdecModel
from .rnnsearch import RNNsearchModel
from . import skipped_pairs  # noqa: F401  (explains a split fairseq-train skips whole)
from . import unregistered_model  # noqa: F401  (explains a model name nothing registers)

__all__ = ["RNNencdecModel", "RNNsearchModel"]
