"""bahdanau-fairseq: RNNsearch and RNNencdec (Bahdanau, Cho & Bengio, ICLR 2015) for fairseq.

Pass this folder to fairseq with ``--user-dir``. Importing it registers the models, lets fairseq's
checkpoints load under torch's safe (weights-only) unpickler and explains the ones that cannot
load, stops fairseq from silently dropping the last few sentences of a test set, keeps
fairseq-interactive serving when a line of its input is not valid UTF-8, and parks fairseq's
background batch reader when the interpreter exits (a run stopped mid-epoch could abort). It also
bounds oneDNN's kernel caches, which the models' linear layers use on CPU (modules/linear.py).
"""

from . import models  # noqa: F401  (registers rnnsearch, rnnencdec and their architectures)
from .checkpoint_safety import allow_fairseq_checkpoint_types, explain_checkpoint_errors
from .errors import print_plugin_errors_as_one_line
from .fairseq_fixes import keep_last_batch, stop_background_loading_at_exit, tolerate_invalid_utf8_input
from .modules.linear import limit_onednn_caches

limit_onednn_caches()
print_plugin_errors_as_one_line()
allow_fairseq_checkpoint_types()
explain_checkpoint_errors()
keep_last_batch()
tolerate_invalid_utf8_input()
stop_background_loading_at_exit()
