"""A trained model (or an ensemble) behind fairseq's hub interface, as the tools load it."""

import os
from pathlib import Path
from typing import List, Tuple

import torch
from fairseq.data import data_utils

from bahdanau_plugin.errors import CheckpointError
from bahdanau_plugin.models.recurrent_translation import RecurrentTranslationModel


def ensemble_members(checkpoint: Path) -> List[Path]:
    """The checkpoints of an ensemble written as fairseq's --path takes it, A.pt:B.pt, or of one
    model (a file that is there is one, though its folders' names hold the separator)."""
    if Path(checkpoint).is_file():
        return [Path(checkpoint)]
    return [Path(member) for member in str(checkpoint).split(os.pathsep)]


def load_translator(checkpoint: Path, data: Path, **generation_options):
    """The plugin's hub interface (fairseq's, from the models' from_pretrained) for a trained
    model, or an ensemble written A.pt:B.pt, with tokenizer/bpe options if any."""
    # from_pretrained joins each member to the folder: relative to it, as the folder's name may
    # hold the separator that fairseq splits the members at
    members = [member.resolve() for member in ensemble_members(checkpoint)]
    folder = members[0].parent
    return RecurrentTranslationModel.from_pretrained(
        str(folder),
        checkpoint_file=os.pathsep.join(os.path.relpath(member, folder) for member in members),
        data_name_or_path=str(data),
        **generation_options,
    )


def trained_direction(checkpoint: Path, data: Path) -> Tuple[str, str]:
    """The languages the model translates: those its checkpoint records (fairseq-train's
    --source-lang and --target-lang), else those of the data-bin's binaries, which fairseq-train
    took for its own. Only the configuration is read: memory-mapped, the weights stay on disk."""
    state = torch.load(checkpoint, map_location="cpu", mmap=True, weights_only=True)
    task = state["cfg"]["task"] if state.get("cfg") is not None else vars(state["args"])
    recorded = task.get("source_lang"), task.get("target_lang")
    return tuple(data_utils.infer_language_pair(str(data))) if None in recorded else recorded


def check_direction(checkpoint: Path, data: Path, task_cfg) -> None:
    """Each model translates the direction the sentences are given in (the loaded task's
    languages: --source-lang and --target-lang, else the data-bin's). With one dictionary for both
    languages (joint BPE) nothing else refuses the other direction: the model would read the
    sentences as its own source language, and translate that misreading without a word."""
    given = task_cfg.source_lang, task_cfg.target_lang
    for member in ensemble_members(checkpoint):
        trained = trained_direction(member, data)
        if trained != given:
            raise CheckpointError(
                f"{member} translates {'->'.join(trained)}, and the sentences are given as "
                f"{'->'.join(given)} (--source-lang {given[0]} --target-lang {given[1]}): give "
                f"--source-lang {trained[0]} --target-lang {trained[1]}, or a model trained for "
                f"{'->'.join(given)}"
            )
