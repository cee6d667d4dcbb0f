"""A trained model (or an ensemble) behind fairseq's hub interface, as the tools load it."""

import os
from pathlib import Path
from typing import List

from bahdanau_plugin.models.recurrent_translation import RecurrentTranslationModel


def ensemble_members(checkpoint: Path) -> List[Path]:
    """The checkpoints of an ensemble written as fairseq's --path takes it, A.pt:B.pt (or of one
    model)."""
    return [Path(member) for member in str(checkpoint).split(os.pathsep)]


def load_translator(checkpoint: Path, data: Path, **generation_options):
    """The plugin's hub interface (fairseq's, from the models' from_pretrained) for a trained
    model, or an ensemble written A.pt:B.pt, with tokenizer/bpe options if any."""
    # absolute: from_pretrained joins each member to the folder
    members = [str(member.resolve()) for member in ensemble_members(checkpoint)]
    return RecurrentTranslationModel.from_pretrained(
        str(Path(members[0]).parent),
        checkpoint_file=os.pathsep.join(members),
        data_name_or_path=str(data),
        **generation_options,
    )
