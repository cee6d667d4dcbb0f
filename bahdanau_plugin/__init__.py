"""bahdanau-fairseq: RNNsearch and RNNencdec (Bahdanau, Cho & Bengio, ICLR 2015) for fairseq.

Pass this folder to fairseq with ``--user-dir``. Importing it registers the models (rnnsearch,
rnnencdec and their paper architectures) and the task ``translation_with_source_words``
(--replace-unk, and fairseq-interactive's lines named when left out), and makes the few changes to
fairseq, torch and Python that no option or hook can make, each with its reason, listed in
fairseq_patches.CHANGES: those that serve fairseq's command-line tools only when one of them runs.
None of them changes what fairseq computes. The models' code is compiled where it runs
(``speed/``).
"""

import logging

from . import models  # noqa: F401  (registers rnnsearch, rnnencdec and their architectures)
from . import tasks  # noqa: F401  (registers translation_with_source_words)
from . import fairseq_errors  # noqa: F401  (explains fairseq's errors for common mistakes)
from . import resuming  # noqa: F401  (explains fairseq-train's errors for a resume it cannot make)
from .fairseq_patches import apply_all
from .log_level import fairseqs_log_level

apply_all()

# Debug lines show where LOGLEVEL=DEBUG, as in fairseq's tools (whose root logger is at that level:
# fairseq_patches). In a Python program (the hub) they would show whatever the program asked, as
# importing fairseq sets the root logger to DEBUG (log_at_the_level_of_fairseqs_tools says how):
# there the plugin's loggers, and filelock's (which torch's compiler calls at every access to its
# cache on disk, a few lines each), take LOGLEVEL's level instead, never more verbose than a level
# the program set before (on the root logger, or on filelock's); after that,
# logging.getLogger(NAME).setLevel(...) decides.
if logging.getLogger().getEffectiveLevel() < fairseqs_log_level():
    logging.getLogger(__name__).setLevel(fairseqs_log_level())
    if logging.getLogger("filelock").level == logging.NOTSET:
        logging.getLogger("filelock").setLevel(fairseqs_log_level())
