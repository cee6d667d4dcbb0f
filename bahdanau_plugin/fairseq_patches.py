"""Every change that importing the plugin makes to fairseq, torch and Python, and why: CHANGES.

The plugin extends fairseq the way fairseq extends itself: it registers its models, a task
(``--task translation_with_source_words``, tasks/) and a hub interface (hub_interface.py), and
the project's commands pass fairseq's own options (``--required-batch-size-multiple 1``,
``--skip-invalid-size-inputs-valid-test``, ``--data-buffer-size 0``: docs/fairseq_changes.md says
why). What no registration or option can do is below, made by ``apply_all`` (which
bahdanau_plugin/__init__.py calls) the same however often the plugin is imported. None of them
changes what fairseq computes, for these models or any other.
"""

import codecs
import io
import sys

import torch

from .checkpoint_safety import FAIRSEQ_CHECKPOINT_TYPES
from .cpu_fast_path import limit_onednn_caches
from .errors import print_errors_as_one_line


def allow_fairseq_checkpoint_types() -> None:
    """torch >= 2.6 loads with weights_only=True, which refuses the argparse.Namespace that fairseq
    checkpoints hold; allow-listing that one type keeps safe loading on (checkpoint_safety.py).
    torch's own registration: there is no per-call option, since fairseq calls torch.load."""
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is not None:  # torch < 2.4 has no weights-only default to satisfy
        add_safe_globals(list(FAIRSEQ_CHECKPOINT_TYPES))


def decode_standard_input_leniently() -> None:
    """fairseq-interactive reads sys.stdin as it finds it. Under a strict UTF-8 decoder
    (PYTHONIOENCODING=utf-8, say) one line of invalid bytes ends the whole session; and UTF-8 keeps
    the byte-order mark that Windows editors write, glued to the first word, which then reads
    <unk>. Standard input in UTF-8 is read as utf-8-sig instead, which drops that mark, with
    undecodable bytes becoming U+FFFD (<unk>): the line is translated like any other. fairseq has
    no option for the input's decoding, and no task sees the lines before they are decoded."""
    stdin = sys.stdin
    if not isinstance(stdin, io.TextIOWrapper) or codecs.lookup(stdin.encoding).name != "utf-8":
        return
    errors = "replace" if stdin.errors == "strict" else stdin.errors
    try:
        stdin.reconfigure(encoding="utf-8-sig", errors=errors)
    except io.UnsupportedOperation:  # something has read from it already: too late for the mark
        stdin.reconfigure(errors=errors)


CHANGES = (
    # os.environ: ONEDNN_PRIMITIVE_CACHE_CAPACITY=16 and LRU_CACHE_CAPACITY=1 unless set; torch's
    # defaults (1,024 kernels each) cost up to 280 MiB for no speed
    # (cpu_fast_path/onednn_linear.py).
    # They must be set before oneDNN starts, so at import: no option or hook comes early enough.
    limit_onednn_caches,
    # sys.excepthook: a command that ends with an error the plugin explains (errors.py) prints one
    # line instead of a traceback. fairseq has no hook for how its commands print errors.
    print_errors_as_one_line,
    allow_fairseq_checkpoint_types,  # torch.serialization.add_safe_globals([argparse.Namespace])
    decode_standard_input_leniently,  # sys.stdin's decoding: utf-8-sig, errors="replace"
)


def apply_all() -> None:
    for change in CHANGES:
        change()
