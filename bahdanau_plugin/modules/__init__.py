"""Building blocks shared by the RNNsearch and RNNencdec models."""
