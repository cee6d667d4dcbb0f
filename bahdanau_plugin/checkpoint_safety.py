"""Safe, explained checkpoint loading.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True``: only tensors, containers and
primitive types may be unpickled. fairseq 0.12 checkpoints also hold ``argparse.Namespace``
objects (the configuration of legacy-argument components, such as the ``adadelta`` optimizer or
the ``args`` of older checkpoints), so fairseq-train --restore-file, fairseq-generate and
fairseq-interactive would refuse them. Allow-listing exactly that type keeps safe loading on:
a pickle that calls any other global (``os.system``, say) is still refused by torch.

fairseq's own errors for an unreadable checkpoint are torch internals ("PytorchStreamReader failed
reading zip archive") or a page of unpickler advice; the plugin turns them into one line that
names the file and says what to do.

fairseq_patches.py installs both when the plugin is imported.
"""

import argparse
import re
import zipfile

from .errors import CheckpointError

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


def explaining_errors(load_checkpoint_to_cpu):
    """load_checkpoint_to_cpu, raising a CheckpointError that explains what explain_load_error can."""

    def wrapper(path, *args, **kwargs):
        try:
            return load_checkpoint_to_cpu(path, *args, **kwargs)
        except Exception as error:
            explanation = explain_load_error(path, error)
            if explanation is None:
                raise
            raise CheckpointError(explanation) from None

    return wrapper
