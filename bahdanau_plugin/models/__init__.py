from .rnnencdec import RNNencdecModel
from .rnnsearch import RNNsearchModel

__all__ = ["RNNencdecModel", "RNNsearchModel"]
