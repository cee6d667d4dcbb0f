"""bahdanau-fairseq: RNNsearch and RNNencdec (Bahdanau, Cho & Bengio, ICLR 2015) for fairseq.

Pass this folder to fairseq with ``--user-dir``. Importing it registers the models, lets fairseq's
checkpoints load under torch's safe (weights-only) unpickler, and stops fairseq from silently
dropping the last few sentences of a test set.
"""

from . import models  # noqa: F401  (registers rnnsearch, rnnencdec and their architectures)
from .checkpoint_safety import allow_fairseq_checkpoint_types
from .fairseq_fixes import keep_last_batch

allow_fairseq_checkpoint_types()
keep_last_batch()
