"""A checkpoint whose pickle would run code when loaded: it creates a marker file."""

import os
import shlex
from pathlib import Path

import torch


class CreatesAFile:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def malicious_copy(checkpoint: Path, copy: Path, marker: Path) -> Path:
    """The checkpoint saved again as copy, with a payload that creates marker if unpickled."""
    state = torch.load(checkpoint, weights_only=True)
    state["extra_state"]["payload"] = CreatesAFile(marker)
    torch.save(state, copy)
    return copy
