"""A trained model (or an ensemble) behind fairseq's hub interface, as the tools load it."""

import os
from pathlib import Path
from typing import List

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
