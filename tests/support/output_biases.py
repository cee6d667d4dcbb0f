"""A trained checkpoint edited so that its search's outcome is known in advance: some target
symbols' output biases raised, whatever the source."""

from pathlib import Path

import torch

from .shared import made_once


def checkpoint_with_output_biases_raised(checkpoints, tmp_path_factory, name, raises) -> Path:
    """rnnsearch_50's checkpoint with the output bias of each target symbol in raises (its index:
    by how much) raised, made once as name."""

    def raise_the_biases(folder):
        state = torch.load(checkpoints["rnnsearch_50"], weights_only=False)
        for symbol, by in raises.items():
            state["model"]["decoder.output_projection.bias"][symbol] += by
        torch.save(state, folder / "checkpoint.pt")

    return made_once(tmp_path_factory, name, raise_the_biases) / "checkpoint.pt"
