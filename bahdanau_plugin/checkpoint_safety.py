"""Let fairseq checkpoints load under torch's weights-only unpickler, and nothing else.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True``: only tensors, containers and
primitive types may be unpickled. fairseq 0.12 checkpoints also hold ``argparse.Namespace``
objects (the configuration of legacy-argument components, such as the ``adadelta`` optimizer or
the ``args`` of older checkpoints), so fairseq-train --restore-file, fairseq-generate and
fairseq-interactive would refuse them. Allow-listing exactly that type keeps safe loading on:
a pickle that calls any other global (``os.system``, say) is still refused by torch.
"""

import argparse

import torch

FAIRSEQ_CHECKPOINT_TYPES = (argparse.Namespace,)


def allow_fairseq_checkpoint_types() -> None:
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is not None:  # torch < 2.4 has no weights-only default to satisfy
        add_safe_globals(list(FAIRSEQ_CHECKPOINT_TYPES))
