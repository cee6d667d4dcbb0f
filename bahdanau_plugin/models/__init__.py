from .rnnencdec import RNNencdecModel
from .rnnsearch import RNNsearchModel
from . import skipped_pairs  # noqa: F401  (explains a split fairseq-train skips whole)

__all__ = ["RNNencdecModel", "RNNsearchModel"]
