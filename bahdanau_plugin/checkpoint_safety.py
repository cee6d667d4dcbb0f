"""Safe, explained checkpoint loading.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True``: only tensors, containers and
primitive types may be unpickled. fairseq 0.12 checkpoints also hold ``argparse.Namespace``
objects (the configuration of legacy-argument components, such as the ``adadelta`` optimizer or
the ``args`` of older checkpoints), so fairseq-train --restore-file, fairseq-generate and
fairseq-interactive would refuse them. Allow-listing exactly that type keeps safe loading on:
a pickle that calls any other global (``os.system``, say) is still refused by torch
(fairseq_patches.allow_fairseq_checkpoint_types).

fairseq's own errors for an unreadable checkpoint are torch internals ("PytorchStreamReader failed
reading zip archive") or a page of unpickler advice; a command that ends with one prints a line
that names the file and says what to do instead (``unreadable_checkpoint``, one of errors.py's
explanations).
"""

import argparse
import re
import traceback
import zipfile
from typing import Optional

from fairseq import checkpoint_utils

from . import errors

FAIRSEQ_CHECKPOINT_TYPES = (argparse.Namespace,)


def explain_load_error(path, error: Exception):
    """One line for a checkpoint torch could not load, or None for errors of another kind."""
    refused = re.search(
        r"unsupported (?:global: )?GLOBAL ([\w.]+)", str(error), flags=re.IGNORECASE
    )
    if refused:
        return (
            f"refused to load {path}: its pickle calls {refused.group(1)}, which no fairseq "
            f"checkpoint holds, so it could run code; load only checkpoints you trust"
        )
    if not isinstance(error, FileNotFoundError) and not zipfile.is_zipfile(path):
        # torch has saved checkpoints as zip archives since 1.6; a cut one loses its directory.
        return (
            f"cannot read checkpoint {path}: the file is incomplete or not a torch checkpoint "
            f"(was it truncated while copying or saving?); use an intact copy"
        )
    return None


def unreadable_checkpoint(error: BaseException) -> Optional[str]:
    """explain_load_error for an error raised while fairseq's load_checkpoint_to_cpu was reading a
    file: the path is that call's argument, read from the error's traceback."""
    loading = checkpoint_utils.load_checkpoint_to_cpu.__code__
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code is loading and isinstance(error, Exception):
            return explain_load_error(frame.f_locals["path"], error)
    return None


errors.EXPLANATIONS.append(unreadable_checkpoint)
