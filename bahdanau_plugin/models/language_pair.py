"""The language pair a fairseq tool's command gave, against the one fairseq's translation task took.

Where ``--source-lang`` or ``--target-lang`` is left out, fairseq's translation task takes both
from the name of the first binary file that listing the data-bin gives (``train.en-fr.en.bin``:
en to fr) and ignores the one given: ``--source-lang fr`` alone on an en-fr data-bin trains a
model from English into French, without a word. Where the data-bin holds more than one pair, which
one it takes depends on the order of that listing. The task records what the command gave
(``fairseq_patches.remember_the_languages_given``) and the models check it when they are built.
"""

import os
from typing import List, Optional, Tuple

from fairseq import utils

from ..errors import ConfigurationError

# set on a task by fairseq_patches.remember_the_languages_given: (source, target), None where the
# command gave none
LANGUAGES_GIVEN = "bahdanau_languages_given"
OPTIONS = ("--source-lang", "--target-lang")


def pairs_in(data: str) -> List[str]:
    """The language pairs of a data-bin's binaries, as fairseq's infer_language_pair reads them
    from the file names (``SPLIT.SRC-TGT.LANG.bin``)."""
    names = os.listdir(data) if os.path.isdir(data) else []
    parts = [name.split(".") for name in names]
    return sorted({part[1] for part in parts if len(part) >= 3 and len(part[1].split("-")) == 2})


def check_language_pair(task) -> None:
    given: Optional[Tuple[Optional[str], Optional[str]]] = getattr(task, LANGUAGES_GIVEN, None)
    if given is None or None not in given:  # not set up by a fairseq tool, or both were given
        return
    data = utils.split_paths(task.cfg.data)[0]  # where fairseq infers the pair
    taken = (task.cfg.source_lang, task.cfg.target_lang)
    pairs = pairs_in(data)
    both = f"both {OPTIONS[0]} and {OPTIONS[1]}"
    if len(pairs) > 1:
        raise ConfigurationError(
            f"the data-bin {data} holds the language pairs {', '.join(pairs)}, and fairseq takes "
            f"the first its listing of the folder gives where {OPTIONS[0]} or {OPTIONS[1]} is left "
            f"out (here {'-'.join(taken)}): give {both}"
        )
    for index, language in enumerate(given):
        if language is not None and language != taken[index]:
            option, other = OPTIONS[index], OPTIONS[1 - index]
            rest = [pair_language for pair_language in taken if pair_language != language]
            advice = (
                f"{option} {language} {other} {rest[0]}"
                if language in taken
                else f"{both}, languages of the data-bin ({' and '.join(taken)})"
            )
            raise ConfigurationError(
                f"{option} {language} was given without {other}: fairseq then takes the pair from "
                f"the data-bin's file names ({'-'.join(taken)}, in {data}) and ignores {option}, "
                f"so the model would translate {taken[0]} into {taken[1]}: give {advice}"
            )
