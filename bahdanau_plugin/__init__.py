"""bahdanau-fairseq: RNNsearch and RNNencdec (Bahdanau, Cho & Bengio, ICLR 2015) for fairseq.

Pass this folder to fairseq with ``--user-dir``. Importing it registers the models and makes the
changes to fairseq and Python listed, each with its reason, in fairseq_patches.py: checkpoints load
under torch's safe (weights-only) unpickler, the plugin's errors print as one line,
fairseq-generate translates every test sentence, --replace-unk replaces unknown words from the
attention, fairseq-interactive survives invalid UTF-8 input and lines over --max-source-positions and
drops a byte-order mark, a run stopped mid-epoch exits cleanly, and oneDNN's kernel caches are
bounded. None of them changes
what fairseq-train computes.
"""

from . import models  # noqa: F401  (registers rnnsearch, rnnencdec and their architectures)
from .fairseq_patches import apply_all

apply_all()
