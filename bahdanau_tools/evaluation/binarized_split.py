"""The binarized test set, read back: which sentences hold <unk>, and how long each source is."""

from dataclasses import dataclass
from pathlib import Path
from typing import List

import torch
from fairseq.data import Dictionary, data_utils

from ..errors import EvaluationError


@dataclass(frozen=True)
class Side:
    dictionary: Dictionary
    sentences: List[torch.Tensor]  # token ids as binarized, end of sentence included


@dataclass(frozen=True)
class BinarizedSplit:
    source: Side
    target: Side

    def __len__(self) -> int:
        return len(self.source.sentences)


def load_side(data_bin: Path, subset: str, languages: str, language: str) -> Side:
    dictionary_path = data_bin / f"dict.{language}.txt"
    prefix = data_bin / f"{subset}.{languages}.{language}"
    if not dictionary_path.is_file() or not Path(f"{prefix}.bin").is_file():
        raise EvaluationError(
            f"{prefix}.bin or {dictionary_path} not found: give the fairseq data-bin folder that "
            f"holds the '{subset}' split (--data, --subset) and its languages (--source-lang, "
            "--target-lang)"
        )
    if Path(f"{prefix}.bin").stat().st_size == 0:
        # every binarized sentence holds at least its end of sentence, and fairseq cannot map an
        # empty file: said here, before a model is loaded, rather than as its traceback
        raise EvaluationError(
            f"the '{subset}' split of {data_bin} has no sentence ({prefix}.bin is empty): give a "
            "split with sentences (--subset, --data)"
        )
    dictionary = Dictionary.load(str(dictionary_path))
    dataset = data_utils.load_indexed_dataset(str(prefix), dictionary)
    return Side(dictionary, [dataset[index] for index in range(len(dataset))])


def load_split(data_bin: Path, subset: str, source_lang: str, target_lang: str) -> BinarizedSplit:
    languages = f"{source_lang}-{target_lang}"
    return BinarizedSplit(
        load_side(data_bin, subset, languages, source_lang),
        load_side(data_bin, subset, languages, target_lang),
    )


def has_unknown_word(side: Side, index: int) -> bool:
    return bool((side.sentences[index] == side.dictionary.unk()).any())


def sentences_without_unknown_words(split: BinarizedSplit) -> List[int]:
    """The paper's "No UNK" sentences: no word of the source or of the reference is outside the
    model's vocabulary (the shortlist), i.e. none was binarized as <unk>."""
    return [
        index
        for index in range(len(split))
        if not has_unknown_word(split.source, index) and not has_unknown_word(split.target, index)
    ]


def source_lengths_in_words(split: BinarizedSplit) -> List[int]:
    """Words of each source sentence: BPE pieces joined back into the tokenized words, with
    fairseq's own subword_nmt post-processing; with a word vocabulary every token is a word."""
    side = split.source
    return [
        len(side.dictionary.string(sentence, "subword_nmt").split()) for sentence in side.sentences
    ]
