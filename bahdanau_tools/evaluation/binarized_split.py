"""The binarized test set, read back: which sentences hold <unk>, how long each source is, and
whether the data is in BPE units."""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

import torch
from fairseq.data import Dictionary, data_utils, indexed_dataset

from bahdanau_plugin.unknown_words import source_text_path, text_mismatch

from ..bpe_units import BPE_CONTINUATION
from ..data.bpe import segment_lines
from ..errors import EvaluationError
from .text import read_lines

# a piece the next one continues, inside a line: no word of a text ends so
BPE_PIECE = re.compile(rf"\S{BPE_CONTINUATION} \S")


@dataclass(frozen=True)
class Side:
    dictionary: Dictionary
    sentences: List[torch.Tensor]  # token ids as binarized, end of sentence included


@dataclass(frozen=True)
class BinarizedSplit:
    source: Side
    target: Side
    # the source text the binaries were made from, one sentence a line, where it is beside them
    # (bahdanau-prepare-data writes it): its unknown BPE pieces keep the @@ the binaries lose
    source_text: Optional[List[str]] = None
    # whether fairseq finds the split as text (fairseq-preprocess --dataset-impl raw), not binaries
    as_text: bool = False

    def __len__(self) -> int:
        return len(self.source.sentences)


def sentences_file(prefix: Path) -> Optional[Path]:
    """The file that holds a side's sentences (prefix: SPLIT.SRC-TGT.LANG), in the format fairseq
    finds there as fairseq-generate reads it: its binaries (PREFIX.bin), or the text itself where
    fairseq-preprocess --dataset-impl raw copied it; None where neither is there."""
    found = indexed_dataset.infer_dataset_impl(str(prefix))
    if found is None:
        return None
    return prefix if found == "raw" else Path(f"{prefix}.bin")


def load_side(data_bin: Path, subset: str, languages: str, language: str) -> Side:
    dictionary_path = data_bin / f"dict.{language}.txt"
    prefix = data_bin / f"{subset}.{languages}.{language}"
    sentences = sentences_file(prefix)
    if not dictionary_path.is_file() or sentences is None:
        raise EvaluationError(
            f"{prefix}.bin or {dictionary_path} not found: give the fairseq data-bin folder that "
            f"holds the '{subset}' split (--data, --subset) and its languages (--source-lang, "
            "--target-lang)"
        )
    if sentences.stat().st_size == 0:
        # every binarized sentence holds at least its end of sentence, and fairseq cannot map an
        # empty file: said here, before a model is loaded, rather than as its traceback
        raise EvaluationError(
            f"the '{subset}' split of {data_bin} has no sentence ({sentences} is empty): give a "
            "split with sentences (--subset, --data)"
        )
    dictionary = Dictionary.load(str(dictionary_path))
    dataset = data_utils.load_indexed_dataset(str(prefix), dictionary)
    return Side(dictionary, [dataset[index] for index in range(len(dataset))])


def load_source_text(path: Path, source: Side) -> Optional[List[str]]:
    """The text at path, None where there is none. A text that does not hold the binaries' tokens
    (of another split, or from before the data was binarized again) is an error: its lengths would
    be another text's."""
    if not path.is_file():
        return None
    lines = read_lines(path, "--data's source text")
    mismatch = text_mismatch(lines, source.sentences, source.dictionary, path)
    if mismatch is not None:  # its words too: Figure 3 translates the text's line where it is there
        raise EvaluationError(
            f"{mismatch}: it must be the text the binaries beside it were made from: write it "
            "again (bahdanau-prepare-data does), or remove it"
        )
    return lines


def binaries_languages(data_bin: Path, subset: str, source_lang: str, target_lang: str) -> str:
    """The languages the split's binaries are named with: SRC-TGT, or TGT-SRC where only the data
    binarized for the other direction is there, which fairseq's translation task reads for either
    (load_langpair_dataset), as fairseq-generate translates it: evaluating fr->en on the data-bin
    of en->fr. Neither there: SRC-TGT, which load_side says is missing."""
    for languages in (f"{source_lang}-{target_lang}", f"{target_lang}-{source_lang}"):
        if sentences_file(data_bin / f"{subset}.{languages}.{source_lang}") is not None:
            return languages
    return f"{source_lang}-{target_lang}"


def load_split(data_bin: Path, subset: str, source_lang: str, target_lang: str) -> BinarizedSplit:
    languages = binaries_languages(data_bin, subset, source_lang, target_lang)
    source = load_side(data_bin, subset, languages, source_lang)
    prefix = data_bin / f"{subset}.{languages}.{source_lang}"
    return BinarizedSplit(
        source,
        load_side(data_bin, subset, languages, target_lang),
        load_source_text(source_text_path(data_bin, subset, source_lang, target_lang), source),
        as_text=sentences_file(prefix) == prefix,
    )


def check_target_text(
    lines: Sequence[str], target: Side, codes: Optional[Path], named: str
) -> None:
    """Each line of the text (named: its option and file), segmented with the data's BPE codes
    where it has some, binarizes as the target sentence of the split it stands beside: the
    references that tokenized BLEU scores each translation against, and whose <unk> choose the
    No UNK sentences. Those of another split of as many sentences, in another order, of the source
    side or untokenized would score every translation against another sentence, without a word."""
    segmented = segment_lines(list(lines), str(codes)) if codes is not None else lines
    for number, (line, sentence) in enumerate(zip(segmented, target.sentences)):
        if not torch.equal(target.dictionary.encode_line(line, add_if_not_exist=False), sentence):
            raise EvaluationError(
                f"line {number + 1} of {named} is not the reference of sentence {number} of the "
                "binarized split: give the references the split's target side was binarized "
                "from, Moses-tokenized, before BPE and in its order (bahdanau-prepare-data "
                "writes them to OUT/tok/)"
            )


def longest_sentence(split: BinarizedSplit) -> int:
    """Tokens of the split's longest sentence, source or target, end of sentence included: the
    size fairseq filters sentences by."""
    sides = (split.source, split.target)
    return max(len(sentence) for side in sides for sentence in side.sentences)


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


def source_tokens(split: BinarizedSplit) -> List[str]:
    """Each source sentence's tokens, as a line: the text the binaries were made from where it is
    there; else the binaries' own, where a BPE piece outside the dictionary is <unk>, without the
    @@ that joined it to the next piece, and so counts as a word of its own."""
    if split.source_text is not None:
        return split.source_text
    return [split.source.dictionary.string(sentence) for sentence in split.source.sentences]


def source_lengths_in_words(split: BinarizedSplit) -> List[int]:
    """Words of each source sentence: BPE pieces joined back into the tokenized words, with
    fairseq's own subword_nmt post-processing; with a word vocabulary every token is a word."""
    return [
        len(data_utils.post_process(line, "subword_nmt").split()) for line in source_tokens(split)
    ]
