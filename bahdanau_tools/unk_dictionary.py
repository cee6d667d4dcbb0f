"""bahdanau-unk-dictionary: a --replace-unk dictionary from a trained model's attention on its
training data.

  bahdanau-unk-dictionary --checkpoint ckpt/checkpoint_best.pt --data OUT/data-bin \\
      --source OUT/tok/train.en --target OUT/tok/train.fr --output OUT/unk-dictionary.txt

The model reads each training pair (teacher forcing). At every target position whose word the
target vocabulary lacks (binarized as <unk>: where the model itself can only write <unk>), the
source word it attends to most, by the same hard alignment --replace-unk uses, is counted as
translated by that target word. Each source word's most frequent translation, seen at least
--min-count times, becomes a line "SOURCE TARGET"; --replace-unk copies the other source words.
The first line records the model's languages ("#languages en->fr"), for --replace-unk to refuse
the dictionary with a model of the other direction.
--source and --target given the other way round are refused before any pair is aligned
(check_languages).
"""

import argparse
from collections import Counter, defaultdict
from pathlib import Path
from itertools import islice
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import torch
from fairseq import checkpoint_utils, utils
from fairseq.data import LanguagePairDataset

from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_plugin.models.pretrained_paths import data_bin_folder
from bahdanau_plugin.options import path_argument, positive_int
from bahdanau_plugin.output_folder import (
    check_no_input_replaced,
    output_file,
    write_failures_explained,
    written_whole,
)
from bahdanau_plugin.unknown_words import languages_line

from .data.parallel import chunked
from .data.progress import progress_bar
from .errors import EvaluationError
from .evaluation.text import text_lines
from .user_dir import add_user_dir, import_user_dir

Translations = Dict[str, Counter]  # source word -> target word -> how often
# check_languages: the pairs it reads (a corpus's first 10,000 hold some 200,000 words, plenty to
# tell two languages apart; all of WMT'14, 12 million, would take minutes), and the share of a
# side's telling words that must be the other dictionary's for the side to be the other language
SAMPLE_PAIRS = 10_000
MAJORITY = 0.75
INPUTS = ("--checkpoint", "--source", "--target")  # the files the command reads
# Training pairs read, binarized and aligned at a time, so that memory stays flat: held whole and
# binarized, 2 million pairs took 4 GB and 9 minutes before the first was aligned, and the
# paper's 12 million would take some 22 GB. Each chunk is sorted by length into its batches.
CHUNK_PAIRS = 20_000


def load_model(checkpoint: Path, data: Path):
    (model,), _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": data_bin_folder(data)}
    )
    return model.eval(), task


def count_pairs(source: Path, target: Path) -> int:
    """The number of training pairs, read line by line before any is aligned: both files are
    there, every line decodes, and both sides have as many lines."""
    options = (("--source", source), ("--target", target))
    for option, path in options:
        if not path.is_file():
            raise EvaluationError(f"{option} {path} not found: give the training text's file")
    sources, targets = (sum(1 for _ in text_lines(path, option)) for option, path in options)
    if sources != targets:
        raise EvaluationError(
            f"{source} has {sources} lines but {target} has {targets}: give the two sides of the "
            "training text the model was trained on"
        )
    return sources


def read_pairs(source: Path, target: Path) -> Iterator[Tuple[str, str]]:
    """The training pairs, one at a time, read as the data preparation reads text (UTF-8,
    byte-order mark dropped, NFC as the dictionaries' words are)."""
    return zip(text_lines(source, "--source"), text_lines(target, "--target"))


def check_segmentation(dictionary, target_lines: Iterable[str], target: Path) -> None:
    """The target text segmented as the model's words are: with subword-nmt's pieces ("word@@")
    where its dictionary has them, without where it has none. Otherwise most words look unknown
    to the model, and the dictionary pairs punctuation with whole words."""
    pieces = sum(symbol.endswith("@@") for symbol in dictionary.symbols)
    in_text = any("@@ " in line for line in target_lines)
    if pieces and not in_text:
        raise EvaluationError(
            f"--target {target} holds no subword piece (word@@) but the model's dictionary has "
            f"{pieces:,}: give the training text after BPE, as it was binarized (OUT/bpe/train.*)"
        )
    if in_text and not pieces:
        raise EvaluationError(
            f"--target {target} holds subword pieces (word@@) but the model's dictionary has "
            "none: give the training text as it was binarized, before BPE (OUT/tok/train.*)"
        )


def share_of_the_other_side(own, other, lines: Sequence[str]) -> Optional[float]:
    """Of the words of lines that one of the two dictionaries holds and the other lacks, the share
    that other holds; None where no word tells them apart (one dictionary for both languages, as
    BPE data has). Words both hold (numbers, names, punctuation) and words neither holds say
    nothing of a text's language, and are not counted."""
    own_only = other_only = 0
    for line in lines:
        for word in line.split():
            in_own, in_other = word in own.indices, word in other.indices
            own_only += in_own and not in_other
            other_only += in_other and not in_own
    told_apart = own_only + other_only
    return other_only / told_apart if told_apart else None


def check_languages(task, pairs: Iterable[Tuple[str, str]], source: Path, target: Path) -> None:
    """--source holds the model's source language and --target its target language, told by the
    model's two dictionaries: given the other way round, the command aligned target words with
    each other and wrote a dictionary from the wrong language (or none), without a word. A side is
    in the other language only where a clear majority of its words that only one dictionary holds
    are the other dictionary's: in a corpus of separate dictionaries it is nearly all of them one
    way or the other, however many words the two languages share."""
    source_lang, target_lang = task.cfg.source_lang, task.cfg.target_lang
    source_dictionary, target_dictionary = task.source_dictionary, task.target_dictionary
    sample = list(islice(pairs, SAMPLE_PAIRS))
    source_share = share_of_the_other_side(
        source_dictionary, target_dictionary, [text for text, _ in sample]
    )
    target_share = share_of_the_other_side(
        target_dictionary, source_dictionary, [text for _, text in sample]
    )
    source_is_other, target_is_other = (
        share is not None and share > MAJORITY for share in (source_share, target_share)
    )
    if source_is_other and target_is_other:
        raise EvaluationError(
            f"--source {source} and --target {target} look swapped: of the words that only one of "
            f"the model's dictionaries holds, {source_share:.0%} of --source's are in its target "
            f"dictionary ({target_lang}) and {target_share:.0%} of --target's in its source "
            f"dictionary ({source_lang}): give the {source_lang} side of the training text as "
            f"--source and the {target_lang} side as --target"
        )
    if source_is_other:
        raise in_the_other_language("--source", source, source_share, target_lang, source_lang)
    if target_is_other:
        raise in_the_other_language("--target", target, target_share, source_lang, target_lang)


def in_the_other_language(
    option: str, path: Path, share: float, other_language: str, language: str
) -> EvaluationError:
    return EvaluationError(
        f"{option} {path} looks like {other_language} text, the model's other side: {share:.0%} "
        f"of its words that only one of the model's dictionaries holds are in the "
        f"{other_language} dictionary: give the {language} side of the training text as {option}"
    )


def pairs_with_unknown_targets(
    task, pairs: Sequence[Tuple[str, str]]
) -> Tuple[LanguagePairDataset, List]:
    """The pairs whose target has a word outside the target dictionary, the only ones that count:
    binarized, and as text (item N of one is item N of the other)."""
    source_dictionary, target_dictionary = task.source_dictionary, task.target_dictionary
    encoded = [
        (
            source_dictionary.encode_line(source, add_if_not_exist=False).long(),
            target_dictionary.encode_line(target, add_if_not_exist=False).long(),
        )
        for source, target in pairs
    ]
    kept = [
        index
        for index, (_, target) in enumerate(encoded)
        if target.eq(target_dictionary.unk()).any()
    ]
    sources, targets = [encoded[index][0] for index in kept], [encoded[index][1] for index in kept]
    dataset = LanguagePairDataset(
        sources,
        [len(s) for s in sources],
        source_dictionary,
        targets,
        [len(t) for t in targets],
        target_dictionary,
    )
    return dataset, [pairs[index] for index in kept]


@torch.no_grad()
def count_translations(
    model, task, pairs: Iterable[Tuple[str, str]], total: int, batch_size: int
) -> Translations:
    """Align the pairs a chunk at a time (CHUNK_PAIRS); count, for each source word, the target
    words outside the dictionary it is aligned with. The progress counts every pair read."""
    translations: Translations = defaultdict(Counter)
    with progress_bar("aligning", total, " pairs") as progress:
        for chunk in chunked(pairs, CHUNK_PAIRS):
            dataset, kept = pairs_with_unknown_targets(task, chunk)
            progress.update(len(chunk) - len(kept))  # no unknown target word: nothing to align
            for aligned in unknown_word_alignments(model, dataset, kept, batch_size):
                for source_word, target_word in aligned:
                    translations[source_word][target_word] += 1
                progress.update(1)
    return translations


def unknown_word_alignments(
    model, dataset: LanguagePairDataset, pairs: Sequence[Tuple[str, str]], batch_size: int
) -> Iterator[List[Tuple[str, str]]]:
    """For each pair of dataset, in batches of similar lengths: (source word, target word) for
    every target word outside the dictionary, with the source word the model attends to most
    there."""
    dictionary = dataset.tgt_dict
    for indices in chunked(dataset.ordered_indices().tolist(), batch_size):
        batch = dataset.collater([dataset[index] for index in indices])
        # the attention alone: the output layer's scores of every target word are not needed
        _, extra = model.extract_features(**batch["net_input"])
        if extra["attn"][0] is None:
            raise EvaluationError(
                "the model has no attention to align with (rnnencdec): give an rnnsearch checkpoint"
            )
        for row, index in enumerate(batch["id"].tolist()):
            source_words, target_words = (side.split() for side in pairs[index])
            target = batch["target"][row]
            alignment = utils.extract_hard_alignment(
                extra["attn"][0][row],
                batch["net_input"]["src_tokens"][row],
                target,
                dictionary.pad(),
                dictionary.eos(),
            )
            yield [
                (source_words[source_position], target_words[target_position])
                for source_position, target_position in alignment
                if target[target_position] == dictionary.unk()
            ]


def most_frequent(targets: Counter) -> Tuple[str, int]:
    """The most frequent target word and its count; of words seen as often, the first by code
    points, as fairseq's Dictionary orders words of equal count. Counter.most_common would take
    the first counted, and fairseq's dataset shuffles the pairs before it sorts them by length:
    from run to run, 7 to 9 of 444 lines of one model's dictionary differed."""
    return min(targets.items(), key=lambda item: (-item[1], item[0]))


def dictionary_lines(translations: Translations, min_count: int) -> List[str]:
    lines = []
    for source in sorted(translations):
        target, count = most_frequent(translations[source])
        if count >= min_count:
            lines.append(f"{source} {target}")
    return lines


def dictionary_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bahdanau-unk-dictionary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--checkpoint", type=path_argument, required=True, help="an rnnsearch checkpoint"
    )
    add_user_dir(parser)
    parser.add_argument(
        "--data", type=path_argument, required=True, help="the data-bin folder it was trained with"
    )
    parser.add_argument(
        "--source",
        type=path_argument,
        required=True,
        help="its training text, source side, tokens as binarized (OUT/tok/train.SRC, or "
        "OUT/bpe/train.SRC with BPE)",
    )
    parser.add_argument(
        "--target", type=path_argument, required=True, help="the target side, likewise"
    )
    parser.add_argument(
        "--output", type=path_argument, required=True, help="the dictionary file to write"
    )
    parser.add_argument(
        "--min-count",
        type=positive_int,
        default=2,
        help="keep a translation seen at least this many times (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=64, help="pairs per batch (default: %(default)s)"
    )
    return parser


def files_read(arguments: argparse.Namespace) -> Dict[str, List[Path]]:
    """The files the command reads, by what each is: those of INPUTS, and the --data folder's
    dictionaries, which the model is loaded with (a dict.fr.txt written over would leave a data-bin
    that no tool reads, and the model's vocabulary lost)."""
    read = {f"the {option} file": [getattr(arguments, option[2:])] for option in INPUTS}
    read["a dictionary of the --data folder"] = sorted(arguments.data.glob("dict.*.txt"))
    return read


def main(argv: Optional[Sequence[str]] = None) -> List[str]:
    """Write the dictionary; return its lines."""
    arguments = dictionary_parser().parse_args(argv)
    import_user_dir(arguments.user_dir)  # before the output's folder is made
    with output_file(arguments.output, "--output", "unk-dictionary.txt"):
        check_no_input_replaced(arguments.output, files_read(arguments), "dictionary")
        source, target = arguments.source, arguments.target
        total = count_pairs(
            source, target
        )  # every file read through, checked, before the model loads
        model, task = load_model(arguments.checkpoint, arguments.data)
        check_segmentation(task.target_dictionary, text_lines(target, "--target"), target)
        check_languages(task, read_pairs(source, target), source, target)
        translations = count_translations(
            model, task, read_pairs(source, target), total, arguments.batch_size
        )
        lines = dictionary_lines(translations, arguments.min_count)
        # its direction first, so that --replace-unk refuses it for a model of the other direction
        languages = languages_line(task.cfg.source_lang, task.cfg.target_lang)
        with write_failures_explained(arguments.output.parent, "--output"):
            with written_whole(
                str(arguments.output)
            ) as file:  # a dictionary it replaces stays whole
                file.write("".join(line + "\n" for line in [languages, *lines]).encode("utf-8"))
    print(f"{arguments.output}: {len(lines)} source words with a translation")
    return lines


def cli_main() -> None:
    print_errors_as_one_line()  # bad input ends the command with one line, not a traceback
    main()
